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
    delay = pd.to_numeric(arrivals["delay_ms"], errors="coerce").fillna(0.0).to_numpy()
    ranks = arrivals["rank"].astype(int).to_numpy()
    states = states or {}
    never = np.array(
        [not i and states.get(int(r), NOT_ISSUED) == NOT_ISSUED for r, i in zip(ranks, issued, strict=True)]
    )
    gone = ~issued & ~never
    suspects_set = {int(r) for r in suspects}
    when = _when(arrivals)
    fig = go.Figure()
    fig.add_bar(
        x=[str(r) for r in ranks[issued]],
        y=delay[issued],
        name="issued",
        marker={
            "color": "#607d8b",
            "line": {
                "color": [SUSPECT_COLOR if r in suspects_set else "rgba(0,0,0,0)" for r in ranks[issued]],
                "width": 2,
            },
        },
        text=[f"{d:.1f} ms" for d in delay[issued]],
        textposition="auto",
        customdata=np.stack([ranks[issued].astype(object), when[issued]], axis=1).reshape(-1, 2),
        hovertemplate="rank %{customdata[0]}<br>%{y:.1f} ms after the first<br>%{customdata[1]}<extra></extra>",
    )
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
    fig.update_layout(
        height=260,
        margin={"l": 10, "r": 10, "t": 24, "b": 40},
        xaxis={"title": "rank", "type": "category", "categoryorder": "array", "categoryarray": [str(r) for r in ranks]},
        yaxis={"title": "issued after first (ms)", "rangemode": "tozero"},
        bargap=0.15,
        plot_bgcolor="#ffffff",
        showlegend=bool(never.any() or gone.any()),
        legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
    )
    return fig


def _when(arrivals: pd.DataFrame) -> np.ndarray:
    """Each rank's creation time, readable (empty where the rank has no entry)."""
    if "created (UTC)" not in arrivals:
        return np.full(len(arrivals), "", dtype=object)
    parts = zip(arrivals["created (UTC)"], arrivals.get("before the dump", [""] * len(arrivals)), strict=True)
    return np.array([" · ".join(p for p in pair if p) for pair in parts], dtype=object)
