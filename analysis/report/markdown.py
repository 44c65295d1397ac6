"""The postmortem in Markdown: verdict, wavefront, suspects, drain list, evidence and the
timeline of each rank class, with links to its figures (``views.static`` draws them).

Pure: the report in, text out. Text from the dumps is escaped so it cannot break a table
or start a heading.
"""

from __future__ import annotations

from collections.abc import Mapping

from .hosts import drain_reasons
from .report import Report
from .timeline import ClassTimeline, Moment, class_timelines, dump_time, rank_moments
from .times import before, utc
from .words import compact_ranks

#: The figures the Markdown can link to, with their captions.
FIGURES = {
    "wavefront": "The wavefront group: each member's state at each sequence number",
    "timeline": "Each rank class: its last completed and first stuck collective, before the dump",
}
_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def escape(text: object) -> str:
    """Text as Markdown shows it literally, on one line."""
    return " ".join(str(text).split()).translate(_SPECIAL)


def markdown_text(report: Report, figures: Mapping[str, str] | None = None, title: str = "Flight Deck report") -> str:
    """The report as one Markdown document; ``figures`` maps a name of :data:`FIGURES` to the
    image's relative link (a figure without a link is left out)."""
    figures = figures or {}
    lines = [f"# {escape(title)}", "", *_verdict(report), ""]
    if report.caveats:
        lines += ["## Caveats", "", *[f"- {escape(c)}" for c in report.caveats], ""]
    lines += _wavefront(report, figures.get("wavefront"))
    lines += _suspects(report)
    lines += _drain(report)
    if report.evidence:
        lines += ["## Evidence", "", *[f"- {escape(e)}" for e in report.evidence], ""]
    lines += _timeline(report, figures.get("timeline"))
    if report.file_errors:
        lines += [f"## Files not used ({len(report.file_errors)})", ""]
        lines += [f"- {escape(e.file)}: {escape(e.error)}" for e in report.file_errors[:50]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _verdict(report: Report) -> list[str]:
    possible = [p["rank"] for p in report.possible_ranks]
    rows = [
        ("Verdict", f"**{report.verdict.value.upper()}** ({escape(report.failure_class.value)})"),
        ("Suspect ranks", compact_ranks(report.suspect_ranks, 64) or "none isolated"),
        *([("Possible ranks", compact_ranks(possible, 64))] if possible else []),
        ("Confidence", report.confidence),
        ("Victim ranks", compact_ranks(report.victim_ranks) or "none"),
        ("Attribution", report.attribution_state.value),
        ("Ranks loaded", str(report.ranks_loaded)),
    ]
    if report.missing_dumps:
        rows.append(("Missing dumps", compact_ranks(report.missing_dumps)))
    table = ["| | |", "|---|---|", *[f"| {k} | {escape(v) if k != 'Verdict' else v} |" for k, v in rows]]
    return ["## Verdict", "", escape(report.summary), "", *table]


def _wavefront(report: Report, image: str | None) -> list[str]:
    w = report.wavefront
    if w is None:
        return []
    seq = "-" if w.collective_seq_id is None else str(w.collective_seq_id)
    lines = [
        "## Wavefront",
        "",
        escape(
            f"Group {w.pg_name} ({w.pg_desc or 'no description'}, ranks {compact_ranks(w.pg_ranks)}), "
            f"seq {seq}, {w.op or 'collective'}."
        ),
        "",
    ]
    if image:
        lines += [f"![{FIGURES['wavefront']}]({image})", ""]
    return lines


MAX_SUSPECT_ROWS = 32


def _suspects(report: Report) -> list[str]:
    """One row per suspect: why, where it ran, what it last finished and where it stopped."""
    if not report.suspect_ranks and not report.possible_ranks:
        return []
    hosts = {r: h["host"] for h in report.hosts for r in h["suspect_ranks"]}
    if report.host_map is not None:
        hosts.update({r: report.host_map.host(r) for r in report.suspect_ranks if r not in hosts})
    by_rank = {r: t for t in class_timelines(report) for r in t.ranks}
    at = None if report.analysis is None else dump_time(report.analysis)
    lines = ["## Suspects", "", "| rank | failure class | host | class | last completed | first stuck |"]
    lines.append("|---|---|---|---|---|---|")
    for rank in report.suspect_ranks[:MAX_SUSPECT_ROWS]:
        cls = report.suspect_classes.get(rank, report.failure_class)
        t = by_rank.get(rank)
        cells = [str(rank), escape(getattr(cls, "value", cls)), escape(hosts.get(rank) or "")]
        done, stuck = (None, None) if report.analysis is None else rank_moments(report.analysis, rank)
        cells.append("" if t is None else str(t.class_id))
        cells += _moments(done, stuck, "" if t is None else t.situation, at)
        lines.append("| " + " | ".join(cells) + " |")
    if len(report.suspect_ranks) > MAX_SUSPECT_ROWS:
        lines += ["", f"{len(report.suspect_ranks) - MAX_SUSPECT_ROWS} more suspects: see the JSON report."]
    if report.possible_ranks:
        lines += ["", "Possible, neither cleared nor blamed for sure:", ""]
        lines += [f"- rank {p['rank']}: {escape(p['reason'])}" for p in report.possible_ranks]
    return [*lines, ""]


def _drain(report: Report) -> list[str]:
    if report.drain_hosts:
        lines = [f"1. {escape(host)} ({escape(why)})" for host, why in drain_reasons(report.hosts)]
        return ["## Drain, in order of evidence", "", *lines, ""]
    if report.suspect_ranks and report.host_map is None:
        return ["## Drain", "", "Hosts unknown (give `--ranks-per-node N` or `--hostfile FILE`).", ""]
    return []


def _timeline(report: Report, image: str | None) -> list[str]:
    rows = class_timelines(report)
    if not rows:
        return []
    at = None if report.analysis is None else dump_time(report.analysis)
    lines = [
        "## Timeline by rank class",
        "",
        "One member speaks for each class: its newest completed entry and its oldest unfinished one.",
        "",
    ]
    if image:
        lines += [f"![{FIGURES['timeline']}]({image})", ""]
    lines += ["| class | ranks | suspect | last completed | first stuck |", "|---|---|---|---|---|"]
    lines += [_row(t, at) for t in rows]
    return [*lines, ""]


def _row(t: ClassTimeline, at: int | None) -> str:
    moments = _moments(t.last_completed, t.first_stuck, t.situation, at)
    cells = [str(t.class_id), escape(compact_ranks(t.ranks, 6)), "yes" if t.suspect else "", *moments]
    return "| " + " | ".join(cells) + " |"


def _moments(done: Moment | None, stuck: Moment | None, situation: str, at: int | None) -> tuple[str, str]:
    """(last completed, first stuck) as table cells; ``situation`` says why nothing is stuck."""
    return (
        _when(done, at) if done else "none recorded",
        _when(stuck, at) if stuck else _NONE_STUCK.get(situation, "none"),
    )


_NONE_STUCK = {
    "idle": "none: waits in no collective",
    "no_dump": "no dump",
    "unreadable": "dump unreadable",
}


def _when(m: Moment, at: int | None) -> str:
    when = before(m.created_ns, at) or utc(m.created_ns)
    return escape(m.text() + (f", {when}" if when else ""))
