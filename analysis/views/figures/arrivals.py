"""When each member issued the wavefront collective: bars for the delays, marks for the ranks with none."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..grid import NOT_ISSUED, STATE_NAMES
from .colors import STATE_COLORS, SUSPECT_COLOR

#: The legend names of the two marks; a rank without an entry has no time, so no bar.
NEVER_ISSUED = "never issued"
NO_RECORD = "no record"


def arrivals_figure(
    arrivals: pd.DataFrame, suspects: Sequence[int] = (), states: dict[int, int] | None = None
) -> go.Figure:
    """Bars of how late each member issued the wavefront collective.

    A rank without an entry has no time to draw: it gets a mark on the axis, not a bar,
    told apart by its grid state (``states``): never issued (a red cross), or done with
    the entry gone from its ring buffer (a grey ring).
    """
    issued = arrivals["issued"].astype(bool).to_numpy()
    ranks = arrivals["rank"].astype(int).to_numpy()
    states = states or {}
    never = np.array(
        [not i and states.get(int(r), NOT_ISSUED) == NOT_ISSUED for r, i in zip(ranks, issued, strict=True)]
    )
    gone = ~issued & ~never
    fig = go.Figure()
    _add_delay_bars(fig, arrivals, issued, {int(r) for r in suspects})
    _add_no_time_marks(fig, ranks, never, gone, states)
    _lay_out(fig, ranks, legend=bool(never.any() or gone.any()))
    return fig


def _add_delay_bars(fig: go.Figure, arrivals: pd.DataFrame, issued: np.ndarray, suspects: set[int]) -> None:
    """One bar per rank that issued the collective: how long after the first it did, suspects outlined."""
    delay = pd.to_numeric(arrivals["delay_ms"], errors="coerce").fillna(0.0).to_numpy()
    ranks = arrivals["rank"].astype(int).to_numpy()
    when = _when(arrivals)
    fig.add_bar(
        x=[str(r) for r in ranks[issued]],
        y=delay[issued],
        name="issued",
        marker={
            "color": "#607d8b",
            "line": {
                "color": [SUSPECT_COLOR if r in suspects else "rgba(0,0,0,0)" for r in ranks[issued]],
                "width": 2,
            },
        },
        text=[f"{d:.1f} ms" for d in delay[issued]],
        textposition="auto",
        customdata=np.stack([ranks[issued].astype(object), when[issued]], axis=1).reshape(-1, 2),
        hovertemplate="rank %{customdata[0]}<br>%{y:.1f} ms after the first<br>%{customdata[1]}<extra></extra>",
    )


def _add_no_time_marks(
    fig: go.Figure, ranks: np.ndarray, never: np.ndarray, gone: np.ndarray, states: dict[int, int]
) -> None:
    """A mark on the axis for each rank with no entry: a cross if it never issued, a ring if the entry is gone."""
    marks = (
        (never, NEVER_ISSUED, "x-thin-open", STATE_COLORS[NOT_ISSUED], lambda r: "never issued it"),
        (gone, NO_RECORD, "circle-open", "#90a4ae", lambda r: f"no record ({STATE_NAMES[states.get(int(r), 0)]})"),
    )
    for which, name, symbol, color, say in marks:
        if not which.any():
            continue
        fig.add_scatter(
            x=[str(r) for r in ranks[which]],
            y=np.zeros(int(which.sum())),
            name=name,
            mode="markers+text",
            marker={"symbol": symbol, "size": 16, "color": color, "line": {"width": 3, "color": color}},
            text=[say(r) for r in ranks[which]],
            textposition="top center",
            textfont={"color": color},
            cliponaxis=False,
            hovertemplate="rank %{x}<br>%{text}: no time to show<extra></extra>",
        )


def _lay_out(fig: go.Figure, ranks: np.ndarray, legend: bool) -> None:
    """The ranks across in their order, the delay up from zero; a legend only when there are marks."""
    fig.update_layout(
        height=260,
        margin={"l": 10, "r": 10, "t": 24, "b": 40},
        xaxis={"title": "rank", "type": "category", "categoryorder": "array", "categoryarray": [str(r) for r in ranks]},
        yaxis={"title": "issued after first (ms)", "rangemode": "tozero"},
        bargap=0.15,
        plot_bgcolor="#ffffff",
        showlegend=legend,
        legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
    )


def _when(arrivals: pd.DataFrame) -> np.ndarray:
    """Each rank's creation time, readable (empty where the rank has no entry)."""
    if "created (UTC)" not in arrivals:
        return np.full(len(arrivals), "", dtype=object)
    parts = zip(arrivals["created (UTC)"], arrivals.get("before the dump", [""] * len(arrivals)), strict=True)
    return np.array([" · ".join(p for p in pair if p) for pair in parts], dtype=object)
