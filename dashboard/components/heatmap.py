"""The rank x sequence heatmap of one process group; a click selects a cell or opens a block."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import streamlit as st

from analysis.views.grid import Grid

from .. import data, figures, selection, state


def render(loaded: data.Loaded, pg_key: str) -> tuple[int, int] | None:
    """Draw the group's heatmap and return the selected (rank, seq), if any."""
    report = loaded.report
    w = report.wavefront
    grid = data.grid(loaded, pg_key)
    return render_grid(
        grid,
        lambda window: data.heatmap_view(loaded, pg_key, window),
        wavefront_seq=w.collective_seq_id if w is not None and w.pg_key == pg_key else None,
        suspects=report.suspect_ranks,
        focus=figures.recent_window(grid),
        marks=data.rank_marks(loaded),
    )


ViewFor = Callable[[tuple[int, int, int, int] | None], tuple[figures.HeatmapView, np.ndarray | None]]


def render_grid(
    grid: Grid,
    view_for: ViewFor,
    *,
    wavefront_seq: int | None = None,
    suspects: Sequence[int] = (),
    focus: tuple[int, int, int, int] | None = None,
    marks: Mapping[int, str] | None = None,
) -> tuple[int, int] | None:
    """Draw any group grid; ``view_for(window)`` returns the (cached) view and hover labels.

    ``focus`` is the region shown until the user opens another: for a group with a long
    history, its newest sequence numbers (where hangs are), at full resolution.
    """
    ss = st.session_state
    pg_key = grid.pg_key
    if grid.codes.size == 0:
        st.info("No collective of this group was recorded in the dumps' buffers.")
        return state.get_cell(ss)

    window = state.get_window(ss, pg_key)
    if window is None and focus is not None:
        window = state.Window(pg_key, *focus)
    view, hover = view_for(_tuple(window))
    chart_key = _chart_key(pg_key, window)
    # The click arrives as this chart's widget value at the start of the next run.
    event = ss.get(chart_key)
    sig = selection.signature(event)
    seen = ss.setdefault(state.LAST_EVENT, {})
    if sig is not None and seen.get(chart_key) != sig:
        seen[chart_key] = sig
        act = selection.action_for(view, event)
        if act is not None and act.cell is not None:
            state.set_cell(ss, *act.cell)
        elif act is not None and act.region is not None:
            window = state.Window(pg_key, *act.region)
            state.set_window(ss, window)
            view, hover = view_for(_tuple(window))
            chart_key = _chart_key(pg_key, window)

    cell = state.get_cell(ss)
    head, back = st.columns([5, 1])
    text = view.describe()
    n_all = len(grid.seqs)
    if window is not None and focus is not None and _tuple(window) == focus:
        text = f"Newest {len(view.seqs)} of {n_all} sequence numbers. " + text
        whole = state.Window(pg_key, 0, len(grid.ranks), int(grid.seqs[0]), int(grid.seqs[-1]))
        back.button(
            f"Show all {n_all} seqs", on_click=state.set_window, args=(ss, whole), key="show_all", width="stretch"
        )
    elif window is not None:
        r_lo, r_hi = int(view.ranks[0]), int(view.ranks[-1])
        text = f"Region: ranks {r_lo}-{r_hi}, seqs {window.s0}-{window.s1}. " + text
        back.button(
            "Back to overview", on_click=state.set_window, args=(ss, None), key="back_to_overview", width="stretch"
        )
    if not view.aggregated:
        text += " Click a cell to see that rank's entry and call stack; drag a box to zoom."
    head.caption(text)
    fig = figures.heatmap_figure(
        view, hover=hover, wavefront_seq=wavefront_seq, suspects=suspects, selected=cell, marks=marks
    )
    st.plotly_chart(
        fig,
        key=chart_key,
        on_select="rerun",
        selection_mode=("points", "box"),
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "toImage"]},
    )
    return cell


def _tuple(window: state.Window | None) -> tuple[int, int, int, int] | None:
    return None if window is None else (window.r0, window.r1, window.s0, window.s1)


def _chart_key(pg_key: str, window: state.Window | None) -> str:
    # One key per region: a new region starts with no stale selection.
    suffix = "all" if window is None else window.to_param()
    return f"heatmap:{pg_key}:{suffix}"
