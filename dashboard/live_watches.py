"""The live watches of this server: one per watched folder, shared by every tab, so each
snapshot is read once, whoever looks (see ``analysis.live.follow``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import streamlit as st

from analysis.live.follow import LiveWatch

from . import confine


@st.cache_resource(show_spinner=False)
def _live_watches() -> tuple[dict[tuple[str, tuple[str, ...], float], LiveWatch], threading.Lock]:
    """Every watch of this server (shared by all sessions), by folder, roots and settle time."""
    return {}, threading.Lock()


def live_watch(path: str, roots: Sequence[str], settle: float) -> LiveWatch:
    """The watch of ``path`` (already confined to ``roots``), one per server for every tab:
    each snapshot is read once, whoever looks."""
    watches, lock = _live_watches()
    key = (path, tuple(roots), settle)
    with lock:
        if key not in watches:
            real_roots = tuple(roots)
            watches[key] = LiveWatch(
                path, settle=settle, file_filter=lambda files: confine.split_files(files, real_roots)
            )
        return watches[key]


def watch_again(watch: LiveWatch) -> None:
    """Forget ``watch`` (a button's callback): the next run starts a new one on the same folder."""
    watches, lock = _live_watches()
    with lock:
        for key in [k for k, w in watches.items() if w is watch]:
            del watches[key]
    watch.close()
