"""Typed access to the page state kept in ``st.session_state`` and mirrored in the URL.

The URL carries ``?scenario=..&pg=..&rank=..&seq=..`` (and ``window=`` when a region of
a large group is open), so a copied link restores the view. Functions take the two
mappings as arguments, which keeps them testable with plain dicts.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

# Every st.session_state key the page uses. Widgets' keys are session_state keys too.
SOURCE = "source"
"""Widget: where the dumps come from (one of SOURCES)."""
SCENARIO = "scenario"
"""Widget: the sample scenario picked."""
PATH = "path"
"""Widget: the dump folder typed in the path box."""
UPLOADS = "uploads"
"""Widget: the uploaded files."""
WATCH_PATH = "watch_path"
"""Widget: the folder a running job writes snapshots into (live mode)."""
WATCH_AGAIN = "watch_again"
"""Button: forget the hung watch and start a new one on the same folder."""
LIVE_PROGRESS = "live_progress"
"""Chart: the live mode's progress per rank class."""
PG = "pg"
"""Widget: the process group shown."""
TAB = "tab"
"""Widget: the open tab (one of TABS)."""
RANKS_PER_NODE = "ranks_per_node"
"""Widget: ranks per host (0: host names from the file names or the hostfile)."""
COMPARE_PATH = "compare_path"
"""Widget: a folder of earlier dumps of the same job."""
SHOW_MOVED = "show_moved"
"""Widget: draw what moved since the earlier dumps over the heatmap."""
CLASS = "rank_class"
"""The rank class opened in the Job view (its id)."""
CLASS_GRAPH = "class_graph"
"""Chart: the wait-for graph folded by class."""
CLASS_TABLE = "class_table"
"""Dataframe: one row per rank class (selectable)."""
CELL = "cell"
"""The selected (rank, seq) of the shown group's heatmap."""
WINDOW = "window"
"""The region of the shown group's grid open at full resolution (a Window)."""
DATASET = "_dataset"
"""The key of the dump set shown by the last run."""
HYDRATED = "_hydrated"
"""True once the URL's selection has been read in this tab."""
LAST_EVENT = "_last_event"
"""Per chart key, the last chart selection acted upon (a click is acted upon once)."""
PG_SHOWN = "_pg_shown"
"""The process group the last run showed."""
UPLOAD_DIR = "_upload_dir"
"""This tab's private upload folder (an UploadFolder)."""
UPLOAD_SIGNATURE = "_upload_signature"
"""Which uploaded files the upload folder holds now."""
SHOW_ALL = "show_all"
"""Button: show every seq of a long group."""
SHOW_NEWEST = "show_newest"
"""Button: show the newest seqs of a long group (it opens on its wavefront)."""
SHOW_STORY = "show_story"
"""Button: back from the newest seqs to the wavefront and first divergence."""
BACK_TO_OVERVIEW = "back_to_overview"
"""Button: close the open region."""
CANCEL_LOAD = "cancel_load"
"""Button: cancel the load under way."""
LOAD_AGAIN = "load_again"
"""Button: start again a load that was cancelled or failed."""
DOWNLOAD_HTML = "download_html"
DOWNLOAD_PARQUET = "download_parquet"
DOWNLOAD_MARKDOWN = "download_markdown"
ARRIVALS_CHART = "arrivals"
"""Chart: arrivals at the wavefront collective."""
HEATMAP_PREFIX = "heatmap:"
"""Charts: the heatmap of one group and region, ``heatmap:<pg>:<region>`` (see heatmap_key)."""

SELECTION = (CELL, WINDOW, LAST_EVENT)
"""What a click selected: forgotten when another dump set or group is shown."""
OPEN_RANK_PREFIX = "open_rank:"
"""Buttons: open one rank of a class in the heatmap, ``open_rank:<class>:<rank>``."""
WAITS_EDGE = "waits_edge"
"""The (receiver, sender) edge selected in the Waits tab's matrix."""
WAITS_METRIC = "waits_metric"
"""Widget: the wait the Waits tab's matrix shows."""
WAITS_FINDING = "waits_finding"
"""Widget: the proxy-wait finding whose chain of waits is drawn."""
WAITS_MATRIX = "waits_matrix"
"""Chart: the Waits tab's rank x peer matrix."""
WAITS_CHAIN = "waits_chain"
"""Chart: the chain of waits from a finding's culprit."""

TABS = ("Heatmap", "Job", "Wavefront", "All groups", "Waits", "Export")
HEATMAP_TAB = TABS[0]

SOURCE_SAMPLE = "Sample scenario"
SOURCE_FOLDER = "Folder on this server"
SOURCE_UPLOAD = "Upload files"
SOURCE_WATCH = "Watch a running job"
SOURCES = (SOURCE_SAMPLE, SOURCE_FOLDER, SOURCE_UPLOAD, SOURCE_WATCH)

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


def forget_selection(state: State) -> None:
    for key in SELECTION:
        state.pop(key, None)


def on_dataset(state: State, dataset: str) -> None:
    """Forget the selection and the group when another dump set is opened (not on the first load)."""
    previous = state.get(DATASET)
    state[DATASET] = dataset
    if previous is not None and previous != dataset:
        forget_selection(state)
        state.pop(PG, None)
        state.pop(CLASS, None)
        state.pop(WAITS_EDGE, None)
        state.pop(WAITS_METRIC, None)


def on_group(state: State, pg_key: str) -> None:
    """Forget the selection when another group is shown: its cells and regions mean nothing there."""
    previous = state.get(PG_SHOWN)
    if previous is not None and previous != pg_key:
        forget_selection(state)
    state[PG_SHOWN] = pg_key


def open_in_heatmap(state: State, pg_key: str, rank: int, seq: int) -> None:
    """Show ``rank`` at ``seq`` of ``pg_key`` in the heatmap (a button's callback: before the widgets)."""
    state[PG] = pg_key
    state[PG_SHOWN] = pg_key
    forget_selection(state)
    set_cell(state, rank, seq)
    state[TAB] = HEATMAP_TAB


def heatmap_key(pg_key: str, window: Window | None) -> str:
    """The heatmap chart's key: one per group and region, so a new region starts with no stale selection."""
    return f"{HEATMAP_PREFIX}{pg_key}:{'all' if window is None else window.to_param()}"


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
