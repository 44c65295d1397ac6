"""Flight Deck analysis: from a folder of Flight Recorder dumps to a root-cause verdict.

Data flows one way through the subpackages, each a layer that imports only from the
layers below it:

    ingest     find the files, decode each safely, check it into per-file tables
    tables     map over the files, reduce into one narrow set of tables (cached)
    model      process groups, collective cells, progress, program order
    diagnosis  mismatches, the wait-for graph, the hang explained, the verdict
    report     the verdict as fields, JSON, text and Parquet
    views      what the dashboard and the HTML export query
    live       a running job watched snapshot by snapshot (above ``api``); ``dump_every``
    service    the operations as an MCP server and a read-only HTTP API (``flightdeck mcp``, ``serve``;
               above ``live``: ``watch_status`` is its line)

``types`` and ``schema`` (shared types and column names) sit below all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The names below load on first use (PEP 562), so a worker process that imports only the
# reader (``analysis.tables.pool``) does not pay for pandas and the diagnosis.
_HOME = {
    "analyze": "api",
    "analyze_proxy_ops": "api",
    "Analysis": "diagnosis.analysis",
    "discover": "ingest.discover",
    "read_hostfile": "ingest.hosts",
    "CollectiveAnalyzer": "nvrx_compat",
    "analyze_dumps": "api",
    "Report": "report.report",
    "Wavefront": "report.report",
    "render_text": "report.text",
    "combine": "tables.load",
    "combine_results": "tables.load",
    "load": "tables.load",
    "load_one": "tables.load",
    "read_file_tables": "tables.parts",
    "write_file_tables": "tables.parts",
    "AttributionState": "types",
    "DumpSet": "types",
    "FailureClass": "types",
    "FileError": "types",
    "HostMap": "types",
    "InputError": "types",
    "Limits": "types",
    "Verdict": "types",
}


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .api import analyze, analyze_dumps, analyze_proxy_ops
    from .diagnosis.analysis import Analysis
    from .ingest.discover import discover
    from .ingest.hosts import read_hostfile
    from .nvrx_compat import CollectiveAnalyzer
    from .report.report import Report, Wavefront
    from .report.text import render_text
    from .tables.load import combine, combine_results, load, load_one
    from .tables.parts import read_file_tables, write_file_tables
    from .types import AttributionState, DumpSet, FailureClass, FileError, HostMap, InputError, Limits, Verdict

__all__ = [
    "Analysis",
    "AttributionState",
    "CollectiveAnalyzer",
    "DumpSet",
    "FailureClass",
    "FileError",
    "HostMap",
    "InputError",
    "Limits",
    "Report",
    "Verdict",
    "Wavefront",
    "analyze",
    "analyze_dumps",
    "analyze_proxy_ops",
    "combine",
    "combine_results",
    "discover",
    "load",
    "load_one",
    "read_file_tables",
    "read_hostfile",
    "render_text",
    "write_file_tables",
]
