"""A wait-for cycle explained by the points of its members (layer 3 of the one model, in counts).

The glue between the analysis and :mod:`.count_explanation`: each rank's point and the
ranks of its program (:mod:`..model.counts`, built once), the places each member is
compared at, which edits explain a wait of the cycle, and the findings the causes become.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import replace

from ..model import costs
from ..model.counts import Pending, Point, count_mates, count_points, issued_after, p2p_families, p2p_points
from ..types import FailureClass
from .analysis import Analysis
from .count_explanation import CountEdit, Place, count_causes, count_departure
from .cycle_records import CycleWaits
from .edit_distance import EXTRA, SKIP
from .findings import NEVER, Finding, Kind, Role
from .waitfor import Blocked, WaitReason
from .whole_call import Call, program_calls


class CountView:
    """The points of every rank, who runs whose program, and who is blocked where."""

    def __init__(self, a: Analysis, w: CycleWaits) -> None:
        self.a, self.w = a, w
        self.family_of = a.families.family_of
        self._after: dict[Pending, Point] = {}
        self._prepared: set[int] = set()
        self._departure: dict[int, CountEdit | None | bool] = {}

    @functools.cached_property
    def points(self) -> dict[int, Point]:
        a = self.a
        points = count_points(a.groups.groups.values(), a.progress, self.family_of)
        for rank, posted in p2p_points(a.dumps.entries, a.groups.key_of, self.family_of).items():
            points.setdefault(rank, {}).update(posted)
        return points

    @functools.cached_property
    def p2p_families(self) -> set[str]:
        return p2p_families(self.a.groups.groups.values(), self.family_of)

    @functools.cached_property
    def mates(self) -> dict[int, frozenset[int]]:
        return count_mates(self.a.groups.groups.values(), self.family_of, self.a.levels.stage)

    @functools.cached_property
    def heads(self) -> dict[int, list[Blocked]]:
        """Each rank's collectives and send/recvs it waits in (not queued behind one of its own)."""
        return {r: [b for b in pending if not b.queued] for r, pending in self.pending.items()}

    @functools.cached_property
    def pending(self) -> dict[int, list[Blocked]]:
        """Each rank's collectives and send/recvs pending, queued behind its own or not: it
        issued each, so it is compared there with the ranks of its program blocked in it."""
        pending: dict[int, list[Blocked]] = defaultdict(list)
        for b in self.w.graph.blocked:
            pending[b.rank].append(b)
        return pending

    def prepare(self, ranks: set[int]) -> None:
        """Find what each of ``ranks`` issued after each call it holds pending (one pass over
        their entries), for :meth:`point_at`."""
        calls = [(b.rank, b.pg_key, b.seq, b.is_p2p) for r in ranks - self._prepared for b in self.pending.get(r, [])]
        self._after.update(issued_after(self.a.dumps.entries, self.a.groups.key_of, self.family_of, calls))
        self._prepared |= ranks

    def point_at(self, rank: int, place: Place) -> Point:
        """``rank``'s point where it issued the call it holds pending at ``place``: what it
        issued behind it since is left out (see ``issued_after``)."""
        mine = self.points.get(rank, {})
        b = next((b for b in self.pending.get(rank, []) if self.place(b) == replace(place, waited=False)), None)
        after = self._after.get((b.rank, b.pg_key, b.seq, b.is_p2p), {}) if b is not None else {}
        return {f: n - after.get(f, 0) for f, n in mine.items()}

    def departures(self, comp: list[int]) -> dict[int, CountEdit | None | bool]:
        """Each member's edit against the ranks of its program (see ``count_departure``), found
        once per rank (the counts explain a cycle with them, the waits check their cause)."""
        new = [r for r in comp if r not in self._departure]
        places = {r: self.places(r) for r in new}
        self.prepare(set(new) | {m for at in places.values() for ranks in at.values() for m in ranks})
        mates = self.mates
        for r in new:
            found = count_departure(r, self.points, places[r], mates.get(r, frozenset()), self.point_at)
            self._departure[r] = self._reading(found)
        return {r: self._departure[r] for r in comp}

    def _reading(self, e: CountEdit | None | bool) -> CountEdit | None | bool:
        """Of an extra that is as well a skip of the call the rank holds (``or_skip``), the
        reading that explains a wait: the extra where it does, else the skip where that does."""
        if not isinstance(e, CountEdit) or e.or_skip is None or self.explains(e):
            return e
        skip = e.as_skip()
        return skip if self.explains(skip) else e

    @functools.cached_property
    def blocked_at(self) -> dict[Place, set[int]]:
        """Each place -> the ranks blocked there."""
        at: dict[Place, set[int]] = defaultdict(set)
        for rank, heads in self.heads.items():
            for b in heads:
                at[self.place(b)].add(rank)
        return at

    def place(self, b: Blocked) -> Place:
        if not b.is_p2p:
            return Place(self.family(b.pg_key), b.seq, False)
        ranks = self.a.groups.groups[b.pg_key].ranks if b.pg_key in self.a.groups.groups else ()
        side = ranks.index(b.peer) - ranks.index(b.rank) if b.peer in ranks and b.rank in ranks else 0
        return Place(self.family(b.pg_key), 0, False, f"{b.op}{side:+d}")

    def family(self, key: str) -> str:
        return self.family_of.get(key, key)

    def places(self, rank: int) -> dict[Place, tuple[int, ...]]:
        """Where ``rank`` is compared, each with the ranks of its program there."""
        mates = self.mates.get(rank, frozenset()) - {rank}
        found = [self.place(b) for b in self.pending.get(rank, [])]
        waits = self.w.into.get(rank, [])
        not_issued = (WaitReason.NOT_ISSUED, WaitReason.P2P_UNMATCHED)  # it stands before each (see count_departure)
        found += [Place(self.family(e.pg_key), e.seq, True) for e in waits if e.reason in not_issued]
        at = self.blocked_at
        return {p: tuple(sorted(at.get(replace(p, waited=False), set()) & mates)) for p in found}

    def explains(self, e: CountEdit) -> bool:
        """Whether an edit explains a wait: one fewer of a family where others wait for the rank
        in a group of it, or one more of a family where the rank itself waits in one."""
        waited_in = {self.family(x.pg_key) for x in self.w.into.get(e.rank, [])}
        waits_in = {self.family(b.pg_key) for b in self.heads.get(e.rank, [])}
        return (e.fewer is not None and e.fewer in waited_in) or (e.more is not None and e.more in waits_in)


