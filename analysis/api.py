"""The one-call entry point: a path in, a Report out."""

from __future__ import annotations

from pathlib import Path

from .ingest.proxy_ops import read_proxy_ops
from .report.build import analyze_dumps
from .report.proxy import with_proxy_waits
from .report.report import Report
from .tables.combine import TablesBuilder
from .tables.load import load, to_dumpset
from .types import Limits


def analyze(
    path: str | Path,
    pattern: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
    use_cache: bool = True,
    proxy_ops: str | Path | None = None,
) -> Report:
    """Load every dump under ``path`` and return the verdict with its tables.

    An unchanged dump set is reopened from a Parquet cache unless ``use_cache`` is False.
    ``proxy_ops`` (a file or folder of NCCL proxy-op waits) adds ``report.proxy_waits``.
    """
    dumps = load(path, pattern=pattern, workers=workers, progress=progress, limits=limits, use_cache=use_cache)
    report = analyze_dumps(dumps)
    return with_proxy_waits(report, read_proxy_ops(proxy_ops)) if proxy_ops is not None else report


def analyze_proxy_ops(path: str | Path) -> Report:
    """The proxy-op waits under ``path`` alone, as a Report with no dump loaded."""
    return with_proxy_waits(analyze_dumps(to_dumpset(TablesBuilder().finish())), read_proxy_ops(path))
