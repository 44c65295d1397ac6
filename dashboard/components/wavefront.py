"""The wavefront collective: who arrived when, and the call stacks grouped by identity."""

from __future__ import annotations

import streamlit as st

from analysis.report.words import counted, ranks_text
from analysis.views import drilldown as views
from analysis.views import stacks
from analysis.views.figures.arrivals import arrivals_figure
from analysis.views.grid import NOT_ISSUED

from .. import data, state, tables
from .text import md_escape


def render(loaded: data.Loaded) -> None:
    report = loaded.report
    a = report.analysis
    w = report.wavefront
    if w is None or w.collective_seq_id is None:
        st.info("No wavefront: every group made progress to the end of its recorded buffer.")
        return
    seq = int(w.collective_seq_id)
    st.markdown(md_escape(f"Group {w.pg_name} ({w.pg_desc or 'no description'}), seq {seq}, {w.op or ''}").strip())
    arr = views.arrivals(a, w.pg_key, seq)
    states = tables.states_at(data.grid(loaded, w.pg_key), seq)
    never = [r for r in arr["rank"].astype(int) if states.get(r) == NOT_ISSUED]
    st.markdown("**Arrival at the wavefront collective**")
    if never:
        st.error(f"Never issued it: {ranks_text(never)}")
    st.plotly_chart(
        arrivals_figure(arr, report.suspect_ranks, states),
        key=state.ARRIVALS_CHART,
        config={"displaylogo": False},
    )
    st.markdown("**Call stacks at the wavefront, ranks grouped by identical stack**")
    groups = stacks.stacks_at(a, w.pg_key, seq)
    if not groups:
        st.text("No rank recorded an entry at this seq.")
    for k, (stack_id, ranks) in enumerate(groups[:6]):
        who = f"{counted(len(ranks), 'rank')}: {tables.compact_ranks(ranks, 20)}"
        if len(groups) > 1:
            who = ("Majority, " if k == 0 else "Minority, ") + who
        st.caption(who)
        st.code(tables.frames_text(stacks.stack_frames(a, stack_id)), language=None, wrap_lines=True)
    if len(groups) > 6:
        st.caption(f"… and {len(groups) - 6} more distinct stacks.")
