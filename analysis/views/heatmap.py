"""What the heatmap shows of a group's grid: a region, at full resolution or in blocks.

Pure numpy over a :class:`~analysis.views.grid.Grid`; the dashboard and the HTML export
draw it. Large groups are reduced to blocks that keep their most severe state, so a
stuck cell never disappears, and a click on a block opens that region.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..report.report import Report
from ..report.words import counted
from .grid import OUTSIDE, STATE_NAMES, Grid, aggregate, block_max, group_grid

#: Above this many cells the grid is aggregated. The clickable SVG overlay dominates
#: the browser's paint time: for a 1,024 x 2,000 grid on a busy 2-core machine a page
#: reload took 3.7 s with 48x64 blocks, 5.2 s with 96x125 and 13.7 s with 200x250.
MAX_RAW_CELLS = 12_000
MAX_BLOCK_ROWS = 96
MAX_BLOCK_COLS = 125
#: A group with a longer history opens on this many sequence numbers around its wavefront
#: and first divergence (:func:`story_window`); the newest ones are one click away.
RECENT_SEQS = 40


@dataclass(frozen=True, slots=True)
class HeatmapView:
    """What the heatmap shows: a region of a group's grid, possibly in blocks.

    Display coordinates: x is the sequence number, y is the row index inside the region
    (full resolution), so block ``(i, j)`` is centred on
    ``(seqs[0] + j*col_block + (col_block-1)/2, i*row_block + (row_block-1)/2)``.
    """

    pg_key: str
    ranks: np.ndarray
    """Ranks of the full-resolution rows in the region."""
    row_offset: int
    """Index of the region's first row in the group's grid."""
    seqs: np.ndarray
    codes: np.ndarray
    """Displayed codes: one per cell, or one per block when aggregated."""
    row_block: int
    col_block: int

    @property
    def aggregated(self) -> bool:
        return self.row_block > 1 or self.col_block > 1

    @property
    def n_rows(self) -> int:
        return len(self.ranks)

    def x_centres(self) -> np.ndarray:
        j = np.arange(self.codes.shape[1])
        base = self.seqs[0] if len(self.seqs) else 0
        return base + j * self.col_block + (self.col_block - 1) / 2

    def y_centres(self) -> np.ndarray:
        i = np.arange(self.codes.shape[0])
        return i * self.row_block + (self.row_block - 1) / 2

    def describe(self) -> str:
        """How the region is drawn, in one sentence for the page."""
        n_r, n_s = self.n_rows, len(self.seqs)
        if not self.aggregated:
            return f"{counted(n_r, 'rank')} x {counted(n_s, 'sequence number')}, one cell per (rank, seq)."
        return (
            f"{counted(n_r, 'rank')} x {counted(n_s, 'sequence number')}, aggregated: each cell = {self.row_block} "
            f"rank{'s' if self.row_block > 1 else ''} x {self.col_block} seq{'s' if self.col_block > 1 else ''}, "
            "showing the most severe state. Click a block (or drag a box) to open it at full resolution."
        )

    def block_at(self, x: float, y: float) -> tuple[int, int, int, int]:
        """The region under a display point: (row0, row1) in grid rows, (seq0, seq1) inclusive."""
        i = min(max(math.floor((y + 0.5) / self.row_block), 0), max(self.codes.shape[0] - 1, 0))
        j = min(max(math.floor((x - self.seqs[0] + 0.5) / self.col_block), 0), max(self.codes.shape[1] - 1, 0))
        r0 = i * self.row_block
        r1 = min(r0 + self.row_block, self.n_rows)
        s0 = int(self.seqs[0]) + j * self.col_block
        s1 = min(s0 + self.col_block - 1, int(self.seqs[-1]))
        return self.row_offset + r0, self.row_offset + r1, s0, s1

    def cell_at(self, x: float, y: float) -> tuple[int, int]:
        """(rank, seq) of the full-resolution cell under a display point."""
        r0, _, s0, _ = self.block_at(x, y)
        return int(self.ranks[r0 - self.row_offset]), s0

    def box(self, xs: Sequence[float], ys: Sequence[float]) -> tuple[int, int, int, int]:
        """The grid region covered by a dragged box: (row0, row1) in grid rows, (seq0, seq1) inclusive."""
        k0 = min(max(math.floor(min(ys) + 0.5), 0), self.n_rows - 1)
        k1 = min(max(math.floor(max(ys) + 0.5), 0), self.n_rows - 1)
        s_lo, s_hi = int(self.seqs[0]), int(self.seqs[-1])
        s0 = min(max(math.floor(min(xs) + 0.5), s_lo), s_hi)
        s1 = min(max(math.floor(max(xs) + 0.5), s_lo), s_hi)
        return self.row_offset + k0, self.row_offset + k1 + 1, s0, s1

    def row_of_rank(self, rank: int) -> int | None:
        hit = np.nonzero(self.ranks == rank)[0]
        return int(hit[0]) if hit.size else None


def build_view(
    grid: Grid,
    window: tuple[int, int, int, int] | None = None,
    *,
    max_raw_cells: int = MAX_RAW_CELLS,
    max_rows: int = MAX_BLOCK_ROWS,
    max_cols: int = MAX_BLOCK_COLS,
) -> HeatmapView:
    """Cut ``window`` = (row0, row1, seq0, seq1) out of the grid and aggregate it if it is large."""
    ranks, seqs, codes = grid.ranks, grid.seqs, grid.codes
    r0 = 0
    if window is not None and len(seqs):
        r0, r1, s0, s1 = window
        r0, r1 = max(0, min(r0, len(ranks) - 1)), max(1, min(r1, len(ranks)))
        cols = (seqs >= s0) & (seqs <= s1)
        if cols.any() and r1 > r0:
            ranks, seqs, codes = ranks[r0:r1], seqs[cols], codes[r0:r1][:, cols]
        else:
            r0 = 0
    if codes.size > max_raw_cells:
        shown, rb, cb = aggregate(codes, max_rows, max_cols)
    else:
        shown, rb, cb = codes, 1, 1
    return HeatmapView(grid.pg_key, ranks, r0, seqs, shown, rb, cb)


def view_of(full: np.ndarray, grid: Grid, view: HeatmapView) -> np.ndarray:
    """A layer the shape of ``grid.codes`` cut and reduced as ``view`` was (block maximum)."""
    cols = (grid.seqs >= view.seqs[0]) & (grid.seqs <= view.seqs[-1]) if len(view.seqs) else grid.seqs < 0
    part = full[view.row_offset : view.row_offset + view.n_rows][:, cols]
    return block_max(part, view.row_block, view.col_block)


def recent_window(grid: Grid, max_cols: int = RECENT_SEQS) -> tuple[int, int, int, int] | None:
    """The newest ``max_cols`` sequence numbers of every rank, when the group's history is longer."""
    if len(grid.seqs) <= max_cols:
        return None
    return 0, len(grid.ranks), int(grid.seqs[-max_cols]), int(grid.seqs[-1])


