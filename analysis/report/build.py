"""From loaded dumps to a Report: analysis -> diagnosis -> the report a user reads."""

from __future__ import annotations

from typing import Any

from ..diagnosis.analysis import Analysis, run_analysis
from ..diagnosis.health import apply_health, tie_of
from ..diagnosis.unreadable import unreadable_files
from ..diagnosis.verdict import diagnose
from ..model.health import health_of
from ..types import DumpSet, HostMap
from .evidence import evidence, reason
from .report import Report, Wavefront
from .text import summary_sentence, tie_broken_summary
from .triage import add_triage


def summarize_progress(a: Analysis) -> list[dict[str, Any]]:
    out = []
    for g in a.groups.by_relevance():
        enq = {r: p.enqueued for r in g.ranks if (p := a.progress.get((g.key, r))) and p.known}
        done = {r: p.completed for r in g.ranks if (p := a.progress.get((g.key, r))) and p.completed is not None}
        top = max(enq.values(), default=None)
        lagging = sorted(r for r, v in enq.items() if top is not None and v < top)
        out.append(
            {
                "pg_key": g.key,
                "pg_name": g.name,
                "pg_desc": g.desc,
                "ranks": list(g.ranks),
                "size": len(g.ranks),
                "membership": g.membership_source,
                "enqueued_min": min(enq.values(), default=None),
                "enqueued_max": top,
                "completed_min": min(done.values(), default=None),
                "completed_max": max(done.values(), default=None),
                "lagging_ranks": lagging,
                "ranks_without_dump": [r for r in g.ranks if r in set(a.missing_dumps)],
            }
        )
    out.sort(key=lambda g: (not g["lagging_ranks"], g["enqueued_max"] is None))
    return out


def build_report(a: Analysis, hosts: HostMap | None = None, earlier: Analysis | None = None) -> Report:
    """The Report of an analysis: its diagnosis, in the words and fields a user reads.

    ``hosts`` says where ranks ran (default: host names in the dump file names, if any);
    ``earlier`` is an earlier snapshot of the same job to compare with.
    """
    d = diagnose(a)
    health = health_of(a.dumps)
    d, by_health = apply_health(d, health, tie_of(a, d))
    unreadable = unreadable_files(a)
    wavefront = None
    if d.wave is not None:
        g = a.groups.groups.get(d.wave[0])
        if g is not None:
            wavefront = Wavefront(g.key, g.name, g.desc, g.ranks, d.wave[1], d.wave[2])
    suspects = d.suspects
    summary = summary_sentence(
        d.verdict, d.failure_class, suspects, wavefront, len(d.victims), len(a.dumps.ranks), set(unreadable)
    )
    if by_health.changed:
        summary = tie_broken_summary(suspects, wavefront, len(d.victims))
    report = Report(
        verdict=d.verdict,
        failure_class=d.failure_class,
        suspect_ranks=suspects,
        victim_ranks=list(d.victims),
        attribution_state=d.attribution,
        wavefront=wavefront,
        summary=summary,
        evidence=evidence(d.findings, a.groups, unreadable),
        findings=d.findings,
        possible_ranks=[{"rank": r, "reason": reason(f, a.groups)} for r, f in sorted(d.possible.items())],
        ranks_loaded=len(a.dumps.ranks),
        missing_dumps=a.missing_dumps,
        file_errors=a.dumps.file_errors,
        process_groups=summarize_progress(a),
        suspect_classes=dict(d.suspect_classes),
        analysis=a,
        health=health,
    )
    add_triage(report, a, d, hosts, earlier)
    return report


def analyze_dumps(dumps: DumpSet, hosts: HostMap | None = None, earlier: DumpSet | None = None) -> Report:
    """Analyze already-loaded dumps (and compare them with ``earlier`` dumps of the job)."""
    a = run_analysis(dumps)
    report = build_report(a, hosts, None if earlier is None else run_analysis(earlier))
    report.tables = {
        "entries": dumps.entries,
        "stacks": dumps.stacks,
        "groups": a.groups.to_frame(),
        "pg_status": dumps.status,
        "files": dumps.files,
    }
    if report.comparison is not None:
        report.tables["compare"] = report.comparison.deltas
    return report
