"""The ranks' routines, and the departures from them that no rank of the same program shares.

A rank left its routine where it issued something else than its own earlier steps issued
after the same ops. A departure that other ranks running the same program share (a first
checkpoint barrier, a step that differs for everyone) is the program itself; a departure
only this rank made is an added or a skipped collective.
"""

from __future__ import annotations

from ..model.families import Stage
from ..model.routine import Departure, Routine, departures, routine
from .analysis import Analysis
from .consequences import Steps

SAME_PROGRAM_SAMPLE = 16
"""Ranks of the same program whose routines a departure is checked against, at most."""


class Routines:
    """Each rank's routine (read once), and its departures checked against its program's peers."""

    def __init__(self, a: Analysis, blocked_ranks: set[int]) -> None:
        self.a = a
        self.steps = Steps(a, blocked_ranks)
        self._routines: dict[int, Routine | None] = {}
        self._departures: dict[int, list[Departure]] = {}
        self._stage = a.levels.recorded_stage
        self._same: dict[int, tuple[int, ...]] = {}
        self._by_program: dict[object, list[int]] = {}
        """The ranks of each program, in rank order."""
        for r, p in sorted(self.steps.program.items()):
            self._by_program.setdefault(p, []).append(r)
        self._at_stage: dict[tuple[object, object], frozenset[int]] = {}

    def routine(self, rank: int) -> Routine | None:
        if rank not in self._routines:
            a = self.a
            rows = a.rank_rows("entries", rank)
            self._routines[rank] = routine(a.dumps.entries, rows, a.groups.key_of, a.families.family_of, rank)
        return self._routines[rank]

    def departures(self, rank: int) -> list[Departure]:
        if rank not in self._departures:
            rt = self.routine(rank)
            self._departures[rank] = departures(rt) if rt else []
        return self._departures[rank]

    def same_program(self, rank: int) -> list[int]:
        """A few other ranks that run ``rank``'s program (the same program families), those at
        its stage of the pipeline groups that record send/recvs first: a sample of one stage
        alone would speak for another stage's counts."""
        if rank not in self._same:
            program = self.steps.program
            stage = self._stage.get(rank)
            same = [r for r in self._by_program.get(program.get(rank), []) if r != rank]
            same.sort(key=lambda r: self._stage.get(r) != stage)
            self._same[rank] = tuple(same[:SAME_PROGRAM_SAMPLE])
        return list(self._same[rank])

    def stage_of(self, rank: int) -> Stage | None:
        """``rank``'s place in the pipeline (None where no group shows it)."""
        return self._stage.get(rank) or None

    def program_ranks(self, rank: int) -> set[int]:
        """Every rank that runs ``rank``'s program at its stage, ``rank`` too: where a family's
        seq stands in the program differs between stages (the stages' tensor-parallel groups
        issue different numbers of collectives per step)."""
        key = (self.steps.program.get(rank), self._stage.get(rank))
        if key not in self._at_stage:
            self._at_stage[key] = frozenset(r for r in self._by_program.get(key[0], []) if self._stage.get(r) == key[1])
        return set(self._at_stage[key]) | {rank}

    def own_departures(self, rank: int, also: list[int] = ()) -> list[Departure]:
        """``rank``'s departures that neither ``also`` nor a few ranks of its program share, oldest first."""
        shared = {
            (d.expected, d.issued) for o in {*also, *self.same_program(rank)} - {rank} for d in self.departures(o)
        }
        return [d for d in self.departures(rank) if (d.expected, d.issued) not in shared]

    def reached_by_its_program(self, rank: int, leave_out: str) -> bool:
        """Whether a rank of ``rank``'s program issued, in each of its groups, at least as many
        collectives as ``rank`` did in the group of the same family (``leave_out``, the group
        where ``rank`` departed, aside): it got to the point where ``rank`` is now."""
        steps = self.steps
        family = self.a.families.family_of
        mine = {family.get(g.key, g.key): steps.issued(g, rank) for g in steps.groups_of[rank] if g.key != leave_out}
        for mate in self.same_program(rank):
            theirs = {family.get(g.key, g.key): steps.issued(g, mate) for g in steps.groups_of[mate]}
            shared = [f for f in mine if f in theirs and mine[f] >= 0]
            if shared and all(theirs[f] >= mine[f] for f in shared):
                return True
        return False
