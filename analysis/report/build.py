"""A diagnosis in the fields and words a user reads: the Report (the pipeline that makes the
diagnosis runs in ``analysis.api``)."""

from __future__ import annotations

from typing import Any

from ..diagnosis.analysis import Analysis
from ..diagnosis.judgment import Judgment
from ..types import HostMap
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


def build_report(a: Analysis, j: Judgment, hosts: HostMap | None = None) -> Report:
    """The Report of an analysis and its judgment, in the words and fields a user reads.

    ``hosts`` says where ranks ran (default: host names in the dump file names, if any).
    """
    d = j.diagnosis
    wavefront = None
    if d.wave is not None:
        g = a.groups.groups.get(d.wave[0])
        if g is not None:
            wavefront = Wavefront(g.key, g.name, g.desc, g.ranks, d.wave[1], d.wave[2])
    suspects = d.suspects
    summary = summary_sentence(
        d.verdict, d.failure_class, suspects, wavefront, len(d.victims), len(a.dumps.ranks), set(j.unreadable)
    )
    if j.tie_broken_by_health:
        summary = tie_broken_summary(suspects, wavefront, len(d.victims))
    report = Report(
        verdict=d.verdict,
        failure_class=d.failure_class,
        suspect_ranks=suspects,
        victim_ranks=list(d.victims),
        attribution_state=d.attribution,
        wavefront=wavefront,
        summary=summary,
        evidence=evidence(d.findings, a.groups, j.unreadable),
        findings=d.findings,
        possible_ranks=[{"rank": r, "reason": reason(f, a.groups)} for r, f in sorted(d.possible.items())],
        ranks_loaded=len(a.dumps.ranks),
        missing_dumps=a.missing_dumps,
        file_errors=a.dumps.file_errors,
        process_groups=summarize_progress(a),
        suspect_classes=dict(d.suspect_classes),
        analysis=a,
        health=j.health,
    )
    add_triage(report, a, j, hosts)
    report.tables = {
        "entries": a.dumps.entries,
        "stacks": a.dumps.stacks,
        "groups": a.groups.to_frame(),
        "pg_status": a.dumps.status,
        "files": a.dumps.files,
    }
    if report.comparison is not None:
        report.tables["compare"] = report.comparison.deltas
    return report
