"""The fast row helpers agree with pandas on any mix of categorical and nullable int columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.tables import rowkeys

_ints = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([-(2**63), 2**63 - 1, 2**40]))


@st.composite
def frames(draw) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    names = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    ints = draw(st.lists(_ints, min_size=n, max_size=n))
    small = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "cat": pd.Categorical(names),
            "arrow_int": pd.array(ints, dtype=pd.ArrowDtype(pa.int64())),
            "int": np.array(small, dtype=np.int64),
        }
    )


COLUMN_SETS = [["cat"], ["arrow_int"], ["cat", "int"], ["cat", "arrow_int", "int"]]


@settings(max_examples=200, deadline=None)
@given(frames(), st.sampled_from(COLUMN_SETS), st.sampled_from(["first", False]))
def test_duplicated_matches_pandas(frame: pd.DataFrame, columns: list[str], keep) -> None:
    expected = frame.duplicated(columns, keep=keep).to_numpy()
    assert rowkeys.duplicated(frame, columns, keep=keep).tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(frames(), st.sampled_from(COLUMN_SETS))
def test_distinct_and_group_ids_match_pandas(frame: pd.DataFrame, columns: list[str]) -> None:
    assert rowkeys.distinct(frame, columns).index.tolist() == frame.drop_duplicates(columns).index.tolist()
    ids = rowkeys.group_ids(frame, columns)
    expected = frame.groupby(columns, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    assert ids.tolist() == expected.tolist()
    unordered = rowkeys.group_ids(frame, columns, first_seen=False)
    assert sorted(set(unordered.tolist())) == list(range(len(set(expected.tolist()))))
    pairs = set(zip(unordered.tolist(), expected.tolist()))  # the same partition, other names
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs})


def test_equals_and_flag() -> None:
    cat = pd.Series(pd.Categorical(["x", "y", None, "x"]))
    assert rowkeys.equals(cat, "x").tolist() == [True, False, False, True]
    assert rowkeys.equals(cat, "absent").tolist() == [False] * 4
    flags = pd.Series(pd.array([True, None, False], dtype="boolean"))
    assert rowkeys.flag(flags).tolist() == [True, False, False]


def test_member_ids_number_the_same_partition_over_a_wide_span(monkeypatch) -> None:
    """Few members over a key span wider than the rows, in several slices (and with too many
    distinct keys, the hashed ids): the same partition as group_ids, as int32."""
    rng = np.random.default_rng(7)
    n = 5000
    frame = pd.DataFrame(
        {
            "key": pd.Categorical(rng.choice([f"g{i}" for i in range(300)], n)),
            "rank": rng.choice(np.arange(0, 40_000, 97, dtype=np.int32), n),
        }
    )
    monkeypatch.setattr(rowkeys, "SLICE_ROWS", 1000)
    expected = rowkeys.group_ids(frame, ["key", "rank"])
    for few in (1 << 22, 10):
        monkeypatch.setattr(rowkeys, "_FEW_DISTINCT", few)
        ids = rowkeys.member_ids(frame, ["key", "rank"])
        assert ids.dtype == np.int32
        pairs = set(zip(ids.tolist(), expected.tolist()))
        assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs}) == int(expected.max()) + 1
