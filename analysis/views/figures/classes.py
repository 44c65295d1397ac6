"""The wait-for graph folded by rank class: roots on top, an arrow from each class to the
classes that wait on it, labelled with where they wait. Plotly only (no graphviz).

Nodes are one scatter trace (curve 0) whose ``customdata`` is the class id, so a click
on a node names its class; the arrows are layout annotations, their labels a second,
hover-only trace.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from ...report.words import counted
from ..classes import FoldedGraph, edge_text, fold, where_text
from ..heatmap import short_text
from ..tables import compact_ranks
from .colors import SELECT_COLOR, SUSPECT_COLOR

_SITUATION_COLORS = {"blocked": "#fb8c00", "idle": "#90a4ae", "no_dump": "#e53935", "unreadable": "#e53935"}
_LAYER_PX = 130


def class_graph(classes: list[dict[str, Any]], selected: int | None = None, max_nodes: int = 40) -> go.Figure:
    """The folded wait-for graph; ``selected`` (a class id) is outlined."""
    graph = fold(classes, max_nodes)
    by_id = {c["id"]: c for c in classes}
    fig = go.Figure([_nodes(graph, by_id, selected), _edge_labels(graph, by_id)])
    for blocker, waiter, _ in graph.edges:
        (x0, d0), (x1, d1) = graph.nodes[blocker], graph.nodes[waiter]
        fig.add_annotation(
            x=x1, y=-d1, ax=x0, ay=-d0, xref="x", yref="y", axref="x", ayref="y",
            showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=1.5, arrowcolor="#546e7a",
            standoff=_radius(by_id[waiter]), startstandoff=_radius(by_id[blocker]), text="",
        )  # fmt: skip
    depth = max((d for _, d in graph.nodes.values()), default=0)
    fig.update_layout(
        height=max(260, 120 + _LAYER_PX * (depth + 1)),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        showlegend=False,
        plot_bgcolor="#ffffff",
        hovermode="closest",
        xaxis={"visible": False, "range": [-0.02, 1.02], "fixedrange": True},
        yaxis={"visible": False, "range": [-depth - 0.6, 0.6], "fixedrange": True},
        title={"text": "Who waits on whom, by class (roots on top)", "font": {"size": 14}},
    )
    return fig


def _radius(c: dict[str, Any]) -> float:
    """Marker radius in px, growing with the log of the class size."""
    return (16 + 10 * math.log10(max(c["size"], 1))) / 2


def _nodes(graph: FoldedGraph, by_id: dict[int, dict[str, Any]], selected: int | None) -> go.Scatter:
    ids = list(graph.nodes)
    cs = [by_id[i] for i in ids]
    labels = [
        f"<b>class {c['id']}</b>: {counted(c['size'], 'rank')} {short_text(compact_ranks(c['ranks'], limit=3), 40)}"
        + (f"<br><i>root: {short_text(c['root'], 60)}</i>" if c.get("root") else "")
        for c in cs
    ]
    hover = [
        f"{label}<br>{short_text(where_text(c), 120)}"
        + ("<br>(its ranks also wait on each other)" if c["id"] in graph.self_waiting else "")
        for label, c in zip(labels, cs, strict=True)
    ]
    return go.Scatter(
        x=[graph.nodes[i][0] for i in ids],
        y=[-graph.nodes[i][1] for i in ids],
        mode="markers+text",
        text=labels,
        textposition="bottom center",
        textfont={"size": 11},
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        customdata=ids,
        marker={
            "size": [2 * _radius(c) for c in cs],
            "color": [SUSPECT_COLOR if c["suspect"] else _SITUATION_COLORS.get(c["situation"], "#90a4ae") for c in cs],
            "line": {"color": [SELECT_COLOR if i == selected else "#ffffff" for i in ids], "width": 3},
        },
        name="classes",
    )


def _edge_labels(graph: FoldedGraph, by_id: dict[int, dict[str, Any]]) -> go.Scatter:
    """Where each arrow's waiting class waits (group, seq, op, reason), two thirds down the
    arrow: arrows that leave one class apart there more than at their middles."""
    xs, ys, texts = [], [], []
    for blocker, waiter, reason in graph.edges:
        (x0, d0), (x1, d1) = graph.nodes[blocker], graph.nodes[waiter]
        xs.append(x0 + (x1 - x0) * 0.68)
        ys.append(-(d0 + (d1 - d0) * 0.68))
        texts.append(short_text(edge_text(by_id[waiter], reason), 60))
    return go.Scatter(
        x=xs,
        y=ys,
        mode="text",
        text=texts,
        textfont={"size": 9, "color": "#37474f"},
        hoverinfo="skip",
        name="waits",
    )
