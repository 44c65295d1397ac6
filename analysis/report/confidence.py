"""The caveats of a verdict as sentences, and the evidence that must not say "wrote no dump"
about a rank whose dump file is there."""

from __future__ import annotations

import os

from ..diagnosis.analysis import Analysis
from ..diagnosis.caveats import Caveat, CaveatKind
from .times import seconds, utc
from .words import group_label, ranks_text


def caveat_sentence(c: Caveat, a: Analysis, wave: tuple[str, int | None, str | None] | None) -> str:
    """One caveat in words: what is weak, for which ranks, and what it means for the verdict."""
    who = ranks_text(list(c.ranks), 12)
    if c.kind == CaveatKind.UNREADABLE:
        return _unreadable(c, a, who)
    if c.kind == CaveatKind.SHORT_BUFFER:
        where = ""
        if wave is not None:
            at = utc(c.detail.get("divergence_ns"))
            where = f", seq {wave[1]} of {group_label(a.groups.groups.get(wave[0]))}" + (
                f" first issued {at}" if at else ""
            )
        return (
            f"The ring buffers of {who} start after the divergence{where}: what "
            f"{'it' if len(c.ranks) == 1 else 'they'} did at that moment is no longer recorded."
        )
    if c.kind == CaveatKind.MIXED_VERSIONS:
        parts = "; ".join(f"{v or 'no version'}: {ranks_text(r, 6)}" for v, r in c.detail["versions"].items())
        return f"The dumps are of different Flight Recorder versions ({parts}): the ranks ran different torch builds."
    if c.kind == CaveatKind.NO_STARTED:
        return (
            f"No pending entry records the 'started' state (timing is off, or the backend does not record it), so "
            f"for {who} a collective stuck in flight cannot be told from one that never started."
        )
    if c.kind == CaveatKind.NO_STACKS:
        return f"{who.capitalize()} wrote JSON dumps, which carry no call stacks: their call sites were not compared."
    if c.kind == CaveatKind.ONLY_ACTIVE:
        return (
            f"{who.capitalize()} dumped only active entries (onlyActive): their finished collectives are not in the "
            "files, so a mismatch before the hang would not show there."
        )
    return (
        f"The clocks of {who} are off from the others' by up to {seconds(c.detail['offset_ns'])}, more than the "
        f"job's step time ({seconds(c.detail['step_ns'])}): creation times cannot be compared across these ranks, "
        "so which rank fell behind first is less certain."
    )


def _unreadable(c: Caveat, a: Analysis, who: str) -> str:
    files = c.detail["files"]
    shown = "; ".join(f"{os.path.basename(f)}: {why}" for f, why in list(files.values())[:3])
    one = len(c.ranks) == 1
    text = f"The dump file{'' if one else 's'} of {who} {'is' if one else 'are'} there but could not be read ({shown})"
    members = [r for r in c.ranks if r in set(a.missing_dumps)]
    if members:
        return (
            text
            + f": what {ranks_text(members, 8)} did is unknown; the analysis counts {'it' if len(members) == 1 else 'them'} as without a dump."
        )
    return text + f": {'it is' if one else 'they are'} left out of the analysis."
