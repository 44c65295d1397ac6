"""Cached loading and per-group derived data.

Everything is cached with ``st.cache_resource`` keyed on short strings (the folder and
a fingerprint of its file names, sizes and mtimes), never on big objects, so a rerun
after a click costs a dictionary lookup. Cached objects are shared: never mutate them.
The analysis itself runs in a load job (``loadjob``) that the page polls; the job,
kept in a registry here, holds the report.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from analysis import analyze_dumps
from analysis.ingest.proxy_ops import read_proxy_ops
from analysis.live.follow import Judged
from analysis.report.export import tables_zip
from analysis.report.proxy import with_proxy_waits
from analysis.report.report import Report
from analysis.report.triage import with_hosts
from analysis.tables.load import load as load_dumps
from analysis.tables.mapstep import MapEngine
from analysis.types import DumpSet, HostMap, InputError
from analysis.views import drilldown as views
from analysis.views import waits as waits_views
from analysis.views.grid import Grid, group_grid, moved_grid
from analysis.views.heatmap import HeatmapView, build_view, hover_labels, view_of
from analysis.views.html import build_html

from . import confine
from .args import parse_args
from .loadjob import JobRegistry, LoadJob
from .proxy_source import proxy_key
from .sources import fingerprint

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Loaded:
    """One analysed dump set and the key its derived data is cached under."""

    path: str
    key: str
    report: Report
    seconds: float


def load_confined(
    path: str,
    roots: Sequence[str],
    use_cache: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> DumpSet:
    """The library's ``load``, reading only files whose real location is under ``roots``.

    Every discovered file is checked (``confine.split_files``) before it is opened, so a
    symlink inside an allowed folder that points elsewhere becomes a per-file error.
    ``use_cache=False`` keeps the tables out of the on-disk Parquet cache (uploads).
    ``on_progress`` and ``cancel``: see the library's ``load``.
    """
    return load_dumps(
        path,
        use_cache=use_cache,
        file_filter=lambda files: confine.split_files(files, roots),
        engine=_engine(),
        on_progress=on_progress,
        cancel=cancel,
    )


def _engine() -> MapEngine | None:
    """``--dask ADDRESS`` (or ``FLIGHTDECK_DASK``): the map step on that Dask cluster; with
    ``local[:N]``, one cluster for the server process, started on first use and kept."""
    address = parse_args(sys.argv[1:]).dask
    if address is None:
        return None
    from analysis.tables.dask_engine import DaskEngine  # Dask is imported only when asked for

    return DaskEngine(address, keep_local_cluster=True)


def _analyze(
    path: str,
    roots: tuple[str, ...],
    use_cache: bool,
    key: str,
    earlier: str | None,
    proxy: str | None,
    job: LoadJob[Loaded],
) -> Loaded:
    """The work of a load job: read (reporting files read, stopping when cancelled), then analyse."""
    t0 = time.perf_counter()
    before = None
    if earlier is not None:
        job.stage("Reading the earlier dumps", reading=True)
        before = _earlier(earlier, roots, use_cache, job)
    job.stage("Reading the dumps", reading=True)
    dumps = load_confined(path, roots, use_cache, on_progress=job.files, cancel=job.cancel_event)
    job.stage(f"Analysing {len(dumps.ranks)} ranks" if dumps.ranks else "Analysing")
    report = analyze_dumps(dumps, earlier=before)
    if proxy is not None:
        job.stage("Reading the proxy-op waits")
        report = with_proxy_waits(report, read_proxy_ops(proxy))
    took = time.perf_counter() - t0
    log.debug("analysed %s in %.2fs", path, took)
    return Loaded(path, key, report, took)


def _earlier(path: str, roots: tuple[str, ...], use_cache: bool, job: LoadJob[Loaded]) -> DumpSet:
    dumps = load_confined(path, roots, use_cache, on_progress=job.files, cancel=job.cancel_event)
    if not dumps.ranks:
        why = dumps.file_errors[0].error if dumps.file_errors else "no dump could be read"
        raise InputError(f"the earlier dumps {path}: {why}")
    return dumps


@st.cache_resource(show_spinner=False)
def _jobs() -> JobRegistry[Loaded]:
    """Every load job of this server, one per dump set and options (shared by all sessions)."""
    return JobRegistry(keep=8)


def load_job(
    path: str, roots: Sequence[str], use_cache: bool = True, earlier: str | None = None, proxy: str | None = None
) -> LoadJob[Loaded]:
    """The job analysing ``path`` (already confined to ``roots``), started unless one for
    this version of its files is running or done; compared with the ``earlier`` dumps of
    the job (also confined) when given; with ``proxy``, the NCCL proxy-op waits too."""
    key = f"{path}@{fingerprint(path)}"
    if earlier is not None:
        key += f"|{earlier}@{fingerprint(earlier)}"
    if proxy is not None:
        key += f"+{proxy_key(proxy)}"
    work = functools.partial(_analyze, path, tuple(roots), use_cache, key, earlier, proxy)
    return _jobs().job(f"{key}|cache={use_cache}|roots={tuple(roots)}", work)


def load_again(job: LoadJob[Loaded]) -> None:
    """Forget ``job`` (ended, cancelled or failed): the next run starts a fresh one."""
    _jobs().forget(job.key)


def load(
    path: str, roots: Sequence[str], use_cache: bool = True, earlier: str | None = None, proxy: str | None = None
) -> Loaded:
    """:func:`load_job`'s result, waited for in this thread (raises what the load raised)."""
    job = load_job(path, roots, use_cache, earlier, proxy)
    job.wait()
    return job.result()