def first_divergence(grid: Grid) -> int | None:
    """The first sequence number where the group's members are not all in the same state
    (cells outside a ring buffer left aside), or None where they never part."""
    codes = grid.codes
    if codes.size == 0:
        return None
    seen = codes != OUTSIDE
    hi = np.where(seen, codes, -1).max(axis=0)
    lo = np.where(seen, codes, 127).min(axis=0)
    parted = np.nonzero(seen.any(axis=0) & (hi != lo))[0]
    return int(grid.seqs[parted[0]]) if parted.size else None


def story_window(
    grid: Grid, wavefront_seq: int | None = None, max_cols: int = RECENT_SEQS
) -> tuple[int, int, int, int] | None:
    """The window a group's heatmap opens on: its wavefront and first divergence with the
    history just before them, whatever the ring buffers hold beyond (NCCL ranks enqueue
    far past the collective they wait in). The newest seqs where neither is known; None
    when the whole history fits."""
    if len(grid.seqs) <= max_cols:
        return None
    first, last = int(grid.seqs[0]), int(grid.seqs[-1])
    anchors = [a for a in (wavefront_seq, first_divergence(grid)) if a is not None and first <= a <= last]
    if not anchors:
        return recent_window(grid, max_cols)
    lo, hi = min(anchors), max(anchors)
    after = max(max_cols // 8, 1)  # a few seqs past the story show what the others did next
    width = max(max_cols, hi - lo + 1 + after)
    s1 = min(hi + after, last)
    s0 = max(s1 - width + 1, first)
    s1 = min(max(s1, s0 + width - 1), last)
    return 0, len(grid.ranks), s0, s1


def hover_labels(view: HeatmapView, cells: pd.DataFrame) -> np.ndarray:
    """One hover label per full-resolution cell: rank, seq, state, and op/sizes/dtypes where recorded.

    ``cells`` has columns rank, collective_seq_id, op, input_sizes, input_dtypes for this group.
    """
    n_i, n_j = view.codes.shape
    names = np.array(STATE_NAMES, dtype=object)[view.codes]
    labels = np.empty((n_i, n_j), dtype=object)
    for i in range(n_i):
        rank = int(view.ranks[i])
        for j in range(n_j):
            labels[i, j] = f"rank {rank} · seq {int(view.seqs[j])}<br>{names[i, j]}"
    if cells is None or cells.empty or not n_i or not n_j:
        return labels
    row_of = {int(r): i for i, r in enumerate(view.ranks)}
    seq0 = int(view.seqs[0])
    sub = cells.loc[(cells[s.SEQ] >= seq0) & (cells[s.SEQ] <= int(view.seqs[-1]))]
    for rank, seq, op, sizes, dtypes in sub[[s.RANK, s.SEQ, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]].itertuples(
        index=False
    ):
        i = row_of.get(int(rank))
        if i is None:
            continue
        j = int(seq) - seq0
        what = f"{short_text(op)} · in {short_text(sizes)} · {short_text(dtypes)}"
        labels[i, j] = f"rank {int(rank)} · seq {int(seq)}<br>{what}<br>{names[i, j]}"
    return labels


def short_text(value: object, limit: int = 60) -> str:
    """A value as hover text: HTML-escaped (plotly renders hover text as markup), cut at ``limit``."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def wavefront_view(report: Report) -> HeatmapView | None:
    """The wavefront group's heatmap view, on the window that holds its wavefront and first
    divergence (``story_window``); None without a wavefront or cells."""
    w = report.wavefront
    if w is None or report.analysis is None:
        return None
    grid = group_grid(report.analysis, w.pg_key)
    if grid.codes.size == 0:
        return None
    return build_view(grid, story_window(grid, w.collective_seq_id))
