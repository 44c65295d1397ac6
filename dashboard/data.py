"""Cached loading and per-group derived data.

Everything is cached with ``st.cache_resource`` keyed on short strings (the folder and
a fingerprint of its file names, sizes and mtimes), never on big objects, so a rerun
after a click costs a dictionary lookup. Cached objects are shared: never mutate them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from analysis import analyze_dumps
from analysis import schema as s
from analysis.ingest.proxy_ops import read_proxy_ops
from analysis.report.proxy import with_proxy_waits
from analysis.report.report import Report
from analysis.tables.load import load as load_dumps
from analysis.types import DumpSet
from analysis.views import drilldown as views
from analysis.views import waits as waits_views
from analysis.views.grid import Grid, group_grid

from . import confine, figures, html_report
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


def load_confined(path: str, roots: Sequence[str], use_cache: bool = True) -> DumpSet:
    """The library's ``load``, reading only files whose real location is under ``roots``.

    Every discovered file is checked (``confine.split_files``) before it is opened, so a
    symlink inside an allowed folder that points elsewhere becomes a per-file error.
    ``use_cache=False`` keeps the tables out of the on-disk Parquet cache (uploads).
    """
    return load_dumps(path, use_cache=use_cache, file_filter=lambda files: confine.split_files(files, roots))


@st.cache_resource(max_entries=8, show_spinner="Reading and analysing the dumps…")
def _analyze(path: str, roots: tuple[str, ...], use_cache: bool, key: str, proxy: str | None) -> tuple[Report, float]:
    t0 = time.perf_counter()
    report = analyze_dumps(load_confined(path, roots, use_cache))
    if proxy is not None:
        report = with_proxy_waits(report, read_proxy_ops(proxy))
    took = time.perf_counter() - t0
    log.debug("analysed %s in %.2fs", path, took)
    return report, took


def load(path: str, roots: Sequence[str], use_cache: bool = True, proxy: str | None = None) -> Loaded:
    """Analyse ``path`` (already confined to ``roots``) once per version of its files; with
    ``proxy``, the NCCL proxy-op waits there too."""
    key = f"{path}@{fingerprint(path)}" + (f"+{proxy_key(proxy)}" if proxy else "")
    report, took = _analyze(path, tuple(roots), use_cache, key, proxy)
    return Loaded(path, key, report, took)


@st.cache_resource(max_entries=64, show_spinner=False)
def _grid(key: str, pg_key: str, _report: Report) -> Grid:
    return group_grid(_report.analysis, pg_key)


def grid(loaded: Loaded, pg_key: str) -> Grid:
    return _grid(loaded.key, pg_key, loaded.report)


@st.cache_resource(max_entries=64, show_spinner=False)
def _group_cells(key: str, pg_key: str, _report: Report) -> pd.DataFrame:
    c = _report.analysis.cells
    return c.loc[c[s.PG_KEY] == pg_key, [s.RANK, s.SEQ, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]].reset_index(drop=True)


@st.cache_resource(max_entries=128, show_spinner=False)
def _view_and_hover(
    key: str, pg_key: str, window: tuple[int, int, int, int] | None, _report: Report, _grid: Grid
) -> tuple[figures.HeatmapView, np.ndarray | None]:
    view = figures.build_view(_grid, window)
    hover = None if view.aggregated else figures.hover_labels(view, _group_cells(key, pg_key, _report))
    return view, hover


def heatmap_view(
    loaded: Loaded, pg_key: str, window: tuple[int, int, int, int] | None
) -> tuple[figures.HeatmapView, np.ndarray | None]:
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
    return html_report.build_html(_report, title=title).encode("utf-8")


def html_bytes(loaded: Loaded, title: str) -> bytes:
    return _html(loaded.key, title, loaded.report)


@st.cache_resource(max_entries=4, show_spinner="Packing the tables…")
def _parquet(key: str, _report: Report) -> bytes:
    return html_report.tables_zip(_report)


def parquet_zip(loaded: Loaded) -> bytes:
    return _parquet(loaded.key, loaded.report)


@st.cache_resource(max_entries=8, show_spinner=False)
def _marks(key: str, _report: Report) -> dict[int, str]:
    waits = _report.proxy_waits.waits if _report.proxy_waits is not None else None
    return waits_views.rank_marks(_report.health, waits)


def rank_marks(loaded: Loaded) -> dict[int, str]:
    """Heatmap row marks: failed health checks, proxy-wait culprits."""
    return _marks(loaded.key, loaded.report)