def explain_cycle_by_counts(a: Analysis, view: CountView, comp: list[int]) -> list[Finding]:
    """The members of cycle ``comp`` whose points explain it (see :mod:`.count_explanation`), as findings."""
    causes = count_causes(comp, _priced(view, view.departures(comp)), view.explains)
    return [] if causes is None else [_count_edit_finding(view, e) for e in causes.values()]


def _priced(view: CountView, departures: dict[int, CountEdit | None | bool]) -> dict[int, CountEdit | None | bool]:
    """``departures`` with each skip and extra at the cost of the call it is (``model/costs``):
    an extra of the collective the rank waits in, where its group issued that call before
    (the program's), costs more than a skip; a skip of the collective its peers wait for it
    in, where the dumps show that call as theirs alone, costs more than their extra."""
    calls: dict[int, list[Call]] = {}
    for r, e in departures.items():
        if isinstance(e, CountEdit) and e.kind == EXTRA:
            calls[r] = [(b.pg_key, b.seq, r) for b in view.heads.get(r, []) if view.family(b.pg_key) == e.more]
        elif isinstance(e, CountEdit) and e.kind == SKIP:
            waits = view.w.into.get(r, [])
            calls[r] = [
                (x.pg_key, x.seq, x.waiter)
                for x in waits
                if x.reason == WaitReason.NOT_ISSUED and view.family(x.pg_key) == e.fewer
            ]
    program = program_calls(view.a.cells, {c for found in calls.values() for c in found})
    priced = dict(departures)
    for r, found in calls.items():
        e = priced[r]
        if not found or not isinstance(e, CountEdit):
            continue
        of_program = any(program[c] for c in found)
        if e.kind == EXTRA and of_program:
            priced[r] = replace(e, cost=costs.EXTRA_PROGRAM)
        elif e.kind == SKIP and not of_program:
            priced[r] = replace(e, cost=costs.SKIP_OWN)
    return priced


def _count_edit_finding(view: CountView, e: CountEdit) -> Finding:
    """A :class:`CountEdit` as a finding: where its peers wait for the rank in the family it
    issued one fewer of, else the collective it waits in of the family it issued one more of."""
    w = view.w
    waits = [x for x in w.into.get(e.rank, []) if view.family(x.pg_key) == e.fewer]
    heads = view.heads.get(e.rank, [])
    mine = [b for b in heads if view.family(b.pg_key) == e.more] or heads
    if (e.kind == SKIP and waits) or not mine:
        first = min(waits or w.into.get(e.rank, []), key=lambda x: x.seq)
        key, seq, op = first.pg_key, first.seq, first.op
    else:
        key, seq, op = mine[0].pg_key, mine[0].seq, mine[0].op
    waiters = tuple(sorted({x.waiter for x in w.into.get(e.rank, [])}))
    detail = {
        "edit": e.kind,
        "fewer": e.fewer,
        "more": e.more,
        "place": None if e.place is None else (e.place.family, e.place.seq, e.place.waited),
        "against": e.against,
        "cost": e.cost,
        "went_on": e.went_on,
    }
    since = w.created.get((key, e.rank, seq), NEVER)
    cls = FailureClass.P2P_UNMATCHED if e.kind == SKIP and e.fewer in view.p2p_families else FailureClass.DESYNC
    return Finding(Kind.COUNT_EDIT, Role.SUSPECT, (e.rank,), cls, key, seq, op, waiters, since, detail)
