"""A call as text, whole: what two entries must share to be the same call of the program."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from ..opnames import is_exchange


def known_site(site: object) -> bool:
    """Whether ``site`` names a call site (a dump without stacks leaves it empty: blank,
    "None", or a missing value)."""
    return isinstance(site, str) and site not in ("", "nan", "None")


def call_text(rows: pd.DataFrame, columns: tuple[str, ...] = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)) -> pd.DataFrame:
    """Each row's whole call as text: op, input sizes (blank for an exchange: its ranks send
    uneven amounts) and dtypes, or the ``columns`` given."""
    text = rows[list(columns)].astype(str)
    text.loc[text[s.OP].map(is_exchange), s.INPUT_SIZES] = ""
    return text


Call = tuple[str, int, int]
"""A collective a rank issued: (group key, seq, rank)."""


def program_calls(cells: pd.DataFrame, calls: set[Call]) -> dict[Call, bool]:
    """For each collective: whether it is one the program issues, not shown to be the rank's
    own (its group's cells of earlier seqs include the same op, sizes and dtypes, or hold
    none, or the rank's cell is missing). One pass over the cells per group."""
    whole = [s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]
    found: dict[Call, bool] = {}
    for key in {k for k, _, _ in calls}:
        group = cells.loc[(cells[s.PG_KEY] == key).to_numpy(), [s.SEQ, s.RANK, *whole]]
        seqs, ranks = group[s.SEQ].to_numpy(), group[s.RANK].to_numpy()
        texts = [group[col].astype(str).to_numpy() for col in whole]
        for k, seq, rank in calls:
            if k != key:
                continue
            mine = np.flatnonzero((seqs == seq) & (ranks == rank))
            earlier = seqs < seq
            if not len(mine) or not earlier.any():
                found[(k, seq, rank)] = True
                continue
            same = earlier.copy()
            for col in texts:
                same &= col == col[mine[0]]
            found[(k, seq, rank)] = bool(same.any())
    return found
