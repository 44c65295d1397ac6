"""When each member issued the wavefront collective, as bars."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..grid import NOT_ISSUED, STATE_NAMES
from .colors import STATE_COLORS, SUSPECT_COLOR


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
            customdata=np.stack([ranks.astype(object), _when(arrivals)], axis=1),
            hovertemplate="rank %{customdata[0]}<br>%{y:.1f} ms after the first<br>%{customdata[1]}<extra></extra>",
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


def _when(arrivals: pd.DataFrame) -> np.ndarray:
    """Each bar's creation time, readable (empty where the rank has no entry)."""
    if "created (UTC)" not in arrivals:
        return np.full(len(arrivals), "", dtype=object)
    parts = zip(arrivals["created (UTC)"], arrivals.get("before the dump", [""] * len(arrivals)), strict=True)
    return np.array([" · ".join(p for p in pair if p) for pair in parts], dtype=object)
