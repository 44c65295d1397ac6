"""Plotly figures for the dashboard. No Streamlit here: every builder is a pure function.

The heatmap is drawn as an int8 ``go.Heatmap`` (cheap to ship) under a transparent
``go.Scatter`` with one marker per displayed cell. Plotly heatmaps report no points on
click, the scatter does, so the overlay is what makes cells clickable; it also carries
the hover text. Large groups are reduced to blocks that keep their most severe state,
so a stuck cell never disappears, and a click on a block opens that region.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.views.grid import MISMATCHED, NOT_ISSUED, STATE_NAMES, Grid, aggregate

#: One colour per grid code (severity order): outside buffer, completed, started,
#: scheduled, not issued, mismatched.
STATE_COLORS = ("#eceff1", "#a5d6a7", "#fdd835", "#fb8c00", "#e53935", "#7b1fa2")
SUSPECT_COLOR = "#b71c1c"
MARK_COLOR = "#e65100"  # a failed health check or a proxy-wait culprit on a heatmap row
SELECT_COLOR = "#0d47a1"

#: Above this many cells the grid is aggregated. The clickable SVG overlay dominates
#: the browser's paint time: for a 1,024 x 2,000 grid on a busy 2-core machine a page
#: reload took 3.7 s with 48x64 blocks, 5.2 s with 96x125 and 13.7 s with 200x250.
MAX_RAW_CELLS = 12_000
MAX_BLOCK_ROWS = 96
MAX_BLOCK_COLS = 125
#: A group with a longer history opens on its newest sequence numbers (hangs are at the end).
RECENT_SEQS = 40


def discrete_colorscale(colors: Sequence[str]) -> list[list]:
    """A stepped colorscale: code ``i`` maps exactly to ``colors[i]`` with zmin=-0.5."""
    n = len(colors)
    scale: list[list] = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


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
            return f"{n_r} ranks x {n_s} sequence numbers, one cell per (rank, seq)."
        return (
            f"{n_r} ranks x {n_s} sequence numbers, aggregated: each cell = {self.row_block} "
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


def recent_window(grid: Grid, max_cols: int = RECENT_SEQS) -> tuple[int, int, int, int] | None:
    """The newest ``max_cols`` sequence numbers of every rank, when the group's history is longer."""
    if len(grid.seqs) <= max_cols:
        return None
    return 0, len(grid.ranks), int(grid.seqs[-max_cols]), int(grid.seqs[-1])


def _row_ticks(
    view: HeatmapView, suspects: set[int], max_ticks: int = 40, marks: Mapping[int, str] | None = None
) -> tuple[list[float], list[str]]:
    n = view.n_rows
    if not view.aggregated and n <= 64:
        rows = list(range(n))
    else:
        step = max(view.row_block, math.ceil(n / max_ticks / view.row_block) * view.row_block)
        rows = list(range(0, n, step))
    vals, text = [], []
    for k in rows:
        rank = int(view.ranks[k])
        if view.aggregated:
            vals.append(k - 0.5 + view.row_block / 2)
        else:
            vals.append(k)
        label = f"rank {rank}"
        if rank in suspects and not view.aggregated:
            label = f'<b><span style="color:{SUSPECT_COLOR}">rank {rank} ◀ suspect</span></b>'
        if marks and rank in marks and not view.aggregated:
            label += f' <span style="color:{MARK_COLOR}">⚑ {html.escape(marks[rank])}</span>'
        text.append(label)
    return vals, text


