"""The report as words: the summary sentence and the text the command line prints."""

from __future__ import annotations

from collections.abc import Collection

from .hosts import drain_reasons
from .report import Report, Wavefront
from .words import compact_ranks, counted, ranks_text

_CLASS_WORDS = {
    "missing_participant": (
        "never issued a collective its peers wait in",
        "never issued collectives their peers wait in",
    ),
    "desync": (
        "issued a different collective than its peers (CPU-side divergence)",
        "issued different collectives than their peers (CPU-side divergence)",
    ),
    "size_mismatch": (
        "passed a tensor of a different size than its peers",
        "passed tensors of different sizes than their peers",
    ),
    "dtype_mismatch": (
        "passed a tensor of a different dtype than its peers",
        "passed tensors of different dtypes than their peers",
    ),
    "p2p_unmatched": ("never posted the matching send/recv", "never posted the matching send/recv"),
    "stalled_in_flight": (
        "is stuck inside a collective its peers got through (GPU or network side)",
        "are stuck inside collectives their peers got through (GPU or network side)",
    ),
    "missing_dump": ("wrote no dump", "wrote no dumps"),
}
_UNREADABLE_WORDS = ("has a dump file that could not be read", "have dump files that could not be read")
_NO_READABLE_DUMP_WORDS = ("has no readable dump", "have no readable dumps")


def summary_sentence(
    verdict_word: str,
    failure_class: str,
    suspects: list[int],
    wave: Wavefront | None,
    n_victims: int,
    n_ranks: int,
    unreadable: Collection[int] = (),
) -> str:
    if n_ranks == 0:
        return "No Flight Recorder dump could be read: nothing was analyzed."
    if verdict_word == "healthy":
        return "No hang and no mismatch: every rank completed what it issued, and the ranks agree."
    where = ""
    if wave is not None:
        seq = f" seq {wave.collective_seq_id}" if wave.collective_seq_id is not None else ""
        where = f" at {wave.op or 'collective'}{seq} of group {wave.pg_name} ({wave.pg_desc or 'no description'})"
    if not suspects:
        return (
            f"The job {'hangs' if verdict_word == 'hang' else 'diverged'}{where}, but no single rank can be isolated."
        )
    who = ranks_text(suspects, 12).capitalize()
    one, many = _CLASS_WORDS.get(failure_class, (failure_class, failure_class))
    if failure_class == "missing_dump" and unreadable:
        # the file is there: "wrote no dump" would be false
        one, many = _UNREADABLE_WORDS if set(suspects) <= set(unreadable) else _NO_READABLE_DUMP_WORDS
    words = one if len(suspects) == 1 else many
    them = "it" if len(suspects) == 1 else "them"
    blocked = f"; {counted(n_victims, 'other rank')} {_wait(n_victims)} on {them}" if n_victims else ""
    return f"{who} {words}{where}{blocked}."


def tie_broken_summary(suspects: list[int], wave: Wavefront | None, n_victims: int) -> str:
    """The summary when the dumps could not isolate a rank and a failed health check did."""
    where = ""
    if wave is not None:
        seq = f" seq {wave.collective_seq_id}" if wave.collective_seq_id is not None else ""
        where = f" at {wave.op or 'collective'}{seq} of group {wave.pg_name} ({wave.pg_desc or 'no description'})"
    who = ranks_text(suspects, 12)
    verb = "fails" if len(suspects) == 1 else "fail"
    return (
        f"The job hangs{where} with every member stuck in flight; {who} {verb} a node health check and "
        f"{'is' if len(suspects) == 1 else 'are'} the likely cause; {counted(n_victims, 'other rank')} {_wait(n_victims)}."
    )


def render_text(report: Report, verbose: bool = False) -> str:
    """Verdict first, then wavefront and suspects, then evidence."""
    lines = [f"VERDICT: {report.verdict.value.upper()} ({report.failure_class.value})", report.summary, ""]
    w = report.wavefront
    rows = [
        ("suspect ranks", compact_ranks(report.suspect_ranks) or "none isolated"),
        *(
            [("possible ranks", compact_ranks([p["rank"] for p in report.possible_ranks]))]
            if report.possible_ranks
            else []
        ),
        ("confidence", _confidence(report)),
        ("victim ranks", compact_ranks(report.victim_ranks) or "none"),
        ("attribution", report.attribution_state.value),
    ]
    if w:
        seq = "-" if w.collective_seq_id is None else str(w.collective_seq_id)
        rows.insert(
            0, ("wavefront", f"group {w.pg_name} ({w.pg_desc or 'no description'}) seq {seq} {w.op or ''}".rstrip())
        )
    rows.append(("ranks loaded", str(report.ranks_loaded)))
    if report.missing_dumps:
        rows.append(("missing dumps", compact_ranks(report.missing_dumps)))
    if report.rank_classes:
        rows.append(("rank classes", _classes(report)))
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if report.caveats:
        lines += ["", "Caveats:"] + [f"  - {c}" for c in report.caveats]
    if report.compare is not None:
        lines += ["", "Compared with the earlier dumps:", f"  {report.compare['summary']}"]
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
            lag = f" lagging: {compact_ranks(g['lagging_ranks'], 8)}" if g["lagging_ranks"] else ""
            lines.append(
                f"  {g['pg_name']:>6} {g['pg_desc'][:40]:<40} size {g['size']:>5}  "
                f"enq {g['enqueued_min']}..{g['enqueued_max']}  done {g['completed_min']}..{g['completed_max']}{lag}"
            )
        if len(known) < len(report.process_groups):
            lines.append(
                f"  ({len(report.process_groups) - len(known)} more groups with no entries or status in the dumps)"
            )
    lines += ["", *_drain_lines(report)]
    return "\n".join(lines).rstrip()


def _confidence(report: Report) -> str:
    n = len(report.caveats)
    return report.confidence + (f" ({n} caveat{'s' if n != 1 else ''} below)" if n else "")


def _classes(report: Report) -> str:
    """How many classes, and the suspects' classes."""
    mine = [c for c in report.rank_classes if c["suspect"]]
    text = f"{len(report.rank_classes)} (largest {counted(report.rank_classes[0]['size'], 'rank')})"
    if mine:
        sizes = ", ".join(str(c["size"]) for c in mine[:4])
        text += f"; suspects in {counted(len(mine), 'class', 'classes')} of {sizes} rank{'s' if sizes != '1' else ''}"
    return text


def _drain_lines(report: Report) -> list[str]:
    """The drain list, last: the hosts to take out, in order of evidence."""
    if report.drain_hosts:
        return ["Drain, in order of evidence:"] + [f"  {host}  ({why})" for host, why in drain_reasons(report.hosts)]
    if report.suspect_ranks and report.host_map is None:
        return ["Drain: hosts unknown (give --ranks-per-node N or --hostfile FILE)."]
    return [] if not report.suspect_ranks else ["Drain: no host holds a suspect."]


def _wait(n: int) -> str:
    return "waits" if n == 1 else "wait"
