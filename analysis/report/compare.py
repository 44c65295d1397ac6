"""Two snapshots of one job, as the report's ``compare`` field and its verdict sentence."""

from __future__ import annotations

from typing import Any

from ..diagnosis.compare import Comparison, Motion
from .times import seconds
from .words import counted, ranks_text


def compare_sentence(c: Comparison) -> str:
    """Dead or slow, in one sentence: who did not move while others did, or nobody, or everybody."""
    between = "between the two dumps"
    if c.interval_ns is not None and c.interval_ns > 0:
        between = f"in the {seconds(c.interval_ns)} between the two dumps' newest entries"
    named = ranks_text(list(c.named), 12)
    if c.motion == Motion.HUNG:
        stuck = (
            f" {named.capitalize()}, where the others wait, {'is' if len(c.named) == 1 else 'are'} stuck."
            if c.named
            else ""
        )
        return f"No rank completed a collective {between}: the job is hung, not slow.{stuck}"
    if c.motion == Motion.STRAGGLER:
        one = len(c.named) == 1
        text = (
            f"{named.capitalize()} completed nothing {between} while {counted(len(c.progressing), 'other rank')} went on: "
            f"{'it is the straggler' if one else 'they are the stragglers'}, stuck, not slow."
        )
        others = sorted(set(c.stalled) - set(c.named))
        if others:
            wait = "waits" if len(others) == 1 else "wait"
            text += (
                f" {ranks_text(others, 8).capitalize()} did not move either and {wait} on {'it' if one else 'them'}."
            )
        return text
    if c.named:
        return (
            f"Every rank completed collectives {between}: the job is slow, not hung. {named.capitalize()}, where "
            f"the others wait, {'is' if len(c.named) == 1 else 'are'} slow, not stuck."
        )
    return f"Every rank completed collectives {between}: the job is progressing."


def compare_fields(c: Comparison) -> dict[str, Any]:
    """The report's ``compare`` object."""
    return {
        "progressing_ranks": list(c.progressing),
        "stalled_ranks": list(c.stalled),
        "interval_s": None if c.interval_ns is None else round(c.interval_ns / 1e9, 3),
        "motion": c.motion.value,
        "stuck_ranks": list(c.named) if c.motion != Motion.PROGRESSING else [],
        "slow_ranks": list(c.named) if c.motion == Motion.PROGRESSING else [],
        "summary": compare_sentence(c),
    }
