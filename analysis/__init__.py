"""Flight Deck analysis: from a folder of Flight Recorder dumps to a root-cause verdict."""

from __future__ import annotations

from .api import analyze
from .diagnose import Analysis, analyze_dumps
from .load import DumpSet, load
from .nvrx_compat import AttributionState, CollectiveAnalyzer
from .parse import Limits
from .report import Report, Wavefront, render_text

__all__ = [
    "Analysis",
    "AttributionState",
    "CollectiveAnalyzer",
    "DumpSet",
    "Limits",
    "Report",
    "Wavefront",
    "analyze",
    "analyze_dumps",
    "load",
    "render_text",
]
