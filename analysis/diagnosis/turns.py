"""Two groups a rank issues in turn: one that issued two of one without the other between
left the program there.

Some groups issue one collective a step each, always in the same order (the embedding
group's all_reduce, then the gradient norm's over the model-parallel group). Where a
rank's records show two such families in strict turn for at least ``MIN_TURNS`` rounds,
and its newest two of them are of one family, it added one of that family or skipped
the other's; where every rank it issues them with (the members of its groups of the two
families) that issued both kept the turns, a member of the wait-for cycle among them, that
rank is the one that left the program. Neither seq numbers nor step
boundaries are needed: only the order of the rank's own records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import combinations, pairwise

from ..model.order import ProgramOrder, Token

MIN_TURNS = 1
"""Rounds (one collective of each family) a rank must have kept before the break."""


def _sequence(history: list[Token], pair: tuple[str, str]) -> list[str]:
    return [family for family, _ in history if family in pair]


def _kept(sequence: list[str]) -> bool:
    """Strict turns all along, at least ``MIN_TURNS`` rounds."""
    return len(sequence) >= 2 * MIN_TURNS and all(x != y for x, y in pairwise(sequence))


def broken_turns(history: list[Token], families: Iterable[str]) -> list[tuple[str, str]]:
    """The (doubled family, skipped family) pairs whose strict turns the newest records broke:
    the last two of the pair are of one family, all before them in turn."""
    found = []
    for pair in combinations(sorted(set(families)), 2):
        sequence = _sequence(history, pair)
        if len(sequence) > 2 * MIN_TURNS and sequence[-1] == sequence[-2] and _kept(sequence[:-1]):
            doubled = sequence[-1]
            found.append((doubled, pair[0] if doubled == pair[1] else pair[1]))
    return found


def left_the_turns(
    order: ProgramOrder, comp: list[int], issuers: Callable[[int, tuple[str, str]], Iterable[int]], quiet: set[str]
) -> dict[int, tuple[str, str]]:
    """Members of ``comp`` that broke turns that every other rank that issued both families
    (``issuers(member, pair)``: the ranks it issues them with) kept, a member of ``comp``
    among them: member -> (doubled family, skipped family). Families in ``quiet``
    (send/recv groups) are left out."""
    found: dict[int, tuple[str, str]] = {}
    for r in comp:
        history = order.history(r)
        for doubled, skipped in broken_turns(history, {f for f, _ in history} - quiet):
            pair = (doubled, skipped)
            others = [m for m in set(issuers(r, pair)) - {r} if set(pair) <= {f for f, _ in order.history(m)}]
            kept = all(_kept(_sequence(order.history(m), pair)) for m in others)
            if kept and any(m in comp for m in others):
                found[r] = pair
                break
    return found
