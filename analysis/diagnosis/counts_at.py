"""Where a rank stood when it issued a collective, from its counts and its newest records.

A rank's count in a family (its last issued seq there, from pg_status or its entries),
less the collectives of that family its records show it issued after a collective, is
how many of that family it had issued when it issued that collective. Ranks of one
program had issued the same number when they issued the same collective; a rank that
had issued fewer went past one (it skipped it). This needs only the newest records, so
it holds where the dumps keep only pending entries, or a small ring buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..model.order import ProgramOrder, Token
from .analysis import Analysis

MIN_VOTERS = 2
"""Ranks of the program that must have issued the collective, all agreeing, to compare with."""


class CountsAt:
    """Counts per family at the time a rank issued a collective, compared with its program-mates'."""

    def __init__(
        self, a: Analysis, order: ProgramOrder, stage_of: Callable[[int], Hashable | None] = lambda rank: None
    ) -> None:
        self.a, self.order = a, order
        self.family_of = a.families.family_of
        self.stage_of = stage_of

    def count_at(self, rank: int, token: Token, family: str) -> int | None:
        """How many of ``family``'s collectives ``rank`` had issued when it issued ``token``
        (its last seq there); None where it has no one group of that family or no count."""
        key = self._group_of(rank, family)
        if key is None or (p := self.a.progress.get((key, rank))) is None or p.enqueued is None:
            return None
        return p.enqueued - self.order.count_after(rank, token, family)

    def _theirs(self, token: Token, family: str, mates: list[int], rank: int | None = None) -> int | None:
        """What the mates that issued ``token`` had issued of ``family`` then, where two or
        more did and all agree; where fewer mates did, the ranks of any program that share
        with ``rank`` both its group of ``token``'s family and its group of ``family`` vote
        too: two ranks that meet in two groups issue their collectives in one order, or they
        deadlock (the embedding group joins the first and last stages in the model-parallel
        group)."""
        issuers = self.order.issuers(token) - {rank}
        voters = issuers & set(mates)
        if len(voters) < MIN_VOTERS and rank is not None:
            voters |= issuers & self._met_in(rank, token[0]) & self._met_in(rank, family)
        counts = {self.count_at(m, token, family) for m in voters}
        if len(voters) < MIN_VOTERS or len(counts) != 1 or None in counts:
            return None
        stage = self.stage_of(rank) if rank is not None else None
        if stage is not None and not any(self.stage_of(m) == stage for m in voters):
            return None  # a family may issue more per step at one stage than at another
        return counts.pop()

    def _met_in(self, rank: int, family: str) -> set[int]:
        """The other members of ``rank``'s group of ``family`` (none unless it has one)."""
        key = self._group_of(rank, family)
        return set(self.a.groups.groups[key].ranks) - {rank} if key is not None else set()

    def went_past(self, rank: int, key: str, seq: int, mates: list[int]) -> Token | None:
        """A collective ``rank`` issued that ``mates`` issued only once they had issued (``key``'s
        family, ``seq``), which ``rank`` had not issued by then: it went past it."""
        family = self.order.token(key, seq)[0]
        for token in self.order.recent(rank):
            if token[0] == family:
                continue
            mine, theirs = self.count_at(rank, token, family), self._theirs(token, family, mates, rank)
            if mine is not None and theirs is not None and mine < seq <= theirs:
                return token
        return None

    def off_at(self, rank: int, mates: list[int]) -> tuple[str, int, Token] | None:
        """Where ``rank`` issued a collective at another point of the program than ``mates``
        did (it had issued fewer, or more, of one of its groups' collectives then): the
        collective it skipped, as (group, seq), and where it went on to instead. Fewer: it
        skipped the group's next seq and went on to that collective. More: its seq of that
        collective's group stands where they issue a later one; it skipped the one they
        issued at that seq and went on to the group's seq they issue only after it."""
        groups = [g for g in self.a.levels.groups_of.get(rank, []) if g.desc and len(g.ranks) > 1]
        for token in self.order.recent(rank):
            for g in groups:
                family = self.family_of.get(g.key, g.key)
                if family == token[0]:
                    continue
                mine, theirs = self.count_at(rank, token, family), self._theirs(token, family, mates, rank)
                if mine is None or theirs is None or mine == theirs:
                    continue
                if mine < theirs:
                    return g.key, mine + 1, token
                key = self._group_of(rank, token[0])
                if key is not None:
                    return key, token[1], (family, theirs + 1)
        return None

    def _group_of(self, rank: int, family: str) -> str | None:
        """``rank``'s one group of ``family`` (None where it has none, or several)."""
        groups = [g.key for g in self.a.levels.groups_of.get(rank, []) if self.family_of.get(g.key, g.key) == family]
        return groups[0] if len(groups) == 1 else None
