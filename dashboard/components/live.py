"""Live mode: a watched folder's snapshots as they arrive, redrawn on a timer (a Streamlit
fragment, no page reload); the full report once the job hangs."""

from __future__ import annotations

import logging

import streamlit as st

from analysis.live.follow import LiveWatch
from analysis.live.lines import Line
from analysis.types import HostMap
from analysis.views.figures.progress import progress_figure
from analysis.views.live import class_progress

from .. import data, live_watches, state
from ..args import Args
from . import groups, heatmap
from .sidebar import Source
from .text import md_escape

log = logging.getLogger(__name__)

LINES_SHOWN = 30
"""The newest lines listed (the watch keeps more)."""


def page(source: Source, args: Args, hosts: HostMap | None) -> data.Loaded | None:
    """Watch ``source``: the live panel while the job moves (None), the hung snapshot to
    draw as the full report once it stopped."""
    watch = live_watches.live_watch(source.path, source.roots, args.watch_settle)
    if watch.hung is None:
        st.fragment(_panel, run_every=args.watch_every)(watch, hosts)
        return None
    hung = watch.hung
    st.error(
        md_escape(f"Hung at snapshot {hung.snapshot.name}: {hung.line.message}. The full report of that snapshot:")
    )
    with st.expander("The watch, snapshot by snapshot", expanded=False):
        _lines(watch.lines)
        _timeline(watch)
    st.button(
        "Watch again",
        key=state.WATCH_AGAIN,
        on_click=live_watches.watch_again,
        args=(watch,),
        help="Forget this watch and start again from the newest snapshot in the folder (a restarted job).",
    )
    return data.live_loaded(hung)


def _panel(watch: LiveWatch, hosts: HostMap | None) -> None:
    """One tick: poll the folder, then draw the newest snapshot's state."""
    try:
        watch.step()
    except Exception as exc:  # a snapshot that cannot be read: said, and the watch goes on
        log.exception("watching %s failed", watch.root)
        st.error(md_escape(f"Could not read a snapshot of {watch.root}: {type(exc).__name__}: {exc}"))
    if watch.hung is not None:
        st.rerun()  # the whole page, which now shows the full report
    for note in watch.notes():
        st.warning(md_escape(note))
    latest = watch.latest
    waiting = watch.waiting()
    if latest is None:
        st.info(md_escape(f"Waiting for a complete snapshot in {watch.root}…"))
    else:
        _state(latest.line)
    for name, missing in sorted(waiting.items()):
        st.caption(md_escape(f"{name}: arriving" + (f", no file yet from ranks {list(missing)}" if missing else "")))
    if latest is None:
        return
    _lines(watch.lines)
    _timeline(watch)
    loaded = data.hosted(data.live_loaded(latest), hosts)
    _heatmap(loaded)


def _state(line: Line) -> None:
    """The newest line as the page's verdict: one snapshot alone never says hung, its comparison does."""
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([1, 1, 1.6, 1.2])
        c1.metric("Job", md_escape(line.state.upper()))
        c2.metric("Ranks named", md_escape(", ".join(map(str, line.ranks)) or "none"))
        where = (
            "-"
            if line.pg_name is None
            else f"{line.pg_name} · {line.op or ''} {line.seq if line.seq is not None else ''}"
        )
        c3.metric("Where (group · op seq)", md_escape(where))
        c4.metric("Snapshot", md_escape(line.snapshot))
        show = st.warning if line.state in ("slow", "straggler") else st.info
        show(md_escape(line.message))


def _lines(lines: list[Line]) -> None:
    st.caption("One line per snapshot, as `flightdeck watch` prints them")
    st.code("\n".join(line.text() for line in lines[-LINES_SHOWN:]), language=None)


def _timeline(watch: LiveWatch) -> None:
    latest = watch.latest
    if latest is None or len(watch.history) < 2:
        return
    frame = class_progress(watch.history, latest.report.rank_classes)
    if frame.empty:
        return
    st.caption("Progress per rank class (classes of the newest snapshot; * suspect): a flat line stopped")
    st.plotly_chart(progress_figure(frame), key=state.LIVE_PROGRESS, config={"displayModeBar": False})


def _heatmap(loaded: data.Loaded) -> None:
    """The newest snapshot's heatmap; the group picked is kept while it exists."""
    ss = st.session_state
    order = data.relevance_order(loaded)
    if not order:
        return
    picked = ss.get(state.PG)
    state.on_dataset(ss, loaded.key)
    if picked in order:
        ss[state.PG] = picked
    groups.current(order)
    pg_key = groups.picker(groups.labels(loaded.report), order)
    heatmap.render(loaded, pg_key)
