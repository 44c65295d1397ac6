"""The sidebar: where the dumps come from, and which process group to show."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from .. import state
from ..sources import Args, default_scenario, sample_scenarios, write_uploads
from ..tables import group_label


@dataclass(frozen=True, slots=True)
class Source:
    """The dump set to open: a label for the page and the path to analyse."""

    label: str
    path: str
    note: str | None = None


def dump_source(args: Args) -> Source | None:
    """Draw the source pickers; the chosen dump set, or None (with a message) when there is none yet."""
    ss = st.session_state
    sb = st.sidebar
    sb.header("Dumps")
    sample_root = args.samples
    scenarios = sample_scenarios(sample_root)
    if state.SOURCE not in ss:
        ss[state.SOURCE] = state.SOURCE_FOLDER if args.dumps or not scenarios else state.SOURCE_SAMPLE
    mode = sb.radio("Open", state.SOURCES, key=state.SOURCE, label_visibility="collapsed")

    if mode == state.SOURCE_SAMPLE:
        if not scenarios:
            sb.warning("No sample scenarios found next to the dashboard (sample_dumps/).")
            return None
        if ss.get(state.SCENARIO) not in scenarios:
            ss[state.SCENARIO] = default_scenario(scenarios)
        name = sb.selectbox("Sample scenario", scenarios, key=state.SCENARIO)
        return Source(f"sample scenario {name}", str(sample_root / name), _scenario_note(sample_root / name))

    if mode == state.SOURCE_FOLDER:
        if state.PATH not in ss:
            ss[state.PATH] = args.dumps or ""
        path = sb.text_input(
            "Dump folder on this server", key=state.PATH, help="A folder of per-rank dumps, a glob, or a file prefix."
        ).strip()
        if not path:
            st.info("Enter the folder that holds the per-rank Flight Recorder dumps in the sidebar.")
            return None
        return Source(path, path)

    uploads = sb.file_uploader(
        "Dump files (one per rank)",
        accept_multiple_files=True,
        key="uploads",
        help="For a server that cannot see your dumps. Files stay in a private folder for this browser tab.",
    )
    if not uploads:
        st.info("Upload the per-rank dump files (rank_0, rank_1, …) in the sidebar.")
        return None
    folder = ss.get(state.UPLOAD_DIR)
    if not folder or not os.path.isdir(folder):
        folder = tempfile.mkdtemp(prefix="flightdeck-upload-")
        ss[state.UPLOAD_DIR] = folder
    signature = tuple((f.name, f.size) for f in uploads)
    if ss.get("_upload_signature") != signature:
        write_uploads(Path(folder), [(f.name, f.getvalue()) for f in uploads])
        ss["_upload_signature"] = signature
    return Source(f"{len(uploads)} uploaded files", folder)


def _scenario_note(folder: Path) -> str | None:
    """What the sample generator says it injected, if it left a scenario.json."""
    try:
        info = json.loads((folder / "scenario.json").read_text())
    except (OSError, ValueError):
        return None
    fault = info.get("fault") if isinstance(info, dict) else None
    return str(fault) if fault else None


def group_picker(labels: dict[str, str], order: list[str]) -> str:
    """The process-group picker, most relevant group first; returns the chosen group key."""
    ss = st.session_state
    if ss.get(state.PG) not in order:
        ss[state.PG] = order[0]
    previous = ss.get("_pg_shown")
    pg = st.sidebar.selectbox(
        "Process group",
        order,
        key=state.PG,
        format_func=lambda k: labels.get(k, k),
        help="Ordered by relevance: the wavefront group first, then groups with problems.",
    )
    if previous is not None and previous != pg:
        # Another group: its cells and regions mean nothing here.
        for key in (state.CELL, state.WINDOW, state.LAST_EVENT):
            ss.pop(key, None)
    ss["_pg_shown"] = pg
    return pg


def group_labels(report) -> dict[str, str]:
    groups = report.analysis.groups.groups if report.analysis is not None else {}
    return {k: group_label(g.name, g.desc, len(g.ranks)) for k, g in groups.items()}
