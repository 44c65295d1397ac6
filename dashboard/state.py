"""Typed access to the page state kept in ``st.session_state`` and mirrored in the URL.

The URL carries ``?scenario=..&pg=..&rank=..&seq=..`` (and ``window=`` when a region of
a large group is open), so a copied link restores the view. Functions take the two
mappings as arguments, which keeps them testable with plain dicts.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

# session_state keys
SOURCE = "source"
SCENARIO = "scenario"
PATH = "path"
PG = "pg"
CELL = "cell"
WINDOW = "window"
DATASET = "_dataset"
HYDRATED = "_hydrated"
LAST_EVENT = "_last_event"
UPLOAD_DIR = "_upload_dir"
TAB = "tab"

TABS = ("Heatmap", "Wavefront", "All groups", "Waits", "Export")

SOURCE_SAMPLE = "Sample scenario"
SOURCE_FOLDER = "Folder on this server"
SOURCE_UPLOAD = "Upload files"
SOURCES = (SOURCE_SAMPLE, SOURCE_FOLDER, SOURCE_UPLOAD)

State = MutableMapping[str, Any]


@dataclass(frozen=True, slots=True)
class Window:
    """A region of one group's grid drawn at full resolution: rows ``[r0, r1)``, seqs ``[s0, s1]``."""

    pg_key: str
    r0: int
    r1: int
    s0: int
    s1: int

    def to_param(self) -> str:
        return f"{self.r0}:{self.r1}:{self.s0}:{self.s1}"

    @classmethod
    def from_param(cls, pg_key: str, text: str) -> Window | None:
        try:
            r0, r1, s0, s1 = (int(x) for x in text.split(":"))
        except ValueError:
            return None
        if r1 <= r0 or s1 < s0 or r0 < 0:
            return None
        return cls(pg_key, r0, r1, s0, s1)


def _int(text: Any) -> int | None:
    try:
        return int(str(text))
    except (TypeError, ValueError):
        return None


def hydrate(state: State, params: MutableMapping[str, Any]) -> None:
    """On the first run in a browser tab, take the selection from the URL."""
    if state.get(HYDRATED):
        return
    state[HYDRATED] = True
    scenario = params.get("scenario")
    if scenario:
        state[SCENARIO] = str(scenario)
        state[SOURCE] = SOURCE_SAMPLE
    pg = params.get("pg")
    if pg:
        state[PG] = str(pg)
        rank, seq = _int(params.get("rank")), _int(params.get("seq"))
        if rank is not None and seq is not None:
            state[CELL] = (rank, seq)
        if params.get("window"):
            window = Window.from_param(str(pg), str(params["window"]))
            if window:
                state[WINDOW] = window


def on_dataset(state: State, dataset: str) -> None:
    """Forget the selection when another dump set is opened (not on the first load)."""
    previous = state.get(DATASET)
    state[DATASET] = dataset
    if previous is not None and previous != dataset:
        for key in (CELL, WINDOW, LAST_EVENT):
            state.pop(key, None)
        state.pop(PG, None)


def get_cell(state: State) -> tuple[int, int] | None:
    cell = state.get(CELL)
    return (int(cell[0]), int(cell[1])) if cell else None


def set_cell(state: State, rank: int, seq: int) -> None:
    state[CELL] = (int(rank), int(seq))


def get_window(state: State, pg_key: str) -> Window | None:
    window = state.get(WINDOW)
    return window if isinstance(window, Window) and window.pg_key == pg_key else None


def set_window(state: State, window: Window | None) -> None:
    if window is None:
        state.pop(WINDOW, None)
    else:
        state[WINDOW] = window


def write_query(params: MutableMapping[str, Any], state: State) -> None:
    """Mirror the selection into the URL; only keys that changed are written."""
    want: dict[str, str] = {}
    if state.get(SOURCE, SOURCE_SAMPLE) == SOURCE_SAMPLE and state.get(SCENARIO):
        want["scenario"] = str(state[SCENARIO])
    pg = state.get(PG)
    if pg:
        want["pg"] = str(pg)
        cell = get_cell(state)
        if cell:
            want["rank"], want["seq"] = str(cell[0]), str(cell[1])
        window = get_window(state, str(pg))
        if window:
            want["window"] = window.to_param()
    for key in ("scenario", "pg", "rank", "seq", "window"):
        if key in want:
            if params.get(key) != want[key]:
                params[key] = want[key]
        elif key in params:
            del params[key]
