"""Dump sets as NVIDIA's trace collector writes them, from dumps torch (or the synthetic
NCCL writer) produced: only active entries, no stacks, the node health checks added.

The collector (nvidia-resiliency-ext, ``TorchFRTraceCollector.collect``) unpickles torch's
dump, adds ``health_check_results`` and writes ``_dump_<rank>`` with ``pickle.dump`` or
``_dump_<rank>.json`` with ``json.dump(indent=4)``; :func:`sample_dumps.generate.collector_bytes`
does exactly that, and the generator uses it for real runs.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from analysis.ingest.discover import rank_from_name
from sample_dumps.generate import collector_bytes, collector_file_name, collector_health


def only_active(dump: dict) -> dict:
    """What ``onlyActive=True, includeStackTraces=False`` leaves of a full dump: entries
    not yet completed, without frames."""
    out = dict(dump)
    out["entries"] = [
        {k: v for k, v in e.items() if k != "frames"}
        for e in dump.get("entries", [])
        if e.get("time_discovered_completed_ns") is None and e.get("state") != "completed"
    ]
    return out


def as_collector(src: Path, dst: Path, fmt: str, failed: dict[int, list[str]], active_only: bool = True) -> Path:
    """Rewrite every pickle dump in ``src`` as the collector's file in ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        rank = rank_from_name(path.name)
        if rank is None or path.suffix == ".json":
            continue
        dump = pickle.loads(path.read_bytes())  # written by this test run
        if active_only:
            dump = only_active(dump)
        data = collector_bytes(dump, collector_health(rank, failed.get(rank, [])), fmt)
        (dst / collector_file_name(rank, fmt)).write_bytes(data)
    return dst
