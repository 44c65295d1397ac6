"""The live mode's timeline: collectives completed per rank class, one point per snapshot."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from .colors import SUSPECT_COLOR


def progress_figure(progress: pd.DataFrame, height: int = 260) -> go.Figure:
    """One line per class (``class_progress``'s frame): a flat line is a class that stopped."""
    fig = go.Figure()
    for label, rows in progress.groupby("class", sort=False):
        suspect = "*" in str(label)
        fig.add_trace(
            go.Scatter(
                x=rows["snapshot"],
                y=rows["completed"],
                mode="lines+markers",
                name=str(label),
                line={"color": SUSPECT_COLOR, "width": 3} if suspect else None,
            )
        )
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis_title="snapshot",
        yaxis_title="collectives completed",
        xaxis={"type": "category"},
        legend={"orientation": "h", "y": -0.3},
    )
    return fig
