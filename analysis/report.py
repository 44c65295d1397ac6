"""The report: what a user reads, as objects, JSON and text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .discover import FileError

SCHEMA = "flightdeck.report/1"
FAILURE_CLASSES = (
    "healthy",
    "missing_participant",
    "desync",
    "size_mismatch",
    "dtype_mismatch",
    "p2p_unmatched",
    "stalled_in_flight",
    "missing_dump",
)


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

    verdict: str
    failure_class: str
    suspect_ranks: list[int]
    victim_ranks: list[int]
    attribution_state: str
    wavefront: Wavefront | None
    summary: str
    evidence: list[str]
    ranks_loaded: int
    missing_dumps: list[int]
    file_errors: list[FileError]
    process_groups: list[dict[str, Any]]
    suspect_classes: dict[int, str] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    analysis: Any = field(default=None, repr=False)
    """The intermediate results (groups, progress, wait graph) for views that need them."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "failure_class": self.failure_class,
            "suspect_ranks": list(self.suspect_ranks),
            "victim_ranks": list(self.victim_ranks),
            "attribution_state": self.attribution_state,
            "wavefront": self.wavefront.to_dict() if self.wavefront else None,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "ranks_loaded": self.ranks_loaded,
            "missing_dumps": list(self.missing_dumps),
            "file_errors": [{"file": e.file, "error": e.error} for e in self.file_errors],
            "process_groups": self.process_groups,
        }


def _compact(ranks: list[int], limit: int = 16) -> str:
    if len(ranks) <= limit:
        return ", ".join(map(str, ranks))
    return ", ".join(map(str, ranks[:limit])) + f", ... ({len(ranks)} ranks)"


def render_text(report: Report, verbose: bool = False) -> str:
    """Verdict first, then wavefront and suspects, then evidence."""
    lines = [f"VERDICT: {report.verdict.upper()} ({report.failure_class})", report.summary, ""]
    w = report.wavefront
    rows = [
        ("suspect ranks", _compact(report.suspect_ranks) or "none isolated"),
        ("victim ranks", _compact(report.victim_ranks) or "none"),
        ("attribution", report.attribution_state),
    ]
    if w:
        seq = "-" if w.collective_seq_id is None else str(w.collective_seq_id)
        rows.insert(
            0, ("wavefront", f"group {w.pg_name} ({w.pg_desc or 'no description'}) seq {seq} {w.op or ''}".rstrip())
        )
    rows.append(("ranks loaded", str(report.ranks_loaded)))
    if report.missing_dumps:
        rows.append(("missing dumps", _compact(report.missing_dumps)))
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if report.evidence:
        lines += ["", "Evidence:"] + [f"  - {e}" for e in report.evidence]
    if report.file_errors:
        lines += ["", f"Files not used ({len(report.file_errors)}):"]
        lines += [f"  - {e.file}: {e.error}" for e in report.file_errors[:50]]
        if len(report.file_errors) > 50:
            lines.append(f"  ... and {len(report.file_errors) - 50} more")
    if verbose and report.process_groups:
        lines += ["", "Per-group frontier (enqueued / completed, min..max over members):"]
        known = [g for g in report.process_groups if g["enqueued_max"] is not None]
        for g in known:
            lag = f" lagging: {_compact(g['lagging_ranks'], 8)}" if g["lagging_ranks"] else ""
            lines.append(
                f"  {g['pg_name']:>6} {g['pg_desc'][:40]:<40} size {g['size']:>5}  "
                f"enq {g['enqueued_min']}..{g['enqueued_max']}  done {g['completed_min']}..{g['completed_max']}{lag}"
            )
        if len(known) < len(report.process_groups):
            lines.append(
                f"  ({len(report.process_groups) - len(known)} more groups with no entries or status in the dumps)"
            )
    return "\n".join(lines)
