"""The "Waits" tab: NCCL proxy-op waits as a rank x peer matrix (click an edge for its rows),
the culprit -> victims chain, and the rankings."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.diagnosis.proxy_waits import ProxyWaits
from analysis.diagnosis.proxy_walk import LINK
from analysis.report.proxy import ProxyEvidence
from analysis.report.words import counted, ranks_text
from analysis.views import waits as views
from analysis.views.figures.waits import chain_figure, matrix_figure

from .. import data, state
from .table import show as show_table
from .text import md_escape

_WORDS = {"slow_gpu": "slow GPU", "slow_link": "slow link", "receiver_congestion": "congested receiver", "none": "none"}


def _selection(event: object, cells: pd.DataFrame) -> tuple[int, int] | None:
    """(receiver, sender) of a click on the matrix: the clicked marker of the overlay (the
    chart's second trace) is that row of ``cells``."""
    try:
        points = event["selection"]["points"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    for p in points:
        if not isinstance(p, dict) or p.get("curve_number") != 1:
            continue
        i = p.get("point_index", p.get("point_number"))
        if isinstance(i, int) and 0 <= i < len(cells):
            return int(cells["receiver"].iloc[i]), int(cells["sender"].iloc[i])
    return None


def render(loaded: data.Loaded) -> None:
    pe = loaded.report.proxy_waits
    if pe is None:
        st.info(
            "No NCCL proxy-op waits given: start with `flightdeck-dashboard --proxy-ops PATH` (probing's "
            "proxy_ops export or NCCL profiler traces) or put them in a `proxy_ops` folder beside the dumps."
        )
        return
    _header(pe)
    if not _matrix(pe.waits):
        return
    _chains(pe.waits)
    st.markdown("**Findings**")
    show_table(views.findings_table(pe.waits))
    for title, ranking in views.rankings(pe.waits).items():
        st.markdown(f"**{md_escape(title)}**")
        show_table(ranking)


def _header(pe: ProxyEvidence) -> None:
    pw = pe.waits
    head = f"**Finding: {_WORDS.get(pw.finding, pw.finding)}**"
    if pw.culprit_ranks:
        head += f" · culprit {ranks_text(pw.culprit_ranks)}"
    if pw.suspect_links:
        head += " · links " + ", ".join(f"{s}→{r}" for s, r in pw.suspect_links)
    if not pw.ranks_are_global:
        head += " · ranks local to their communicators"
    st.markdown(head)
    st.caption(
        md_escape(
            f"{len(pw.rows)} proxy-op rows, {len(pw.comms)} communicators"
            + (f"; agreement with the dumps: {pe.agreement.kind}" if pe.agreement is not None else "")
        )
    )


def _matrix(pw: ProxyWaits) -> bool:
    """The rank x peer matrix and the clicked edge; False when no proxy op names a peer."""
    ss = st.session_state
    if state.WAITS_METRIC not in ss:  # first shown: what the finding rests on
        ss[state.WAITS_METRIC] = views.default_metric(pw)
    metric = st.radio("Matrix", list(views.METRICS), horizontal=True, key=state.WAITS_METRIC)
    matrix = views.wait_matrix(pw, metric)
    if matrix is None:
        st.text("No edge: no proxy op names a peer.")
        return False
    event = st.plotly_chart(
        matrix_figure(matrix, metric, ss.get(state.WAITS_EDGE)),
        key=state.WAITS_MATRIX,
        on_select="rerun",
        selection_mode=("points",),
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d", "toImage"]},
    )
    clicked = _selection(event, matrix.cells)
    if clicked is not None and clicked != ss.get(state.WAITS_EDGE):
        ss[state.WAITS_EDGE] = clicked
        st.rerun()
    edge = ss.get(state.WAITS_EDGE)
    if edge is None:
        st.caption("Click a cell to see that edge: its class, its root and the proxy-op rows behind it.")
        return True
    receiver, sender = edge
    st.subheader(f"edge {sender} → {receiver}", anchor=False)
    summary = views.edge_summary(pw, sender, receiver)
    for comm, cls, root in summary[["communicator", "class", "root"]].itertuples(index=False):
        st.markdown(md_escape(f"communicator {comm}: {cls}" + (f", wait began at {root}" if root else "")))
    show_table(summary)
    show_table(views.edge_rows(pw, sender, receiver), height=280)
    return True


def _chains(pw: ProxyWaits) -> None:
    """The chain of waits from a finding's roots, for the finding picked."""
    named = [f for f in pw.findings if f.kind != "unresolved"]
    if not named:
        return
    labels = [
        f"{_WORDS.get(f.kind, f.kind)} {('→' if f.kind == LINK else ', ').join(map(str, f.ranks))}"
        + (" (cycle: a guess)" if f.ambiguous else "")
        for f in named
    ]
    pick = st.selectbox(
        "Chain of waits from", range(len(named)), format_func=lambda i: labels[i], key=state.WAITS_FINDING
    )
    f = named[pick]
    edges = views.chain(pw, f)
    roots = f.ranks if f.kind != LINK else (f.ranks[0],)
    st.plotly_chart(
        chain_figure(edges, roots, f"{labels[pick]}: {counted(len(f.victims), 'rank')} waited"),
        key=state.WAITS_CHAIN,
        config={"displaylogo": False},
    )