def heatmap_figure(
    view: HeatmapView,
    *,
    hover: np.ndarray | None = None,
    wavefront_seq: int | None = None,
    suspects: Sequence[int] = (),
    selected: tuple[int, int] | None = None,
    title: str | None = None,
    marks: Mapping[int, str] | None = None,
) -> go.Figure:
    """The state heatmap with its clickable overlay, wavefront line and suspect rows.

    ``marks`` (rank -> short text) flags rows: a failed health check, a proxy-wait culprit.

    ``hover`` (same shape as ``view.codes``) holds one label per displayed cell; without
    it the overlay labels cells with their coordinates only (kept small for big grids).
    ``selected`` is a (rank, seq) to outline.
    """
    n_i, n_j = view.codes.shape
    xs, ys = view.x_centres(), view.y_centres()
    x_lo = (view.seqs[0] if len(view.seqs) else 0) - 0.5
    x_hi = x_lo + n_j * view.col_block
    y_hi = n_i * view.row_block - 0.5
    heat = go.Heatmap(
        z=view.codes,
        x0=float(xs[0]) if n_j else 0.0,
        dx=view.col_block,
        y0=float(ys[0]) if n_i else 0.0,
        dy=view.row_block,
        zmin=-0.5,
        zmax=len(STATE_COLORS) - 0.5,
        colorscale=discrete_colorscale(STATE_COLORS),
        colorbar={
            "title": {"text": "state"},
            "tickvals": list(range(len(STATE_NAMES))),
            "ticktext": list(STATE_NAMES),
            "thickness": 14,
            "len": min(1.0, max(0.5, 220 / max(_height(view), 1))),
            "yanchor": "top",
            "y": 1,
        },
        hoverinfo="skip",
        xgap=1 if n_j <= 120 and n_i <= 120 else 0,
        ygap=1 if n_j <= 120 and n_i <= 120 else 0,
        name="state",
    )
    yy, xx = np.divmod(np.arange(n_i * n_j, dtype=np.int32), max(n_j, 1))
    px, py = xs[xx], ys[yy]
    if view.aggregated:
        # Block bounds as small integers; the template turns them into ranges.
        r_first = view.ranks[np.minimum(yy * view.row_block, view.n_rows - 1)]
        r_last = view.ranks[np.minimum(yy * view.row_block + view.row_block - 1, view.n_rows - 1)]
        s_first = view.seqs[0] + xx * view.col_block
        s_last = np.minimum(s_first + view.col_block - 1, view.seqs[-1])
        custom = np.stack([r_first, r_last, s_first, s_last, view.codes.ravel()], axis=1).astype(np.int32)
        overlay = go.Scatter(
            x=px,
            y=py,
            mode="markers",
            marker={"size": max(6, min(14, 600 // max(n_i, n_j, 1))), "opacity": 0, "color": "#000"},
            customdata=custom,
            hovertemplate="ranks %{customdata[0]}-%{customdata[1]}<br>seqs %{customdata[2]}-%{customdata[3]}<extra></extra>",
            showlegend=False,
            name="cells",
        )
    else:
        rank_of_row = view.ranks[yy]
        kw: dict = {}
        if hover is not None:
            kw["hovertext"] = np.asarray(hover, dtype=object).ravel()
            kw["hovertemplate"] = "%{hovertext}<extra></extra>"
        else:
            kw["customdata"] = rank_of_row.astype(np.int32)
            kw["hovertemplate"] = "rank %{customdata} · seq %{x}<extra></extra>"
        overlay = go.Scatter(
            x=px,
            y=py,
            mode="markers",
            marker={"size": max(6, min(16, 600 // max(n_i, n_j, 1))), "opacity": 0, "color": "#000"},
            showlegend=False,
            name="cells",
            **kw,
        )
    fig = go.Figure([heat, overlay])
    suspects_set = {int(r) for r in suspects}
    tickvals, ticktext = _row_ticks(view, suspects_set, marks=marks)
    fig.update_layout(
        height=_height(view),
        margin={"l": 10, "r": 10, "t": 64 if title else 44, "b": 40},
        title={"text": _short(title, 120), "font": {"size": 14}} if title else None,
        hovermode="closest",
        hoverdistance=-1,
        plot_bgcolor="#ffffff",
        xaxis={
            "title": "sequence number (collective_seq_id)",
            "range": [x_lo, x_hi],
            "tickformat": "d",
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={
            "range": [y_hi, -0.5],
            "tickvals": tickvals,
            "ticktext": ticktext,
            "showgrid": False,
            "zeroline": False,
            "automargin": True,
        },
        uirevision=f"{view.pg_key}:{view.row_offset}:{x_lo}",
    )
    if wavefront_seq is not None and x_lo <= wavefront_seq <= x_hi:
        fig.add_vline(
            x=wavefront_seq,
            line={"color": "#212121", "width": 2, "dash": "dash"},
            annotation_text=f"wavefront seq {wavefront_seq}",
            annotation_position="top",
            annotation_yanchor="bottom",
            annotation_font={"size": 11},
        )
    for k, rank in enumerate(sorted(suspects_set)[:64]):
        row = view.row_of_rank(rank)
        if row is None:
            continue
        lo = (row // view.row_block) * view.row_block - 0.5
        fig.add_hrect(
            y0=lo,
            y1=lo + view.row_block,
            line={"color": SUSPECT_COLOR, "width": 2},
            fillcolor="rgba(183,28,28,0.06)",
            layer="above",
            name=f"suspect {rank}",
        )
    if selected is not None:
        row = view.row_of_rank(selected[0])
        if row is not None and x_lo <= selected[1] <= x_hi:
            r_lo = (row // view.row_block) * view.row_block - 0.5
            c_lo = x_lo + ((selected[1] - int(view.seqs[0])) // view.col_block) * view.col_block
            fig.add_shape(
                type="rect",
                x0=c_lo,
                x1=c_lo + view.col_block,
                y0=r_lo,
                y1=r_lo + view.row_block,
                line={"color": SELECT_COLOR, "width": 3},
                layer="above",
                name="selected",
            )
    return fig


def _height(view: HeatmapView) -> int:
    rows = view.codes.shape[0]
    return int(min(640, max(260, 22 * rows + 110)))


def hover_labels(view: HeatmapView, cells: pd.DataFrame) -> np.ndarray:
    """One hover label per full-resolution cell: rank, seq, state, and op/sizes/dtypes where recorded.

    ``cells`` has columns rank, collective_seq_id, op, input_sizes, input_dtypes for this group.
    """
    from analysis import schema as s

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
        labels[i, j] = (
            f"rank {int(rank)} · seq {int(seq)}<br>{_short(op)} · in {_short(sizes)} · {_short(dtypes)}<br>{names[i, j]}"
        )
    return labels


def _short(value: object, limit: int = 60) -> str:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def arrivals_figure(
    arrivals: pd.DataFrame, suspects: Sequence[int] = (), states: dict[int, int] | None = None
) -> go.Figure:
    """Bars of how late each member issued the wavefront collective.

    Ranks without an entry are told apart by their grid state (``states``): never
    issued (red), or already done with the entry gone from the ring buffer (grey).
    """
    issued = arrivals["issued"].astype(bool).to_numpy()
    delay = pd.to_numeric(arrivals["delay_ms"], errors="coerce").fillna(0.0).to_numpy()
    ranks = arrivals["rank"].astype(int).to_numpy()
    states = states or {}
    top = max(float(delay.max()) if len(delay) else 0.0, 1.0)
    never = np.array(
        [not i and states.get(int(r), NOT_ISSUED) == NOT_ISSUED for r, i in zip(ranks, issued, strict=True)]
    )
    colors = np.where(issued, "#607d8b", np.where(never, STATE_COLORS[NOT_ISSUED], "#cfd8dc"))
    suspects_set = {int(r) for r in suspects}
    heights = np.where(issued, delay, top * 1.05)
    label_missing = [
        "never issued" if n else f"no record ({STATE_NAMES[states.get(int(r), 0)]})"
        for r, n in zip(ranks, never, strict=True)
    ]
    text = np.where(issued, [f"{d:.1f} ms" for d in delay], label_missing)
    fig = go.Figure(
        go.Bar(
            x=[str(r) for r in ranks],
            y=heights,
            marker={
                "color": colors,
                "line": {"color": [SUSPECT_COLOR if r in suspects_set else "rgba(0,0,0,0)" for r in ranks], "width": 2},
            },
            text=text,
            textposition="auto",
            customdata=np.stack([ranks, issued.astype(int)], axis=1),
            hovertemplate="rank %{customdata[0]}<br>%{y:.1f} ms after the first<extra></extra>",
        )
    )
    fig.update_layout(
        height=260,
        margin={"l": 10, "r": 10, "t": 10, "b": 40},
        xaxis={"title": "rank", "type": "category"},
        yaxis={"title": "issued after first (ms)"},
        bargap=0.15,
        plot_bgcolor="#ffffff",
    )
    return fig


__all__ = [
    "MAX_RAW_CELLS",
    "MISMATCHED",
    "STATE_COLORS",
    "HeatmapView",
    "arrivals_figure",
    "build_view",
    "discrete_colorscale",
    "heatmap_figure",
    "hover_labels",
]
