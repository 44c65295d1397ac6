"""The load under way: a bar of files read and a Cancel button, until the job ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from .. import state
from ..loadjob import JobState, LoadJob
from .text import md_escape

T = TypeVar("T")

QUIET_S = 0.5
"""A job that ends this soon (a small or cached set) is shown without a bar."""
POLL_S = 0.3
"""How often the bar is redrawn; each redraw also lets a click interrupt the run."""


def wait(job: LoadJob[T], label: str, again: Callable[[LoadJob[T]], None]) -> T | None:
    """Draw ``job``'s progress until it ends; its result, or None after saying why there is
    none (cancelled, failed) with a button that calls ``again(job)``."""
    if not job.wait(QUIET_S):
        _watch(job)
    if job.state is JobState.DONE:
        return job.result()
    if job.state is JobState.CANCELLED:
        st.warning(md_escape(f"The load of {label} was cancelled."))
    else:
        exc = job.error
        st.error(md_escape(f"Could not analyse {label}: {type(exc).__name__}: {exc}"))
    st.button("Load again", key=state.LOAD_AGAIN, on_click=again, args=(job,), icon=":material/refresh:")
    return None


def _watch(job: LoadJob) -> None:
    """The bar and Cancel button, redrawn until the job ends. The job runs in its own
    thread: this run only reads its counters, and a click (Cancel or any other widget)
    stops this run at the next redraw; the job goes on unless it was cancelled."""
    box = st.empty()
    with box.container():
        bar = st.progress(0.0, text=_text(job))
        st.button("Cancel", key=state.CANCEL_LOAD, on_click=job.cancel, icon=":material/cancel:")
    while not job.wait(POLL_S):
        bar.progress(job.progress().fraction, text=_text(job))
    box.empty()


def _text(job: LoadJob) -> str:
    if job.state is JobState.CANCELLING:
        return "Cancelling the load…"
    return md_escape(job.progress().text())
