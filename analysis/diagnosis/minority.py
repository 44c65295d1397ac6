"""The ranks of a wait-for cycle that are out of step with their groups.

In a cycle every member waits on another, so each looks like a cause. At each point
where members wait (group, seq), the ranks that issued the collective and wait there
are on one side and the ranks that never issued it on the other. A rank that skipped
a collective is alone absent where the rest of its group waits, and alone ahead where
the rest has not arrived: the smaller side at every point. Ranks that are the larger
side everywhere are at the same point of the program as each other, blocked at what
in their own program comes first; they skipped nothing. The minority is named only
where every point has a strict minority and no rank is on the larger side of one point
and the smaller side of another.

A rank that issued the collective its peers wait in, but holds it queued behind an
earlier one of its own, takes no side there: it waits at that earlier point, which is
one of the cycle's points itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from .waitfor import WaitEdge, WaitGraph, WaitReason

_ABSENT = (WaitReason.NOT_ISSUED, WaitReason.NO_RECORD)
"""A rank with no record of a group issued none of its collectives: absent, as one that never
issued the seq (a first checkpoint barrier, say)."""

Offset = Callable[[str, int], int | None]
"""(group key, rank) -> collectives issued beyond the rank's level peers (see :mod:`.level_counts`)."""


def _sides(edges: list[WaitEdge]) -> dict[tuple[str, int], tuple[set[int], set[int]]]:
    """Per (group, seq): the ranks waiting there and the ranks that never issued it."""
    sides: dict[tuple[str, int], tuple[set[int], set[int]]] = defaultdict(lambda: (set(), set()))
    for e in edges:
        if e.reason in _ABSENT:
            waiting, absent = sides[(e.pg_key, e.seq)]
            waiting.add(e.waiter)
            absent.add(e.blocker)
    return sides


def cycle_minority(graph: WaitGraph, comp: list[int], offset: Offset | None = None) -> set[int]:
    """The members of cycle ``comp`` on the smaller side at every point they wait at or are
    waited on at, or an empty set where the points do not agree. A point with as many on
    each side is decided by ``offset`` (see :mod:`.level_counts`): the side one collective
    off its level peers is the smaller one there, where the other side matches them; a point
    they do not decide leaves the cycle undecided."""
    inside = set(comp)
    points = [e for e in graph.edges if e.waiter in inside or e.blocker in inside]
    within = [e for e in points if e.waiter in inside and e.blocker in inside]
    if any(e.reason not in (*_ABSENT, WaitReason.QUEUED) for e in within):
        return set()
    held_at = {e.waiter for e in within if e.reason in _ABSENT}
    if any(e.reason == WaitReason.QUEUED and e.blocker not in held_at for e in within):
        return set()
    smaller: set[int] = set()
    larger: set[int] = set()
    for (key, _), (waiting, absent) in _sides(points).items():
        if len(waiting) == len(absent):
            few = _off_side(key, waiting, absent, offset) if offset else None
            if few is None:
                return set()
            many = absent if few is waiting else waiting
        else:
            few, many = (waiting, absent) if len(waiting) < len(absent) else (absent, waiting)
        smaller |= few
        larger |= many
    odd = smaller & inside
    if not odd or smaller & larger or odd == inside:
        return set()
    return odd


def _off_side(key: str, waiting: set[int], absent: set[int], offset: Offset) -> set[int] | None:
    """Of a point with as many ranks on each side, the side one collective off its level
    peers in the group (waiting ranks one ahead, or absent ranks one behind), where the
    other side matches them; None where the counts do not tell."""
    ahead = {offset(key, r) for r in waiting}
    behind = {offset(key, r) for r in absent}
    if ahead == {1} and behind == {0}:
        return waiting
    if ahead == {0} and behind == {-1}:
        return absent
    return None
