"""Coalesced members are found exactly: the rows whose (group, seq, rank) repeat."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import schema as s
from analysis.model.cells import _shared_cells
from analysis.tables.rowindex import RankRows


@st.composite
def cell_frames(draw) -> pd.DataFrame:
    rows = draw(
        st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["a", "b", "c"]), st.integers(0, 5)), max_size=60)
    )
    if draw(st.booleans()):
        rows.sort(key=lambda r: r[0])  # one block per rank, as loaded files give
    return pd.DataFrame(
        {
            s.RANK: np.array([r[0] for r in rows], dtype=np.int32),
            s.PG_KEY: pd.Categorical([r[1] for r in rows]),
            s.SEQ: np.array([r[2] for r in rows], dtype=np.int64),
        }
    )


@settings(max_examples=300, deadline=None)
@given(cell_frames())
def test_shared_cells_match_pandas(cells: pd.DataFrame) -> None:
    expected = cells.duplicated([s.PG_KEY, s.SEQ, s.RANK], keep=False).to_numpy()
    shared, collective = _shared_cells(cells)
    assert shared.tolist() == expected.tolist()
    if collective is not None:  # one id per (group, seq): the same partition as pandas'
        pandas_ids = cells.groupby([s.PG_KEY, s.SEQ], observed=True, sort=False).ngroup().to_numpy()
        assert len(set(zip(collective.tolist(), pandas_ids.tolist()))) == len(set(pandas_ids.tolist()))
        assert len(set(collective.tolist())) == len(set(pandas_ids.tolist()))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=50), st.integers(0, 5))
def test_rank_rows_are_the_rows_of_that_rank(ranks: list[int], rank: int) -> None:
    column = np.array(ranks, dtype=np.int64)
    assert RankRows(column).of(rank).tolist() == np.flatnonzero(column == rank).tolist()
