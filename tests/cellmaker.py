"""Small hand-written cell tables (one row per (group, seq, rank)) for rule-level tests."""

from __future__ import annotations

import pandas as pd

from analysis import schema as s
from analysis.model.cells import with_collective_ids

TEXT = (s.PG_KEY, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE, s.STATE)


def make_cells(rows: list[dict]) -> pd.DataFrame:
    """``rows`` give pg_key, rank, seq and any of op, sizes, dtypes, call_site, done, record_id."""
    full = []
    for i, r in enumerate(rows):
        full.append(
            {
                s.PG_KEY: r["pg_key"],
                s.RANK: r["rank"],
                s.SEQ: r["seq"],
                "done": r.get("done", True),
                "row": i,
                s.OP: r.get("op", "all_reduce"),
                s.INPUT_SIZES: r.get("sizes", "[[4]]"),
                s.INPUT_DTYPES: r.get("dtypes", "Float"),
                s.CALL_SITE: r.get("call_site", "train.py:1 in step"),
                s.STATE: r.get("state", "completed"),
                s.STACK_ID: None,
            }
        )
    cells = pd.DataFrame(full)
    for col in TEXT:
        cells[col] = cells[col].astype("category")
    return with_collective_ids(cells)


def make_entries(rows: list[dict]) -> pd.DataFrame:
    """An entries table whose row i is cell i, with the record ids the rows give."""
    return pd.DataFrame({s.RECORD_ID: [r.get("record_id", i) for i, r in enumerate(rows)]})