@st.cache_resource(max_entries=16, show_spinner=False)
def _hosted(key: str, hosts_key: str, _report: Report, _hosts: HostMap | None) -> Report:
    return with_hosts(_report, _hosts)


def hosted(loaded: Loaded, hosts: HostMap | None) -> Loaded:
    """The same analysis with hosts from ``hosts`` (none: host names in the file names)."""
    hosts_key = "names" if hosts is None else f"{hosts.source}:{hosts.ranks_per_node}:{len(hosts.listed)}"
    return Loaded(loaded.path, loaded.key, _hosted(loaded.key, hosts_key, loaded.report, hosts), loaded.seconds)


@st.cache_resource(max_entries=64, show_spinner=False)
def _grid(key: str, pg_key: str, _report: Report) -> Grid:
    return group_grid(_report.analysis, pg_key)


def grid(loaded: Loaded, pg_key: str) -> Grid:
    return _grid(loaded.key, pg_key, loaded.report)


@st.cache_resource(max_entries=64, show_spinner=False)
def _group_cells(key: str, pg_key: str, _report: Report) -> pd.DataFrame:
    return views.group_cells(_report.analysis, pg_key)


@st.cache_resource(max_entries=128, show_spinner=False)
def _view_and_hover(
    key: str, pg_key: str, window: tuple[int, int, int, int] | None, _report: Report, _grid: Grid
) -> tuple[HeatmapView, np.ndarray | None]:
    view = build_view(_grid, window)
    hover = None if view.aggregated else hover_labels(view, _group_cells(key, pg_key, _report))
    return view, hover


def heatmap_view(
    loaded: Loaded, pg_key: str, window: tuple[int, int, int, int] | None
) -> tuple[HeatmapView, np.ndarray | None]:
    """The (possibly aggregated) view of a group's grid, with hover labels for raw views."""
    return _view_and_hover(loaded.key, pg_key, window, loaded.report, grid(loaded, pg_key))


@st.cache_resource(max_entries=8, show_spinner=False)
def _relevance(key: str, _report: Report) -> list[str]:
    wave = _report.wavefront.pg_key if _report.wavefront else None
    return views.relevance_order(_report.analysis, wave)


def relevance_order(loaded: Loaded) -> list[str]:
    return _relevance(loaded.key, loaded.report)


@st.cache_resource(max_entries=4, show_spinner="Building the report…")
def _html(key: str, title: str, _report: Report) -> bytes:
    return build_html(_report, title=title).encode("utf-8")


def html_bytes(loaded: Loaded, title: str) -> bytes:
    return _html(f"{loaded.key}|{loaded.report.host_map}", title, loaded.report)


@st.cache_resource(max_entries=4, show_spinner="Packing the tables…")
def _parquet(key: str, _report: Report) -> bytes:
    return tables_zip(_report)


def parquet_zip(loaded: Loaded) -> bytes:
    return _parquet(loaded.key, loaded.report)


@st.cache_resource(max_entries=4, show_spinner="Drawing the figures…")
def _markdown(key: str, title: str, _report: Report) -> bytes:
    from analysis.views.postmortem import markdown_zip  # matplotlib only when the download is asked for

    return markdown_zip(_report, title=title)


def markdown_zip(loaded: Loaded, title: str) -> bytes:
    """``flightdeck-report.md`` and its figures (PNG and SVG), as one zip."""
    return _markdown(f"{loaded.key}|{loaded.report.host_map}", title, loaded.report)


@st.cache_resource(max_entries=64, show_spinner=False)
def _moved(key: str, pg_key: str, _report: Report, _grid: Grid) -> np.ndarray | None:
    return moved_grid(_grid, _report.comparison)


def moved(loaded: Loaded, pg_key: str, view: HeatmapView) -> np.ndarray | None:
    """1 where the view's cells were completed since the earlier dumps (None without a comparison)."""
    full = _moved(loaded.key, pg_key, loaded.report, grid(loaded, pg_key))
    return None if full is None else view_of(full, grid(loaded, pg_key), view)


@st.cache_resource(max_entries=8, show_spinner=False)
def _dump_ns(key: str, _report: Report) -> int | None:
    return views.dump_ns(_report.analysis)


def dump_ns(loaded: Loaded) -> int | None:
    """The dumps' newest entry creation time: what "N s before the dump" counts back from."""
    return _dump_ns(loaded.key, loaded.report)


@st.cache_resource(max_entries=8, show_spinner=False)
def _marks(key: str, _report: Report) -> dict[int, str]:
    waits = _report.proxy_waits.waits if _report.proxy_waits is not None else None
    return waits_views.rank_marks(_report.health, waits)


def rank_marks(loaded: Loaded) -> dict[int, str]:
    """Heatmap row marks: failed health checks, proxy-wait culprits."""
    return _marks(loaded.key, loaded.report)


def live_loaded(judged: Judged) -> Loaded:
    """A watched snapshot as a dump set the page's components draw (its report compares it
    with the snapshot before)."""
    snap = judged.snapshot
    return Loaded(str(snap.path), f"live:{snap.path}@{snap.name}", judged.report, judged.line.seconds)
