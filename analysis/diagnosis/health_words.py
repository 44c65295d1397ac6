"""The health checks' part of the evidence, in sentences (the decision is made in :mod:`.health`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..model.health import DEVICE_WORDS, RankHealth
from .hang import ranks_text

if TYPE_CHECKING:
    from .health import HealthDecision

QUOTE_CHARS = 120


def first_line(text: str | None, limit: int = QUOTE_CHARS) -> str:
    """The first non-empty line of a check's output, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def what_failed(h: RankHealth) -> str:
    """e.g. 'rank 3's GPU health check failed ("GPU 3: Requires a reset ...")'."""
    parts = []
    for device in h.failed_devices():
        quote = first_line(h.output(device))
        parts.append(f"{DEVICE_WORDS[device]}" + (f' ("{quote}")' if quote else ""))
    return f"rank {h.rank}'s {' and '.join(parts)} health check{'s' if len(parts) > 1 else ''} failed"


def failed_summary(failed: Mapping[str, Sequence[int]]) -> list[str]:
    """One sentence per device with failures, e.g. 'GPU health check failed on ranks 3, 5.'"""
    return [
        f"{DEVICE_WORDS[device]} health check failed on {ranks_text(list(ranks), 16)}."
        for device, ranks in failed.items()
        if ranks
    ]


def health_sentences(decision: HealthDecision, health: Mapping[int, RankHealth], victims: Sequence[int]) -> list[str]:
    """Evidence sentences: which checks failed, the tie broken (or not), support, and ranks cleared."""
    out = failed_summary(decision.failed)
    if decision.promoted:
        rest = [r for r in decision.tie if r not in decision.promoted]
        causes = "; ".join(what_failed(health[r]) for r in decision.promoted)
        out.append(
            f"The dumps cannot single out a rank among {ranks_text(list(decision.tie), 16)}; {causes}, so "
            f"{'it is' if len(decision.promoted) == 1 else 'they are'} taken as the suspect"
            f"{'' if len(decision.promoted) == 1 else 's'} and {ranks_text(rest, 16)} as victims "
            "(health checks break the tie; the dumps alone do not decide it)."
        )
    elif decision.tie:
        checked = [r for r in decision.tie if r in health]
        failed = [r for r in checked if health[r].failed]
        if failed and len(failed) == len(decision.tie):
            out.append(
                f"Every rank the dumps cannot tell apart ({ranks_text(failed, 16)}) failed a health check: "
                "the checks do not break the tie."
            )
        elif checked and not failed:
            out.append(f"The health checks of {ranks_text(checked, 16)} passed: they do not single out a rank either.")
    for r in decision.supported:
        if r not in decision.promoted:
            out.append(f"The health checks support this: {what_failed(health[r])}.")
    victim_set = set(victims)
    for r in decision.cleared:
        role = "it waits on other ranks" if r in victim_set else "nothing in them blames it"
        text = what_failed(health[r])
        out.append(
            f"{text[:1].upper()}{text[1:]}, but the dumps clear it ({role}): "
            "stated, not blamed; check that node separately."
        )
    unreadable = [r for r, h in health.items() if h.unreadable]
    if unreadable:
        out.append(f"The health checks of {ranks_text(unreadable, 16)} could not be read (see their outputs).")
    return out
