"""Figures of the proxy-op waits (pure plotly): the rank x peer matrix and the culprit ->
victims chain."""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..waits import Matrix

ROOT_COLOR = "#b71c1c"
VICTIM_COLOR = "#546e7a"
SELECT_COLOR = "#00b0ff"


def matrix_figure(m: Matrix, metric: str, selected: tuple[int, int] | None = None) -> go.Figure:
    """Receivers down, senders across, ``metric`` in ms per op; every edge is clickable
    (a transparent marker on it: plotly heatmaps send no click to Streamlit)."""
    fig = go.Figure([_heat(m, metric), _edge_markers(m, metric)])
    _lay_out_matrix(fig, m)
    if selected is not None:
        pos = {int(r): i for i, r in enumerate(m.receivers)}
        if selected[0] in pos and selected[1] in pos:
            y, x = pos[selected[0]], pos[selected[1]]
            fig.add_shape(
                type="rect", x0=x - 0.5, x1=x + 0.5, y0=y - 0.5, y1=y + 0.5, line={"color": SELECT_COLOR, "width": 3}
            )
    return fig


def _heat(m: Matrix, metric: str) -> go.Heatmap:
    """The matrix itself, one cell per (receiver, sender), gaps between cells while they are few."""
    n = len(m.receivers)
    return go.Heatmap(
        z=m.z,
        x0=0,
        dx=1,
        y0=0,
        dy=1,
        colorscale="YlOrRd",
        colorbar={"title": {"text": "ms/op"}, "thickness": 14},
        hoverinfo="skip",
        xgap=1 if n <= 64 else 0,
        ygap=1 if n <= 64 else 0,
        name=metric,
    )


def _edge_markers(m: Matrix, metric: str) -> go.Scatter:
    """A transparent marker on every edge: what the hover names and a click selects."""
    n = len(m.receivers)
    c = m.cells
    return go.Scatter(
        x=c["col"],
        y=c["row"],
        mode="markers",
        marker={"size": max(6, min(18, 640 // max(n, 1))), "opacity": 0, "color": "#000"},
        customdata=np.stack([c["receiver"], c["sender"]], axis=1).astype(np.int64),
        text=[f"{v:,.2f} ms/op {k}".rstrip() for v, k in zip(c["value"], c["cls"])],
        hovertemplate="rank %{customdata[0]} received from %{customdata[1]}<br>" + metric + ": %{text}<extra></extra>",
        showlegend=False,
        name="edges",
    )


def _lay_out_matrix(fig: go.Figure, m: Matrix) -> None:
    """Senders across, receivers down from the top, every rank ticked while they are few."""
    n = len(m.receivers)
    labels = [str(int(r)) for r in m.receivers]
    ticks = list(range(n)) if n <= 48 else list(range(0, n, max(1, n // 32)))
    fig.update_layout(
        height=int(min(720, max(320, 16 * n + 120))),
        margin={"l": 10, "r": 10, "t": 30, "b": 40},
        hovermode="closest",
        hoverdistance=-1,
        plot_bgcolor="#ffffff",
        xaxis={
            "title": "sender (peer)",
            "range": [-0.5, n - 0.5],
            "tickvals": ticks,
            "ticktext": [labels[i] for i in ticks],
            "showgrid": False,
        },
        yaxis={
            "title": "receiver (rank)",
            "range": [n - 0.5, -0.5],
            "tickvals": ticks,
            "ticktext": [labels[i] for i in ticks],
            "showgrid": False,
        },
    )


def _levels(edges: pd.DataFrame, roots: tuple[int, ...]) -> dict[int, int]:
    """Hops from the root(s) along sender -> receiver."""
    out = {r: 0 for r in roots}
    nxt: dict[int, list[int]] = defaultdict(list)
    for s, r in zip(edges["sender"].astype(int), edges["receiver"].astype(int)):
        nxt[s].append(r)
    queue = deque(roots)
    while queue:
        u = queue.popleft()
        for v in nxt.get(u, []):
            if v not in out:
                out[v] = out[u] + 1
                queue.append(v)
    for s in edges["sender"].astype(int):  # senders the walk reached through a cycle: next to the root
        out.setdefault(int(s), 1)
    for r in edges["receiver"].astype(int):
        out.setdefault(int(r), max(out.values(), default=0) + 1)
    return out


def chain_figure(edges: pd.DataFrame, roots: tuple[int, ...], title: str, max_edges: int = 80) -> go.Figure:
    """The edges whose wait began at ``roots``: the root on the left, each victim as many
    hops to the right as the wait travelled; arrow width by the wait it carried."""
    e = edges.head(max_edges)
    level = _levels(e, roots)
    by_level: dict[int, list[int]] = defaultdict(list)
    for rank, lv in sorted(level.items(), key=lambda kv: (kv[1], kv[0])):
        by_level[lv].append(rank)
    pos = {}
    for lv, ranks in by_level.items():
        for i, r in enumerate(ranks):
            pos[r] = (lv, i - (len(ranks) - 1) / 2)
    fig = go.Figure()
    top = float(e["wait_ms"].max()) if len(e) else 1.0
    for s, r, w in zip(e["sender"].astype(int), e["receiver"].astype(int), e["wait_ms"]):
        (x0, y0), (x1, y1) = pos[s], pos[r]
        fig.add_annotation(
            x=x1,
            y=y1,
            ax=x0,
            ay=y0,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=3,
            arrowsize=1,
            arrowwidth=1 + 4 * float(w) / max(top, 1e-9),
            arrowcolor="rgba(183,28,28,0.55)",
            standoff=12,
            startstandoff=12,
            text="",
        )
    nodes = sorted(pos)
    fig.add_trace(
        go.Scatter(
            x=[pos[r][0] for r in nodes],
            y=[pos[r][1] for r in nodes],
            mode="markers+text",
            text=[str(r) for r in nodes],
            textposition="middle center",
            textfont={"color": "#ffffff", "size": 11},
            marker={"size": 26, "color": [ROOT_COLOR if r in roots else VICTIM_COLOR for r in nodes]},
            hovertemplate="rank %{text}<extra></extra>",
            showlegend=False,
            name="ranks",
        )
    )
    span = max((abs(p[1]) for p in pos.values()), default=1)
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=int(min(640, max(260, 60 * (2 * span + 1) + 80))),
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        xaxis={"title": "hops from where the wait began", "dtick": 1, "showgrid": False, "zeroline": False},
        yaxis={"visible": False},
        plot_bgcolor="#ffffff",
    )
    return fig
