"""All process groups at a glance, and the chain of waits that leads to the suspects."""

from __future__ import annotations

import streamlit as st

from .. import data, tables
from . import table


def render(loaded: data.Loaded) -> None:
    report = loaded.report
    st.markdown(
        "**Who waits on whom** (root suspects first; each row folds the ranks blocked on one rank at one collective)"
    )
    chain = tables.wait_chain(report)
    if chain.empty:
        st.text("Nobody waits on anybody.")
    else:
        table.show(chain.drop(columns=["num_waiters"]), {"suspect": "root suspect"})
    st.markdown("**Progress per process group** (the wavefront group first)")
    table.show(tables.progress_table(report, data.relevance_order(loaded)))
