"""The sidebar: where the dumps come from, and where ranks ran."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from analysis.ingest.hosts import read_hostfile
from analysis.types import HostMap, InputError

from .. import confine, state
from ..args import Args
from ..sources import UPLOADS, check_uploads, default_scenario, sample_scenarios, write_uploads
from .text import md_escape


@dataclass(frozen=True, slots=True)
class Source:
    """The dump set to open: a label for the page and the path to analyse."""

    label: str
    path: str
    roots: tuple[str, ...]
    """Real folders every file read must lie under."""
    note: str | None = None
    use_cache: bool = True
    """False for uploads: their tables never reach the on-disk cache."""
    earlier: str | None = None
    """Earlier dumps of the same job to compare with (real path, under ``roots``)."""
    live: bool = False
    """``path`` is a folder a running job writes snapshots into: watched, not loaded once."""


def dump_source(args: Args) -> Source | None:
    """Draw the source pickers; the chosen dump set, or None (with a message) when there is none yet."""
    ss = st.session_state
    sb = st.sidebar
    sb.header("Dumps")
    sample_root = args.samples
    scenarios = sample_scenarios(sample_root)
    if state.SOURCE not in ss:
        ss[state.SOURCE] = _first_mode(args, bool(scenarios))
    for key in (state.SCENARIO, state.PATH, state.WATCH_PATH):  # keep each mode's choice while another mode is shown
        if key in ss:
            ss[key] = ss[key]
    mode = sb.radio("Open", state.SOURCES, key=state.SOURCE, label_visibility="collapsed")

    if mode == state.SOURCE_SAMPLE:
        if not scenarios:
            sb.warning("No sample scenarios found next to the dashboard (sample_dumps/).")
            return None
        if ss.get(state.SCENARIO) not in scenarios:
            ss[state.SCENARIO] = default_scenario(scenarios)
        name = sb.selectbox("Sample scenario", scenarios, key=state.SCENARIO)
        folder = sample_root / name
        earlier = sample_root / f"{name}{EARLIER_SUFFIX}"
        return Source(
            f"sample scenario {name}",
            str(folder),
            confine.resolve_roots([sample_root]),
            _scenario_note(folder),
            earlier=str(earlier) if earlier.is_dir() else None,
        )

    if mode == state.SOURCE_FOLDER:
        if state.PATH not in ss:
            ss[state.PATH] = args.dumps or ""
        path = sb.text_input(
            "Dump folder on this server", key=state.PATH, help="A folder of per-rank dumps, a glob, or a file prefix."
        ).strip()
        if not path:
            st.info("Enter the folder that holds the per-rank Flight Recorder dumps in the sidebar.")
            return None
        roots = args.roots()
        real = confine.confine(path, roots)
        if real is None:
            # Same words whether the path exists or not, and nothing read from it.
            st.error(confine.PATH_REFUSED)
            return None
        return Source(path, real, roots, earlier=_earlier_folder(args, roots))

    if mode == state.SOURCE_WATCH:
        return _watched(args)
    return _uploaded(args)


def _first_mode(args: Args, has_samples: bool) -> str:
    if args.watch:
        return state.SOURCE_WATCH
    return state.SOURCE_FOLDER if args.dumps or not has_samples else state.SOURCE_SAMPLE


def _watched(args: Args) -> Source | None:
    """Live mode: the folder a running job writes snapshots into (confined like the path box)."""
    ss = st.session_state
    if state.WATCH_PATH not in ss:
        ss[state.WATCH_PATH] = args.watch or ""
    path = st.sidebar.text_input(
        "Folder the job writes snapshots into",
        key=state.WATCH_PATH,
        help="One subfolder per snapshot (analysis.live.dump_every), or dump files rewritten in place.",
    ).strip()
    if not path:
        st.info("Enter the folder a running job writes its Flight Recorder snapshots into in the sidebar.")
        return None
    roots = args.roots()
    real = confine.confine(path, roots)
    if real is None:
        st.error(confine.PATH_REFUSED)
        return None
    return Source(f"watching {path}", real, roots, live=True)


#: A sample scenario ``X`` whose sibling ``X.earlier`` exists is compared with it.
EARLIER_SUFFIX = ".earlier"


def _earlier_folder(args: Args, roots: tuple[str, ...]) -> str | None:
    """The folder of earlier dumps to compare with, if one is given (confined like the path box)."""
    ss = st.session_state
    if state.COMPARE_PATH not in ss:
        ss[state.COMPARE_PATH] = args.compare or ""
    path = st.sidebar.text_input(
        "Earlier dumps of this job (optional)",
        key=state.COMPARE_PATH,
        help="A folder of dumps taken earlier: the page then shows who moved in between (dead or slow).",
    ).strip()
    if not path:
        return None
    real = confine.confine(path, roots)
    if real is None:
        st.sidebar.error(confine.PATH_REFUSED)
    return real


def host_map(args: Args) -> HostMap | None:
    """Where ranks ran: the hostfile given at start, else N ranks per node (0: the file names)."""
    if args.hostfile:
        try:
            return _hostfile(args.hostfile)
        except InputError as exc:
            st.sidebar.error(md_escape(str(exc)))
    ss = st.session_state
    if state.RANKS_PER_NODE not in ss:
        ss[state.RANKS_PER_NODE] = args.ranks_per_node
    n = st.sidebar.number_input(
        "Ranks per node",
        min_value=0,
        step=1,
        key=state.RANKS_PER_NODE,
        help="Ranks r // N share a host. 0: host names from the dump file names, where they carry one.",
    )
    return HostMap(source=f"{int(n)} ranks per node", ranks_per_node=int(n)) if n else None


@st.cache_resource(max_entries=4, show_spinner=False)
def _hostfile(path: str) -> HostMap:
    return read_hostfile(path)


def _uploaded(args: Args) -> Source | None:
    """Uploaded files, vetted and copied into this tab's private folder."""
    ss = st.session_state
    uploads = st.sidebar.file_uploader(
        "Dump files (one per rank)",
        accept_multiple_files=True,
        key=state.UPLOADS,
        max_upload_size=args.max_upload_mb,
        help=(
            f"For a server that cannot see your dumps. Up to {args.max_upload_mb} MB a file and "
            f"{args.max_upload_total_mb} MB in all; they stay in a private folder for this browser tab "
            "and are deleted when it closes."
        ),
    )
    if not uploads:
        st.info("Upload the per-rank dump files (rank_0, rank_1, …) in the sidebar.")
        return None
    check = check_uploads([(f.name, f.size) for f in uploads], args.max_upload_mb, args.max_upload_total_mb)
    for name, reason in check.refused:
        st.sidebar.warning(md_escape(f"Not used: {name}: {reason}."))
    if check.too_big:
        st.error(f"The uploaded files exceed {args.max_upload_total_mb} MB in all; upload fewer ranks.")
        return None
    if not check.accepted:
        st.error("None of the uploaded files has a dump file name (rank_0, _dump_0, nccl_trace_rank_0, …).")
        return None
    folder = ss[state.UPLOAD_DIR] = UPLOADS.folder(ss.get(state.UPLOAD_DIR))
    signature = tuple((uploads[i].file_id, name) for i, name in check.accepted)
    if ss.get(state.UPLOAD_SIGNATURE) != signature or not any(Path(folder.path).iterdir()):
        write_uploads(Path(folder.path), [(name, uploads[i].getvalue()) for i, name in check.accepted])
        ss[state.UPLOAD_SIGNATURE] = signature
    return Source(
        f"{len(check.accepted)} uploaded files", folder.path, confine.resolve_roots([folder.path]), use_cache=False
    )


def _scenario_note(folder: Path) -> str | None:
    """What the sample generator says it injected, if it left a scenario.json."""
    try:
        info = json.loads((folder / "scenario.json").read_text())
    except (OSError, ValueError):
        return None
    fault = info.get("fault") if isinstance(info, dict) else None
    return str(fault) if fault else None
