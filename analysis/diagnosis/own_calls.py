"""Ranks blocked in a call of their own (layer 3 of the one model: waits weighed by counts).

A rank blocked in a collective no other member of its group issued waits on each of them,
and each such wait needs an edit: that member skipped the call, or the rank added it
(``wait_explanation``). A member that runs the rank's program and went past the point where
the rank issued it (by its counts, ``model.counts``: as many of every other family as the
rank had issued then, more of one) without issuing it either skipped it or never had it in
its program there. The rank's one extra (``costs.EXTRA``) explains all of them at once;
their skips cost ``costs.SKIP`` each. So the rank added the call where that is strictly
cheaper: two such members at least (one alone is a tie, left to the cycle it is in).

A member blocked in a call of its own past which the rank went too is its mirror (each
went past the other's call, as two ranks of a pair that each hold a call the other never
issued): it speaks for neither and is not counted. Where every rank of the job would be
named, no program is left to judge by: each is possible.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from .. import schema as s
from ..model import costs
from ..model.counts import Point
from ..types import FailureClass
from .analysis import Analysis
from .edit_distance import EXTRA
from .findings import NEVER, Finding, Kind, Role
from .hang_view import HangView
from .waitfor import Blocked, WaitEdge, WaitReason


@dataclass(frozen=True, slots=True)
class OwnCall:
    """A rank blocked in a collective no other member of its group issued."""

    rank: int
    block: Blocked
    point: Point
    """The rank's counts where it issued the call, that call's family left out."""
    others: frozenset[int]
    """The members of its group, which never issued it."""


def own_call_findings(w: HangView) -> list[Finding]:
    """The ranks that added the collective they are blocked in (see the module docstring), as findings."""
    calls = _own_calls(w)
    if not calls:
        return []
    points = w.count_view.points
    passed = {
        c.rank: {m for m in c.others & w.program_ranks(c.rank) if went_past(points.get(m, {}), c.point)} for c in calls
    }
    found = []
    for c in calls:
        went_on = sorted(m for m in passed[c.rank] if c.rank not in passed.get(m, ()))  # mirrors left out
        against = costs.SKIP * len(went_on)  # each of them skipped it
        if costs.EXTRA >= against:
            continue  # a tie at best: the waits decide nothing
        b = c.block
        f = extra_finding(w.a, c.rank, b.pg_key, b.seq, b.op, w.created.get((b.pg_key, c.rank, b.seq), NEVER))
        detail = {"edit": EXTRA, "cost": costs.EXTRA, "other_side": against, "went_on": went_on}
        found.append(replace(f, detail={**f.detail, **detail}))
    if len(found) >= 2 and {f.rank for f in found} >= set(w.a.dumps.ranks):
        # every rank added one the others did not issue: no rank's program is left to judge by
        return [replace(f, role=Role.POSSIBLE, detail={**f.detail, "every_rank": True}) for f in found]
    return found


def extra_finding(a: Analysis, rank: int, pg_key: str, seq: int, op: str | None, since: int) -> Finding:
    """The finding for a rank that issued a collective no other rank issues."""
    mine = a.cells.iloc[a.rank_rows("cells", rank)]  # the rank's rows, not three cell-long tests
    hit = mine.loc[(mine[s.PG_KEY] == pg_key) & (mine[s.SEQ] == seq), s.CALL_SITE]
    site = hit.iloc[0] if len(hit) and isinstance(hit.iloc[0], str) else None
    return Finding(
        Kind.EXTRA, Role.SUSPECT, (rank,), FailureClass.DESYNC, pg_key, seq, op, since=since, detail={"call_site": site}
    )


def went_past(theirs: Point, mine: Point) -> bool:
    """Whether a rank whose counts are ``theirs`` went past a rank's point ``mine`` (the
    families both count): as many of each, more of one."""
    shared = theirs.keys() & mine.keys()
    return bool(shared) and all(theirs[f] >= mine[f] for f in shared) and any(theirs[f] > mine[f] for f in shared)


def _own_calls(w: HangView) -> list[OwnCall]:
    """Each collective a rank waits in (not queued behind one of its own) that no other
    member of its group issued: it waits on each of them there."""
    groups = w.a.groups.groups
    out: dict[tuple[int, str, int], list[WaitEdge]] = defaultdict(list)
    for e in w.graph.edges:
        out[(e.waiter, e.pg_key, e.seq)].append(e)
    view = w.count_view
    found = []
    for rank, heads in w.heads.items():
        for b in heads:
            edges = out.get((rank, b.pg_key, b.seq), [])
            others = frozenset(groups[b.pg_key].ranks) - {rank} if b.pg_key in groups else frozenset()
            if not others or {e.blocker for e in edges} != others:
                continue
            if any(e.reason != WaitReason.NOT_ISSUED for e in edges):
                continue
            view.prepare({rank})
            family = view.family(b.pg_key)
            point = {f: n for f, n in view.point_at(rank, view.place(b)).items() if f != family}
            found.append(OwnCall(rank, b, point, others))
    return found
