"""The one-call entry point: a path in, a Report out."""

from __future__ import annotations

from pathlib import Path

from .report.build import analyze_dumps
from .report.report import Report
from .tables.load import load
from .types import Limits


def analyze(
    path: str | Path,
    pattern: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
    use_cache: bool = True,
) -> Report:
    """Load every dump under ``path`` and return the verdict with its tables.

    An unchanged dump set is reopened from a Parquet cache unless ``use_cache`` is False.
    """
    dumps = load(path, pattern=pattern, workers=workers, progress=progress, limits=limits, use_cache=use_cache)
    return analyze_dumps(dumps)
