"""The report: what a user reads, as objects, JSON and text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..diagnosis.analysis import Analysis
from ..diagnosis.compare import Comparison
from ..diagnosis.findings import Finding
from ..diagnosis.rank_classes import RankClass
from ..model.health import RankHealth
from ..types import AttributionState, FailureClass, FileError, HostMap, Verdict

SCHEMA = "flightdeck.report/1"


@dataclass(frozen=True, slots=True)
class Wavefront:
    """The (process group, sequence) where progress diverges."""

    pg_key: str
    pg_name: str
    pg_desc: str
    pg_ranks: tuple[int, ...]
    collective_seq_id: int | None
    op: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pg_name": self.pg_name,
            "pg_desc": self.pg_desc,
            "pg_ranks": list(self.pg_ranks),
            "collective_seq_id": self.collective_seq_id,
            "op": self.op,
        }


@dataclass(slots=True)
class Report:
    """The verdict on one dump set, plus the tables it was drawn from."""

    verdict: Verdict
    failure_class: FailureClass
    suspect_ranks: list[int]
    victim_ranks: list[int]
    attribution_state: AttributionState
    wavefront: Wavefront | None
    summary: str
    evidence: list[str]
    ranks_loaded: int
    missing_dumps: list[int]
    file_errors: list[FileError]
    process_groups: list[dict[str, Any]]
    suspect_classes: dict[int, FailureClass] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    """What the evidence sentences say, as data."""
    possible_ranks: list[dict[str, Any]] = field(default_factory=list)
    """Ranks the dumps cannot clear nor blame for sure: ``{"rank", "reason"}`` each."""
    confidence: str = "high"
    """'high' | 'medium' | 'low': how far the caveats weaken the verdict."""
    caveats: list[str] = field(default_factory=list)
    hosts: list[dict[str, Any]] = field(default_factory=list)
    """Hosts holding a suspect or a rank without a readable dump, in drain order."""
    drain_hosts: list[str] = field(default_factory=list)
    rank_classes: list[dict[str, Any]] = field(default_factory=list)
    compare: dict[str, Any] | None = None
    """With an earlier snapshot of the job: who moved in between."""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    analysis: Analysis | None = field(default=None, repr=False)
    """The intermediate results (groups, progress, wait graph) for views that need them."""
    classes: list[RankClass] = field(default_factory=list, repr=False)
    """``rank_classes`` as objects, in the same order."""
    host_map: HostMap | None = field(default=None, repr=False)
    comparison: Comparison | None = field(default=None, repr=False)
    health: dict[int, RankHealth] = field(default_factory=dict)
    """Node health checks by rank, for every rank whose dump carries them."""
    proxy_waits: Any = None
    """The NCCL proxy-op waits when they were given (``report.proxy.ProxyEvidence``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict.value,
            "failure_class": self.failure_class.value,
            "suspect_ranks": list(self.suspect_ranks),
            "victim_ranks": list(self.victim_ranks),
            "possible_ranks": [dict(p) for p in self.possible_ranks],
            "attribution_state": self.attribution_state.value,
            "wavefront": self.wavefront.to_dict() if self.wavefront else None,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "ranks_loaded": self.ranks_loaded,
            "missing_dumps": list(self.missing_dumps),
            "file_errors": [{"file": e.file, "error": e.error} for e in self.file_errors],
            "process_groups": self.process_groups,
            "confidence": self.confidence,
            "caveats": list(self.caveats),
            "hosts": self.hosts,
            "drain_hosts": list(self.drain_hosts),
            "rank_classes": self.rank_classes,
            "compare": self.compare,
            "health": [health_record(h) for h in self.health.values()],
            "proxy_waits": self.proxy_waits.to_dict() if self.proxy_waits is not None else None,
        }


HEALTH_OUTPUT_CHARS = 2000
"""A check's output in the JSON: enough for its messages, not a whole log."""


def _cut_output(text: str | None) -> str | None:
    if text is None or len(text) <= HEALTH_OUTPUT_CHARS:
        return text
    return text[:HEALTH_OUTPUT_CHARS] + f"... ({len(text) - HEALTH_OUTPUT_CHARS} more characters)"


def health_record(h: RankHealth) -> dict[str, Any]:
    """One rank's checks as the JSON carries them: statuses as written, outputs cut."""
    return {
        "rank": h.rank,
        "gpu": h.gpu,
        "nic": h.nic,
        "gpu_output": _cut_output(h.gpu_output),
        "nic_output": _cut_output(h.nic_output),
    }
