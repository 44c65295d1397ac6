"""Small tables and texts the pages show, built from the report. No Streamlit here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis.views.tables import compact_ranks, file_errors_table, frames_text, progress_table, wait_chain

__all__ = [
    "compact_ranks",
    "diff_text",
    "entry_table",
    "file_errors_table",
    "frames_text",
    "progress_table",
    "states_at",
    "wait_chain",
]


def entry_table(entry: dict[str, Any]) -> pd.DataFrame:
    """All fields of one entry as (field, value) text rows."""
    return pd.DataFrame({"field": list(entry), "value": ["" if v is None else str(v) for v in entry.values()]})


def diff_text(diff: Sequence[tuple[str, str]]) -> str:
    """``views.stack_diff`` output as unified-diff style text (+ this rank, - the majority)."""
    mark = {"same": "  ", "mine": "+ ", "majority": "- "}
    return "\n".join(mark.get(tag, "  ") + line for tag, line in diff)


def states_at(grid, seq: int) -> dict[int, int]:
    """Each member's grid state code at ``seq`` (empty when ``seq`` is outside the grid)."""
    if not len(grid.seqs) or not (grid.seqs[0] <= seq <= grid.seqs[-1]):
        return {}
    col = grid.codes[:, int(seq - grid.seqs[0])]
    return {int(r): int(c) for r, c in zip(grid.ranks, col, strict=True)}
