"""The wait-for graph folded by rank class, laid out in layers (grandalf's Sugiyama layout):
roots on top with why each is a root, an arrow from each class to the classes that wait on
it, labelled with where they wait; no arrow runs through a label.

Nodes are one scatter trace (curve 0) whose ``customdata`` is the class id, so a click
on a node names its class; the arrows are lines into their labels and layout annotations
(arrowheads) out of them; the labels are text traces. Coordinates are pixels.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import plotly.graph_objects as go

from ...report.words import counted
from ..classes import FoldedGraph, edge_text, fold, where_text
from ..graph_layout import Placed, layered
from ..heatmap import short_text
from ..tables import compact_ranks
from .colors import SELECT_COLOR, SUSPECT_COLOR

_SITUATION_COLORS = {"blocked": "#fb8c00", "idle": "#90a4ae", "no_dump": "#e53935", "unreadable": "#e53935"}
#: Pixel widths of a character of the node labels (11 px) and arrow labels (10 px), and a text line's height.
_NODE_CHAR_PX = 6.6
_EDGE_CHAR_PX = 5.9
_LINE_PX = 15
_MARGIN = 16
_TITLE_PX = 36
#: A root's reason is wrapped at this many characters.
_WRAP = 30


def class_graph(classes: list[dict[str, Any]], selected: int | None = None, max_nodes: int = 40) -> go.Figure:
    """The folded wait-for graph; ``selected`` (a class id) is outlined."""
    graph = fold(classes, max_nodes)
    by_id = {c["id"]: c for c in classes}
    placed = place(graph, by_id)
    fig = go.Figure([_nodes(graph, placed, by_id, selected), *_texts(graph, placed, by_id)])
    xs, ys = [], []
    for pts in placed.into_label.values():
        xs += [p[0] for p in pts] + [None]
        ys += [p[1] for p in pts] + [None]
    fig.add_scatter(x=xs, y=ys, mode="lines", line={"color": "#546e7a", "width": 1.5}, hoverinfo="skip", name="arrows")
    for b, w, _ in graph.edges:
        pts = placed.out_of_label[(b, w)]
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        if len(pts) > 2:
            fig.add_scatter(x=[p[0] for p in pts[:-1]], y=[p[1] for p in pts[:-1]], mode="lines",
                            line={"color": "#546e7a", "width": 1.5}, hoverinfo="skip", showlegend=False)  # fmt: skip
        fig.add_annotation(
            x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
            showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=1.5, arrowcolor="#546e7a", text="",
        )  # fmt: skip
    width, height = placed.width + 2 * _MARGIN, placed.height + 2 * _MARGIN
    fig.update_layout(
        width=max(int(width), 320),
        height=int(height) + _TITLE_PX,
        margin={"l": 0, "r": 0, "t": _TITLE_PX, "b": 0},
        showlegend=False,
        plot_bgcolor="#ffffff",
        hovermode="closest",
        xaxis={"visible": False, "range": [-_MARGIN, max(width, 320) - _MARGIN], "fixedrange": True},
        yaxis={"visible": False, "range": [placed.height + _MARGIN, -_MARGIN], "fixedrange": True},
        title={"text": "Who waits on whom, by class (roots on top)", "font": {"size": 14}},
    )
    return fig


def place(graph: FoldedGraph, by_id: dict[int, dict[str, Any]]) -> Placed:
    """The layered layout of the folded graph, each box as large as its text."""
    sizes = {}
    for i in graph.nodes:
        lines = _node_lines(by_id[i])
        text_w = max(len(line) for line in lines) * _NODE_CHAR_PX
        sizes[i] = (max(text_w, 2 * _radius(by_id[i])) + 8, 2 * _radius(by_id[i]) + _LINE_PX * len(lines) + 6)
    labels = {}
    for b, w, r in graph.edges:
        lines = _edge_label(by_id, w, r).split("<br>")
        labels[(b, w)] = (max(len(line) for line in lines) * _EDGE_CHAR_PX + 8, _LINE_PX * len(lines) + 2)
    return layered(sizes, [(b, w) for b, w, _ in graph.edges], labels)


def _node_lines(c: dict[str, Any]) -> list[str]:
    """A class's label, line by line (plain text): who, and for a root why it is one."""
    lines = [f"class {c['id']}: {counted(c['size'], 'rank')} {short_text(compact_ranks(c['ranks'], limit=3), 40)}"]
    if c.get("root"):
        lines += textwrap.wrap(f"root: {c['root']}", _WRAP)
    return lines


def _edge_label(by_id: dict[int, dict[str, Any]], waiter: int, reason: str) -> str:
    """Where the waiting class waits, over why: two short lines keep the picture narrow."""
    return "<br>".join(short_text(part, 44) for part in edge_text(by_id[waiter], reason).split(" · ", 1))


def _radius(c: dict[str, Any]) -> float:
    """Marker radius in px, growing with the log of the class size."""
    return (16 + 10 * math.log10(max(c["size"], 1))) / 2


def _nodes(graph: FoldedGraph, placed: Placed, by_id: dict[int, dict[str, Any]], selected: int | None) -> go.Scatter:
    ids = list(graph.nodes)
    cs = [by_id[i] for i in ids]
    hover = [
        f"{'<br>'.join(_node_lines(c))}<br>{short_text(where_text(c), 120)}"
        + ("<br>(its ranks also wait on each other)" if c["id"] in graph.self_waiting else "")
        for c in cs
    ]
    return go.Scatter(
        x=[placed.nodes[i].x for i in ids],
        y=[placed.nodes[i].top + _radius(by_id[i]) for i in ids],
        mode="markers",
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


def _texts(graph: FoldedGraph, placed: Placed, by_id: dict[int, dict[str, Any]]) -> list[go.Scatter]:
    """The class labels under their markers, and each arrow's label in its own box."""
    ids = list(graph.nodes)
    texts = []
    for i in ids:
        c = by_id[i]
        lines = _node_lines(c)
        who = lines[0].split(":", 1)
        text = f"<b>{short_text(who[0])}</b>:{short_text(who[1])}"
        if len(lines) > 1:
            text += "".join(f"<br><i>{short_text(line)}</i>" for line in lines[1:])
        texts.append(text)
    nodes = go.Scatter(
        x=[placed.nodes[i].x for i in ids],
        y=[placed.nodes[i].top + 2 * _radius(by_id[i]) + 2 for i in ids],
        mode="text",
        text=texts,
        textposition="bottom center",
        textfont={"size": 11},
        hoverinfo="skip",
        name="class labels",
    )
    keys = [(b, w) for b, w, _ in graph.edges]
    edges = go.Scatter(
        x=[placed.labels[k].x for k in keys],
        y=[placed.labels[k].y for k in keys],
        mode="text",
        text=[_edge_label(by_id, w, r) for _, w, r in graph.edges],
        textposition="middle center",
        textfont={"size": 10, "color": "#37474f"},
        hoverinfo="skip",
        name="waits",
    )
    return [nodes, edges]
