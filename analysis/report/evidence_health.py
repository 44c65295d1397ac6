"""The sentences of the node health checks: failed checks, and how they break or keep a tie
among the ranks the dumps cannot tell apart."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..diagnosis.findings import Finding, Kind
from ..model.health import DEVICE_WORDS
from .words import ranks_text

QUOTE_CHARS = 120
"""How much of a failed health check's output a sentence quotes."""


def first_line(text: str | None, limit: int = QUOTE_CHARS) -> str:
    """The first non-empty line of a check's output, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def what_failed(rank: int, checks: Mapping[str, str | None]) -> str:
    """e.g. 'rank 3's GPU health check failed ("GPU 3: Requires a reset ...")'."""
    parts = []
    for device, output in checks.items():
        quote = first_line(output)
        parts.append(f"{DEVICE_WORDS[device]}" + (f' ("{quote}")' if quote else ""))
    return f"rank {rank}'s {' and '.join(parts)} health check{'s' if len(parts) > 1 else ''} failed"


def _health_failed(f: Finding, where: str) -> str:
    return f"{DEVICE_WORDS[f.detail['device']]} health check failed on {ranks_text(f.ranks, 16)}."


def _health_tie_broken(f: Finding, where: str) -> str:
    one = len(f.ranks) == 1
    causes = "; ".join(what_failed(r, f.detail["checks"][r]) for r in f.ranks)
    return (
        f"The dumps cannot single out a rank among {ranks_text(f.detail['tie'], 16)}; {causes}, so "
        f"{'it is' if one else 'they are'} taken as the suspect{'' if one else 's'} and "
        f"{ranks_text(f.detail['victims'], 16)} as victims (health checks break the tie; the dumps alone do not "
        "decide it)."
    )


def _health_tie_kept(f: Finding, where: str) -> str:
    if f.detail["failed"]:
        return (
            f"Every rank the dumps cannot tell apart ({ranks_text(f.ranks, 16)}) failed a health check: "
            "the checks do not break the tie."
        )
    return f"The health checks of {ranks_text(f.ranks, 16)} passed: they do not single out a rank either."


def _health_supports(f: Finding, where: str) -> str:
    return f"The health checks support this: {what_failed(f.rank, f.detail['checks'])}."


def _health_cleared(f: Finding, where: str) -> str:
    role = "it waits on other ranks" if f.detail["waits"] else "nothing in them blames it"
    text = what_failed(f.rank, f.detail["checks"])
    return f"{text[:1].upper()}{text[1:]}, but the dumps clear it ({role}): stated, not blamed; check that node separately."


def _health_unreadable(f: Finding, where: str) -> str:
    return f"The health checks of {ranks_text(f.ranks, 16)} could not be read (see their outputs)."


SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.HEALTH_FAILED: _health_failed,
    Kind.HEALTH_TIE_BROKEN: _health_tie_broken,
    Kind.HEALTH_TIE_KEPT: _health_tie_kept,
    Kind.HEALTH_SUPPORTS: _health_supports,
    Kind.HEALTH_CLEARED: _health_cleared,
    Kind.HEALTH_UNREADABLE: _health_unreadable,
}
