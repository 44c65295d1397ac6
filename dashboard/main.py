"""The page, top to bottom: source -> verdict -> group -> heatmap -> drill-down -> details
(a watched folder: the live panel until the job hangs, then the same page on that snapshot)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import streamlit as st

from . import data, sources, state, timings
from .args import Args, parse_args
from .components import (
    drilldown,
    export,
    groups,
    heatmap,
    job,
    live,
    loading,
    overview,
    sidebar,
    style,
    verdict,
    waits,
    wavefront,
)
from .components.text import md_escape
from .proxy_source import proxy_path

log = logging.getLogger(__name__)


def run(argv: Sequence[str]) -> None:
    with timings.timed_run(st.session_state, st.query_params):
        _page(argv)


def _page(argv: Sequence[str]) -> None:
    st.set_page_config(page_title="Flight Deck", page_icon=":material/flight_land:", layout="wide")
    style.apply()
    args = parse_args(argv)
    ss = st.session_state
    state.hydrate(ss, st.query_params)
    sources.UPLOADS.tidy()

    source = sidebar.dump_source(args)
    st.title("Flight Deck", anchor=False)
    if source is None:
        return
    st.caption(md_escape(source.label) + ("  \n" + md_escape(f"Injected: {source.note}") if source.note else ""))

    hosts = sidebar.host_map(args)
    analysed = live.page(source, args, hosts) if source.live else _loaded(source, args)
    if analysed is None:
        return
    try:
        loaded = data.hosted(analysed, hosts)
    except Exception as exc:
        log.exception("analysis failed for %s", source.path)
        _failed(source.label, exc)
        return
    state.on_dataset(ss, loaded.key)
    report = loaded.report

    if report.ranks_loaded == 0:
        st.error(md_escape(f"No Flight Recorder dump could be read from {source.label}."))
        verdict.file_errors(report, nothing_loaded=True)
        return

    verdict.render(report)
    order = data.relevance_order(loaded)
    if not order:
        st.info("The dumps name no process groups.")
        return
    groups.current(order)
    st.sidebar.caption(
        md_escape(f"Analysed in {loaded.seconds:.2f} s · {report.ranks_loaded} ranks · {len(order)} groups")
    )

    _tabs(loaded, order, source.label)
    state.write_query(st.query_params, ss)


def _tabs(loaded: data.Loaded, order: list[str], source_label: str) -> None:
    """The view's tabs."""
    # Only the open tab is drawn: hidden charts and tables would slow every rerun.
    tab_heat, tab_job, tab_wave, tab_all, tab_waits, tab_export = st.tabs(
        list(state.TABS), key=state.TAB, on_change="rerun"
    )
    if tab_heat.open:
        with tab_heat:
            pg_key = groups.picker(groups.labels(loaded.report), order)
            cell = heatmap.render(loaded, pg_key)
            drilldown.render(loaded, pg_key, cell)
    if tab_job.open:
        with tab_job:
            job.render(loaded)
    if tab_wave.open:
        with tab_wave:
            wavefront.render(loaded)
    if tab_all.open:
        with tab_all:
            overview.render(loaded)
    if tab_waits.open:
        with tab_waits:
            waits.render(loaded)
    if tab_export.open:
        with tab_export:
            export.render(loaded, title=f"Flight Deck: {source_label}")


def _loaded(source: sidebar.Source, args: Args) -> data.Loaded | None:
    """The dump set's analysis, read in a load job the page polls (None while it runs or failed)."""
    try:
        proxy = proxy_path(args, source.path, source.roots)
        pending = data.load_job(source.path, source.roots, source.use_cache, source.earlier, proxy)
    except Exception as exc:  # the library names the file and reason; show it, not a traceback
        log.exception("analysis failed for %s", source.path)
        _failed(source.label, exc)
        return None
    return loading.wait(pending, source.label, again=data.load_again)  # read in the job's thread


def _failed(label: str, exc: Exception) -> None:
    st.error(md_escape(f"Could not analyse {label}: {type(exc).__name__}: {exc}"))
