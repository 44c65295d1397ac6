"""The one-call entry point: a path in, a Report out."""

from __future__ import annotations

from pathlib import Path

from .diagnose import analyze_dumps
from .load import load
from .parse import Limits
from .report import Report


def analyze(
    path: str | Path,
    pattern: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
) -> Report:
    """Load every dump under ``path`` and return the verdict with its tables."""
    return analyze_dumps(load(path, pattern=pattern, workers=workers, progress=progress, limits=limits))
