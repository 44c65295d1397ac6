"""The rank x sequence heatmap of one process group; a click selects a cell or opens a block."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import streamlit as st

from analysis.report.hosts import host_labels
from analysis.views.figures.heatmap import heatmap_figure
from analysis.views.grid import Grid
from analysis.views.heatmap import HeatmapView, recent_window, story_window

from .. import data, selection, state


def render(loaded: data.Loaded, pg_key: str) -> tuple[int, int] | None:
    """Draw the group's heatmap and return the selected (rank, seq), if any."""
    report = loaded.report
    w = report.wavefront
    grid = data.grid(loaded, pg_key)
    moved_for = None
    if report.comparison is not None and st.checkbox(
        "Show what was completed since the earlier dumps (blue)", value=True, key=state.SHOW_MOVED
    ):
        moved_for = lambda view: data.moved(loaded, pg_key, view)
    wavefront_seq = w.collective_seq_id if w is not None and w.pg_key == pg_key else None
    return render_grid(
        grid,
        lambda window: data.heatmap_view(loaded, pg_key, window),
        wavefront_seq=wavefront_seq,
        suspects=report.suspect_ranks,
        focus=story_window(grid, wavefront_seq),
        row_labels=host_labels(report.host_map, grid.ranks.tolist()),
        moved_for=moved_for,
        marks=data.rank_marks(loaded),
    )


ViewFor = Callable[[tuple[int, int, int, int] | None], tuple[HeatmapView, np.ndarray | None]]


def render_grid(
    grid: Grid,
    view_for: ViewFor,
    *,
    wavefront_seq: int | None = None,
    suspects: Sequence[int] = (),
    focus: tuple[int, int, int, int] | None = None,
    row_labels: Mapping[int, str] | None = None,
    moved_for: Callable[[HeatmapView], np.ndarray | None] | None = None,
    marks: Mapping[int, str] | None = None,
) -> tuple[int, int] | None:
    """Draw any group grid; ``view_for(window)`` returns the (cached) view and hover labels.

    ``focus`` is the region shown until the user opens another: for a group with a long
    history, the seqs around its wavefront and first divergence, at full resolution (the
    caption offers the newest seqs and the whole history).
    ``row_labels`` (rank -> host) go beside the ranks; ``moved_for(view)`` gives the
    layer of cells completed since an earlier snapshot; ``marks`` (rank -> short text)
    flag rows (a failed health check, a proxy-wait culprit).
    """
    ss = st.session_state
    pg_key = grid.pg_key
    if grid.codes.size == 0:
        st.info("No collective of this group was recorded in the dumps' buffers.")
        return state.get_cell(ss)

    window = state.get_window(ss, pg_key)
    if window is None and focus is not None:
        window = state.Window(pg_key, *focus)
    window = _act_on_click(pg_key, window, view_for)
    view, hover = view_for(_tuple(window))
    cell = state.get_cell(ss)
    _caption(grid, view, window, focus)
    fig = heatmap_figure(
        view,
        hover=hover,
        wavefront_seq=wavefront_seq,
        suspects=suspects,
        selected=cell,
        row_labels=row_labels,
        moved=None if moved_for is None else moved_for(view),
        marks=marks,
    )
    st.plotly_chart(
        fig,
        key=state.heatmap_key(pg_key, window),
        on_select="rerun",
        selection_mode=("points", "box"),
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "toImage"]},
    )
    return cell


def _act_on_click(pg_key: str, window: state.Window | None, view_for: ViewFor) -> state.Window | None:
    """A new selection on the chart shown last run opens a cell or a region; returns the window to draw."""
    ss = st.session_state
    chart_key = state.heatmap_key(pg_key, window)
    # The click arrives as this chart's widget value at the start of the next run.
    event = ss.get(chart_key)
    sig = selection.signature(event)
    seen = ss.setdefault(state.LAST_EVENT, {})
    if sig is None or seen.get(chart_key) == sig:
        return window
    seen[chart_key] = sig
    view, _ = view_for(_tuple(window))
    act = selection.action_for(view, event)
    if act is not None and act.cell is not None:
        state.set_cell(ss, *act.cell)
    elif act is not None and act.region is not None:
        window = state.Window(pg_key, *act.region)
        state.set_window(ss, window)
    return window


def _caption(grid: Grid, view: HeatmapView, window: state.Window | None, focus: tuple | None) -> None:
    """What the chart shows, and the buttons to the other first windows, every seq, or back."""
    ss = st.session_state
    head, back = st.columns([5, 1])
    text = view.describe()
    n_all = len(grid.seqs)
    newest = recent_window(grid)
    shown = _tuple(window)
    if window is not None and focus is not None and shown in (focus, newest):
        other = None
        if shown == newest:
            text = f"Newest {len(view.seqs)} of {n_all} sequence numbers. " + text
            if focus != newest:
                other = ("The wavefront", focus, state.SHOW_STORY)
        else:
            text = (
                f"Seqs {focus[2]}-{focus[3]} of {n_all} recorded ({int(grid.seqs[0])}-{int(grid.seqs[-1])}): "
                "the wavefront and the first divergence. " + text
            )
            other = (f"Newest {newest[3] - newest[2] + 1} seqs", newest, state.SHOW_NEWEST)
        if other is not None:
            head, switch, back = st.columns([4, 1, 1])
            name, region, key = other
            switch.button(
                name,
                on_click=state.set_window,
                args=(ss, state.Window(grid.pg_key, *region)),
                key=key,
                width="stretch",
            )
        whole = state.Window(grid.pg_key, 0, len(grid.ranks), int(grid.seqs[0]), int(grid.seqs[-1]))
        back.button(
            f"Show all {n_all} seqs",
            on_click=state.set_window,
            args=(ss, whole),
            key=state.SHOW_ALL,
            width="stretch",
        )
    elif window is not None:
        r_lo, r_hi = int(view.ranks[0]), int(view.ranks[-1])
        text = f"Region: ranks {r_lo}-{r_hi}, seqs {window.s0}-{window.s1}. " + text
        back.button(
            "Back to overview",
            on_click=state.set_window,
            args=(ss, None),
            key=state.BACK_TO_OVERVIEW,
            width="stretch",
        )
    if not view.aggregated:
        text += " Click a cell to see that rank's entry and call stack; drag a box to zoom."
    head.caption(text)


def _tuple(window: state.Window | None) -> tuple[int, int, int, int] | None:
    return None if window is None else (window.r0, window.r1, window.s0, window.s1)
