"""Small tables and texts the pages show, built from the report. No Streamlit here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis.views.tables import compact_ranks, file_errors_table, frames_text, progress_table, wait_chain

__all__ = [
    "column_widths",
    "compact_ranks",
    "diff_text",
    "entry_table",
    "file_errors_table",
    "frames_text",
    "progress_table",
    "states_at",
    "table_height",
    "wait_chain",
]

#: Pixels per character of a table cell (Streamlit's 14 px sans serif, with room for digits)
#: and around the text. Measured on the page: "2026-12-06 22:14:05.123456 UTC" needs 232 px.
PX_PER_CHAR = 7.6
PX_PADDING = 26
#: A column never grows wider than this: longer text scrolls the table sideways.
MAX_COLUMN_PX = 720
#: Tables up to this many rows are drawn whole; longer ones scroll inside their box.
MAX_WHOLE_ROWS = 40
ROW_PX = 35


def column_widths(df: pd.DataFrame, sample: int = 500) -> dict[str, int]:
    """Each column's width in pixels to show its longest cell (among the first ``sample`` rows) and header whole."""
    head = df.head(sample)
    widths = {}
    for col in df.columns:
        cells = head[col].map(lambda v: "" if v is None else str(v)) if len(head) else pd.Series([], dtype=str)
        longest = max([len(str(col)), *cells.str.len().tolist()])
        widths[str(col)] = int(min(PX_PADDING + PX_PER_CHAR * longest, MAX_COLUMN_PX))
    return widths


def table_height(num_rows: int, max_rows: int = MAX_WHOLE_ROWS) -> int | str:
    """``"content"`` (every row shown, none cut at the bottom) up to ``max_rows``; else a box of that many rows."""
    return "content" if num_rows <= max_rows else (max_rows + 1) * ROW_PX + 3


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
