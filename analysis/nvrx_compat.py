"""A drop-in for code written against NVIDIA nvidia-resiliency-ext's ``CollectiveAnalyzer``.

Their analyzer takes an ``argparse.Namespace`` (``fr_path``, ``pattern``, ``verbose``...)
and ``run_sync`` returns ``(result, AttributionState)``; this one does the same on top
of :func:`analysis.analyze`, with ``result`` as the report dict plus their
``"hanging ranks: [...]"`` line for scripts that parse it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from .api import analyze
from .report.health_text import render_health
from .report.report import Report
from .types import AttributionState


def _get(config: Any, name: str, default: Any = None) -> Any:
    if isinstance(config, Mapping):
        return config.get(name, default)
    return getattr(config, name, default)


class CollectiveAnalyzer:
    """``CollectiveAnalyzer(args).run_sync(args) -> (result, AttributionState)``."""

    def __init__(self, config: Any = None) -> None:
        self.config = config
        self.report: Report | None = None

    def run_sync(self, config: Any = None) -> tuple[dict[str, Any], AttributionState]:
        config = config if config is not None else self.config
        path = _get(config, "fr_path") or _get(config, "path")
        if not path:
            raise ValueError("CollectiveAnalyzer needs fr_path")
        pattern = _get(config, "pattern")
        if pattern in ("*", "_dump_*"):
            pattern = None if pattern == "*" else pattern
        self.report = analyze(path, pattern=pattern)
        result = self.report.to_dict()
        result["hanging_ranks"] = f"hanging ranks: {self.report.suspect_ranks}"
        if _get(config, "health_check"):  # their -c: the node health table, on stderr as theirs
            print(render_health(self.report.health, bool(_get(config, "verbose"))), file=sys.stderr)
        return result, AttributionState(self.report.attribution_state)
