"""Which process group the heatmap shows: a picker as wide as the page, so its label is whole."""

from __future__ import annotations

import streamlit as st

from analysis.report.report import Report
from analysis.report.words import group_label

from .. import state


def labels(report: Report) -> dict[str, str]:
    """``group 3 (tensor_parallel, ranks 4-5)`` per group key."""
    groups = report.analysis.groups.groups if report.analysis is not None else {}
    return {k: group_label(g) for k, g in groups.items()}


def current(order: list[str]) -> str:
    """The group shown: the one picked last (kept while other tabs hide the picker), else the most relevant."""
    ss = st.session_state
    if ss.get(state.PG) not in order:
        ss[state.PG] = order[0]
    else:
        ss[state.PG] = ss[state.PG]  # a widget's value survives runs that do not draw it only when set here
    return ss[state.PG]


def picker(names: dict[str, str], order: list[str]) -> str:
    """The process-group picker, most relevant group first; returns the chosen group key."""
    ss = st.session_state
    pg = st.selectbox(
        "Process group",
        order,
        key=state.PG,
        format_func=lambda k: names.get(k, k),
        help="Ordered by relevance: the wavefront group first, then groups with problems.",
    )
    state.on_group(ss, pg)
    return pg
