"""Which rank issued as many collectives as the program's other ranks did.

Ranks level in a group (every member issued the same number of its collectives) are at
the same point of the program, and ranks that run one program (one pipeline stage) at
the same point have issued the same number of collectives in their groups of one
description (each tensor-parallel pair issues one per layer). Where the ranks of a tie,
or of a wait-for cycle, are one collective off each other, the side whose count in the
disputed group matches what its level peers issued in their groups of that description
is the program's; the other side issued one fewer (it skipped one) or one more (it added
one). Only where the level peers agree on the count does it decide: peers at different
points tell nothing.
"""

from __future__ import annotations

from collections import Counter

from ..model.families import Families, rank_programs, rank_stages
from ..model.groups import GroupIndex, ProcessGroup
from ..model.progress import Progress
from ..types import FailureClass
from .mismatch import Mismatch

ISSUED = "issued"
"""The attribute of a count mismatch: how many of the group's collectives each rank issued."""


class LevelCounts:
    """Counts of issued collectives, compared with what a rank's level peers issued."""

    def __init__(
        self, index: GroupIndex, progress: dict[tuple[str, int], Progress], families: Families, world: int
    ) -> None:
        self.index = index
        self.progress = progress
        self.world = world
        """Every rank of the job (the dumps', the missing ones', the largest group's)."""
        self.program = rank_programs(index.groups.values(), world, families.family_of, self._carries)
        self.stage = rank_stages(index.groups.values(), self._carries)
        """Each rank's place in the pipeline (see :func:`.families.rank_stages`)."""
        self.recorded_stage = rank_stages(index.groups.values(), self._carries, quiet=False)
        """The same, only where send/recvs are recorded: who votes on the program's order and
        counts is narrowed to a stage only on that evidence."""
        self.groups_of: dict[int, list[ProcessGroup]] = {}
        for g in index.groups.values():
            for r in g.ranks:
                self.groups_of.setdefault(r, []).append(g)
        self._offsets: dict[tuple[str, int], int | None] = {}
        self._level: dict[str, bool] = {}
        self._peers: dict[tuple[str, str, frozenset[str] | None], tuple[Counter, dict[str, Counter]]] = {}

    def _issued(self, key: str, rank: int) -> int | None:
        p = self.progress.get((key, rank))
        return None if p is None else p.enqueued

    def _carries(self, g: ProcessGroup) -> bool:
        """Some member of ``g`` issued a recorded collective in it."""
        return any((n := self._issued(g.key, r)) is not None and n >= 0 for r in g.ranks)

    def _expected(self, disputed: ProcessGroup, rank: int) -> int | None:
        """What ``rank``'s level peers of its program, outside the disputed group, issued in
        their groups of its description; None unless they agree. A level group whose peers
        disagree among themselves is passed over; those whose peers agree must agree too."""
        mine = self.program.get(rank)
        counts: set[int | None] = set()
        for g in self.groups_of.get(rank, []):
            if g.desc == disputed.desc or len(g.ranks) < 2 or not self._is_level(g):
                continue
            total, by_group = self._peer_counts(g, disputed.desc, mine)
            theirs = {c for c, n in (total - by_group.get(disputed.key, Counter())).items() if n > 0}
            if len(theirs) == 1:
                counts |= theirs
        return counts.pop() if len(counts) == 1 else None

    def _is_level(self, g: ProcessGroup) -> bool:
        """Every member of ``g`` issued as many of its collectives (and the count is known),
        and none has completed the last of them: they are all held there, at one point. A
        group none of them issued anything in, or whose last collective all got through
        (a checkpoint barrier long ago), says nothing about where they are now."""
        if g.key not in self._level:
            level = {self._issued(g.key, r) for r in g.ranks}
            pending = all(
                (p := self.progress.get((g.key, r))) is not None
                and p.completed is not None
                and p.completed < p.enqueued
                for r in g.ranks
            )
            self._level[g.key] = len(level) == 1 and None not in level and -1 not in level and pending
        return self._level[g.key]

    def _group_with_desc(self, rank: int, desc: str) -> str | None:
        """``rank``'s (first) group of description ``desc``, if any."""
        return next((h.key for h in self.groups_of.get(rank, []) if h.desc == desc), None)

    def _peer_counts(
        self, g: ProcessGroup, desc: str, program: frozenset[str] | None
    ) -> tuple[Counter, dict[str, Counter]]:
        """Of the members of ``g`` that run ``program``: how many issued each count in their
        group of description ``desc``, in all and per such group (built once per question)."""
        cache_key = (g.key, desc, program)
        if cache_key not in self._peers:
            total: Counter = Counter()
            by_group: dict[str, Counter] = {}
            for p in g.ranks:
                if self.program.get(p) != program:
                    continue
                k = self._group_with_desc(p, desc)
                if k is None:
                    continue
                c = self._issued(k, p)
                total[c] += 1
                by_group.setdefault(k, Counter())[c] += 1
            self._peers[cache_key] = (total, by_group)
        return self._peers[cache_key]

    def offset(self, key: str, rank: int) -> int | None:
        """How many more of group ``key``'s collectives ``rank`` issued than its level peers
        issued in theirs of the same description; None where they do not tell."""
        if (key, rank) not in self._offsets:
            self._offsets[(key, rank)] = self._offset(key, rank)
        return self._offsets[(key, rank)]

    def _offset(self, key: str, rank: int) -> int | None:
        group = self.index.groups.get(key)
        mine = self._issued(key, rank)
        if group is None or not group.desc or mine is None:
            return None
        expected = self._expected(group, rank)
        return None if expected is None else mine - expected

    def stalled(self, stalled: dict[tuple[str, int], list[int]]) -> list[Mismatch]:
        """Collectives every member issued and none completed, where some members issued one
        collective more or fewer of the group than their level peers while the others match
        theirs: those members are at another call than the rest (a skipped or added one whose
        entry shows nothing else, as an all_to_all of the same shapes at another point)."""
        found = []
        for (key, seq), ranks in sorted(stalled.items(), key=lambda kv: kv[0][1]):
            group = self.index.groups.get(key)
            if group is None or set(ranks) != set(group.ranks):
                continue
            off = {r: self.offset(key, r) for r in ranks}
            odd = tuple(sorted(r for r, d in off.items() if d in (-1, 1)))
            rest = [r for r in ranks if r not in odd]
            if not odd or not rest or any(off[r] != 0 for r in rest) or len({off[r] for r in odd}) != 1:
                odd, rest, off = self._odd_inside(group)
                if not odd:
                    continue
            shift = 1 if off[odd[0]] < 0 else -1
            expected = str(self._issued(key, rest[0]))
            mine = {r: str(self._issued(key, r)) for r in odd}
            found.append(Mismatch(key, seq, ISSUED, FailureClass.DESYNC, odd, expected, mine, "counts", shift))
        return found

    def _odd_inside(self, group: ProcessGroup) -> tuple[tuple[int, ...], list[int], dict[int, int]]:
        """Where the group holds all of its members' program-mates (no level peer outside it):
        the members one off the count most members issued, each level in another group with
        a member of that majority (they are at the same point, so the count should agree)."""
        counts = {r: self._issued(group.key, r) for r in group.ranks}
        if None in counts.values():
            return (), [], {}
        top = Counter(counts.values()).most_common(2)
        if len(top) < 2 or top[0][1] == top[1][1] or 2 * top[0][1] <= len(counts):
            return (), [], {}
        usual = top[0][0]
        off = {r: c - usual for r, c in counts.items()}
        odd = tuple(sorted(r for r, d in off.items() if d))
        rest = [r for r in group.ranks if not off[r]]
        if len({off[r] for r in odd}) != 1 or abs(off[odd[0]]) != 1:
            return (), [], {}
        if not all(self._level_with(r, set(rest), group.key) for r in odd):
            return (), [], {}
        return odd, rest, off

    def _level_with(self, rank: int, others: set[int], leave_out: str) -> bool:
        """``rank`` shares a group other than ``leave_out`` with one of ``others``, every member
        of it having issued as many of its collectives."""
        return any(
            g.key != leave_out and others & set(g.ranks) and self._is_level(g) for g in self.groups_of.get(rank, [])
        )
