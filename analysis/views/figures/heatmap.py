"""The state heatmap of one group as a plotly figure (the dashboard's and the HTML export's).

The heatmap is drawn as an int8 ``go.Heatmap`` (cheap to ship) under a transparent
``go.Scatter`` with one marker per displayed cell. Plotly heatmaps report no points on
click, the scatter does, so the overlay is what makes cells clickable; it also carries
the hover text. What it shows (a region, maybe in blocks) is
:class:`analysis.views.heatmap.HeatmapView`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..grid import STATE_NAMES
from ..heatmap import HeatmapView, short_text
from .colors import MARK_COLOR, MOVED_COLOR, SELECT_COLOR, STATE_COLORS, SUSPECT_COLOR, discrete_colorscale


def _row_ticks(
    view: HeatmapView,
    suspects: set[int],
    row_labels: Mapping[int, str],
    max_ticks: int = 40,
    marks: Mapping[int, str] | None = None,
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
        if rank in row_labels:
            label += f" · {short_text(row_labels[rank], 24)}"
        if rank in suspects and not view.aggregated:
            label = f'<b><span style="color:{SUSPECT_COLOR}">{label} ◀ suspect</span></b>'
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
    row_labels: Mapping[int, str] | None = None,
    moved: np.ndarray | None = None,
    marks: Mapping[int, str] | None = None,
) -> go.Figure:
    """The state heatmap with its clickable overlay, wavefront line and suspect rows.

    ``hover`` (same shape as ``view.codes``) holds one label per displayed cell; without
    it the overlay labels cells with their coordinates only (kept small for big grids).
    ``selected`` is a (rank, seq) to outline. ``row_labels`` (rank -> host) are shown
    beside the ranks. ``moved`` (same shape as ``view.codes``, 1 where a cell was
    completed since an earlier snapshot) is drawn as a second layer over the states.
    ``marks`` (rank -> short text) flags rows: a failed health check, a proxy-wait culprit.
    """
    traces = [_state_trace(view)]
    if moved is not None:
        traces.append(_moved_trace(view, moved))
    fig = go.Figure([*traces, _overlay(view, hover)])
    suspects_set = {int(r) for r in suspects}
    _layout(fig, view, suspects_set, title, row_labels or {}, marks)
    x_lo, x_hi = _x_range(view)
    if wavefront_seq is not None and x_lo <= wavefront_seq <= x_hi:
        fig.add_vline(
            x=wavefront_seq,
            line={"color": "#212121", "width": 2, "dash": "dash"},
            annotation_text=f"wavefront seq {wavefront_seq}",
            annotation_position="top",
            annotation_yanchor="bottom",
            annotation_font={"size": 11},
        )
    _mark_suspects(fig, view, suspects_set)
    if selected is not None:
        _mark_selected(fig, view, selected)
    return fig


def _x_range(view: HeatmapView) -> tuple[float, float]:
    x_lo = (view.seqs[0] if len(view.seqs) else 0) - 0.5
    return x_lo, x_lo + view.codes.shape[1] * view.col_block


def _state_trace(view: HeatmapView) -> go.Heatmap:
    """The grid's codes as a discrete-colour heatmap (no hover: the overlay has it)."""
    n_i, n_j = view.codes.shape
    xs, ys = view.x_centres(), view.y_centres()
    small = n_j <= 120 and n_i <= 120
    return go.Heatmap(
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
        xgap=1 if small else 0,
        ygap=1 if small else 0,
        name="state",
    )


def _moved_trace(view: HeatmapView, moved: np.ndarray) -> go.Heatmap:
    """Cells completed since the earlier snapshot, as a translucent blue layer (no hover, no scale)."""
    n_i, n_j = view.codes.shape
    xs, ys = view.x_centres(), view.y_centres()
    return go.Heatmap(
        z=np.asarray(moved, dtype=np.int8),
        x0=float(xs[0]) if n_j else 0.0,
        dx=view.col_block,
        y0=float(ys[0]) if n_i else 0.0,
        dy=view.row_block,
        zmin=0,
        zmax=1,
        colorscale=[[0, "rgba(0,0,0,0)"], [1, MOVED_COLOR]],
        showscale=False,
        hoverinfo="skip",
        name="completed since the earlier dumps",
    )


def _overlay(view: HeatmapView, hover: np.ndarray | None) -> go.Scatter:
    """One transparent marker per displayed cell: what makes cells clickable, and their hover text."""
    n_i, n_j = view.codes.shape
    yy, xx = np.divmod(np.arange(n_i * n_j, dtype=np.int32), max(n_j, 1))
    kw: dict = {}
    if view.aggregated:
        # Block bounds as small integers; the template turns them into ranges.
        r_first = view.ranks[np.minimum(yy * view.row_block, view.n_rows - 1)]
        r_last = view.ranks[np.minimum(yy * view.row_block + view.row_block - 1, view.n_rows - 1)]
        s_first = view.seqs[0] + xx * view.col_block
        s_last = np.minimum(s_first + view.col_block - 1, view.seqs[-1])
        kw["customdata"] = np.stack([r_first, r_last, s_first, s_last, view.codes.ravel()], axis=1).astype(np.int32)
        kw["hovertemplate"] = "ranks %{customdata[0]}-%{customdata[1]}<br>seqs %{customdata[2]}-%{customdata[3]}"
        kw["hovertemplate"] += "<extra></extra>"
        size = max(6, min(14, 600 // max(n_i, n_j, 1)))
    else:
        if hover is not None:
            kw["hovertext"] = np.asarray(hover, dtype=object).ravel()
            kw["hovertemplate"] = "%{hovertext}<extra></extra>"
        else:
            kw["customdata"] = view.ranks[yy].astype(np.int32)
            kw["hovertemplate"] = "rank %{customdata} · seq %{x}<extra></extra>"
        size = max(6, min(16, 600 // max(n_i, n_j, 1)))
    return go.Scatter(
        x=view.x_centres()[xx],
        y=view.y_centres()[yy],
        mode="markers",
        marker={"size": size, "opacity": 0, "color": "#000"},
        showlegend=False,
        name="cells",
        **kw,
    )


def _layout(
    fig: go.Figure,
    view: HeatmapView,
    suspects: set[int],
    title: str | None,
    row_labels: Mapping[int, str],
    marks: Mapping[int, str] | None = None,
) -> None:
    x_lo, x_hi = _x_range(view)
    tickvals, ticktext = _row_ticks(view, suspects, row_labels, marks=marks)
    fig.update_layout(
        height=_height(view),
        margin={"l": 10, "r": 10, "t": 64 if title else 44, "b": 40},
        title={"text": short_text(title, 120), "font": {"size": 14}} if title else None,
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
            "range": [view.codes.shape[0] * view.row_block - 0.5, -0.5],
            "tickvals": tickvals,
            "ticktext": ticktext,
            "showgrid": False,
            "zeroline": False,
            "automargin": True,
        },
        uirevision=f"{view.pg_key}:{view.row_offset}:{x_lo}",
    )


def _mark_suspects(fig: go.Figure, view: HeatmapView, suspects: set[int]) -> None:
    for rank in sorted(suspects)[:64]:
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


def _mark_selected(fig: go.Figure, view: HeatmapView, selected: tuple[int, int]) -> None:
    x_lo, x_hi = _x_range(view)
    row = view.row_of_rank(selected[0])
    if row is None or not x_lo <= selected[1] <= x_hi:
        return
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


def _height(view: HeatmapView) -> int:
    rows = view.codes.shape[0]
    return int(min(640, max(260, 22 * rows + 110)))
