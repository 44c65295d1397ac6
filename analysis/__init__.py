"""Flight Deck analysis: from a folder of Flight Recorder dumps to a root-cause verdict."""

from __future__ import annotations

from pathlib import Path

from .diagnose import Analysis, analyze_dumps
from .load import DumpSet, load
from .report import Report, Wavefront, render_text

__all__ = ["Analysis", "DumpSet", "Report", "Wavefront", "analyze", "analyze_dumps", "load", "render_text"]


def analyze(path: str | Path, pattern: str | None = None, workers: int | None = None, progress: bool = False) -> Report:
    """Load every dump under ``path`` and return the verdict with its tables."""
    return analyze_dumps(load(path, pattern=pattern, workers=workers, progress=progress))
