"""Layer 3 in counts: which members of a wait-for cycle explain it (``docs/one-model.md``).

Where the records cannot decide (the call skipped lies before the ring buffer holds any,
the dumps hold only pending entries, the records are numbered apart), the points of
:mod:`..model.counts` still can. Each member is compared with the ranks of its program:

- at its **place**: the ranks of its program blocked in the collective it is blocked in
  hold the point it should hold, as they stood when they issued it (in step at one place,
  it is in step in the families counted there; a departure at another place, in families
  not counted there, stands); where none is, the ranks waiting for it in a collective
  it has not issued hold the point it would hold once it issues that one (and every other
  collective it is waited in that they issued before: one fewer of those is no edit);
- a rank that issued more of every other family than the ranks there had when they issued
  that collective, two or more in all, went past it: one skip, its later calls its
  program's; where it holds that collective, it issued the family's next one at that seq
  (a count-neutral skip). One more in all is as well one extra before it: where the rank
  holds the collective, the explanation takes the reading that explains a wait (an extra
  where it waits in that family, else the skip where peers wait for it in the one it
  holds); where they wait for it, it stays an extra;
- elsewhere: a point incomparable with most of theirs (more of one family, fewer of
  another) is off the chain their program makes.

The difference is an edit of ``model/costs``: one fewer of a family is a skip, one more an
extra, one more of one and one fewer of another a call of another group in place of the
program's. The members whose edit explains a wait of the cycle are its causes (as in
:mod:`.explanation`); more than one edit, or ranks that disagree, decide nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from .. import schema as s
from ..model import costs
from ..model.counts import Point
from .edit_distance import EXTRA, SKIP, SUBSTITUTE


@dataclass(frozen=True, slots=True)
class Place:
    """A collective of the program, where a rank is compared with the ranks of its program."""

    family: str
    seq: int
    waited: bool
    """They issued it and wait for the rank there (it is compared as if it had issued it too);
    else the rank is blocked in it as well."""
    op: str = ""
    """For a send/recv: the op and the side of its neighbour (``recv+1``: from the next rank of
    the group), in place of a seq (each rank numbers its own): the ranks blocked in the same
    op from the same side at the same point hold the same counts."""


@dataclass(frozen=True, slots=True)
class CountEdit:
    """How one rank's point departs from its program's."""

    rank: int
    kind: str
    """``skip``, ``extra`` or ``substitute``."""
    fewer: str | None
    """The family it issued one collective fewer of."""
    more: str | None
    """The family it issued one collective more of."""
    place: Place | None
    """Where it was compared; None: against the chain of its program's points."""
    against: tuple[int, ...]
    cost: float
    went_on: tuple[tuple[str, int], ...] = ()
    """For a skip of the call its peers wait for it in, or of the call it holds: how many more
    of each other family it issued than they had when they issued that one (it went on with
    its program)."""
    or_skip: str | None = None
    """For one more of a family where it holds a call of another (this family): as well a
    skip of that one, the rank's call there being the family's next (the same count of
    either edit). The explanation takes the reading that explains a wait."""

    def as_skip(self) -> CountEdit:
        """The other reading of an extra with ``or_skip``: a skip of the call it holds."""
        assert self.or_skip is not None and self.more is not None
        went_on = ((self.more, 1),)
        return CountEdit(self.rank, SKIP, self.or_skip, None, self.place, self.against, costs.SKIP, went_on)


def difference(mine: Point, theirs: list[Point]) -> dict[str, int] | None:
    """How many more of each family ``mine`` holds than most of ``theirs``; None where they
    do not agree on a family (no majority)."""
    diff = {}
    for family, count in mine.items():
        held = Counter(p[family] for p in theirs if family in p)
        if not held:
            continue
        ((usual, n),) = held.most_common(1)
        if 2 * n <= sum(held.values()):
            return None
        if count != usual:
            diff[family] = count - usual
    return diff


def off_the_chain(mine: Point, theirs: Mapping[int, Point]) -> tuple[dict[str, int], tuple[int, ...]] | None | bool:
    """Where ``mine`` is incomparable with most of ``theirs``: the difference from the nearest
    such point, and the ranks whose points it is incomparable with; None where it is on their
    chain; False where fewer than two compare."""
    compared, odd = 0, []
    for rank, point in theirs.items():
        diff = {f: mine[f] - point[f] for f in mine if f in point and mine[f] != point[f]}
        if not any(f in point for f in mine):
            continue
        compared += 1
        if any(d > 0 for d in diff.values()) and any(d < 0 for d in diff.values()):
            odd.append((sum(abs(d) for d in diff.values()), rank, diff))
    if compared < 2:
        return False
    if 2 * len(odd) <= compared:
        return None
    _, _, nearest = min(odd)
    return nearest, tuple(sorted(r for _, r, _ in odd))


def _edit(rank: int, diff: dict[str, int], place: Place | None, against: tuple[int, ...]) -> CountEdit | bool:
    """The one edit ``diff`` is, or False where it is more than one."""
    fewer = [f for f, d in diff.items() if d < 0]
    more = [f for f, d in diff.items() if d > 0]
    if sum(-diff[f] for f in fewer) > 1 or sum(diff[f] for f in more) > 1:
        return False
    if fewer and more:
        return CountEdit(rank, SUBSTITUTE, fewer[0], more[0], place, against, costs.SUBSTITUTE[s.OP])
    if fewer:
        return CountEdit(rank, SKIP, fewer[0], None, place, against, costs.SKIP)
    return CountEdit(rank, EXTRA, None, more[0], place, against, costs.EXTRA)


def count_departure(
    rank: int,
    points: Mapping[int, Point],
    places: Mapping[Place, tuple[int, ...]],
    mates: frozenset[int],
    at: Callable[[int, Place], Point] | None = None,
) -> CountEdit | None | bool:
    """``rank``'s edit against the ranks of its program (``mates``); None where it is in step;
    False where nothing tells. ``places``: the collectives it holds pending or is waited for
    in, each with the ranks of its program blocked there (see the module docstring); ``at``:
    a rank's point where it issued the call it holds at a place (its point by default)."""
    mine = points.get(rank, {})
    at = at or (lambda r, place: points.get(r, {}))
    blocked = {p: ranks for p, ranks in places.items() if ranks and not p.waited}
    where = blocked or {p: ranks for p, ranks in places.items() if ranks}
    waited_in = {p.family for p in places if p.waited}
    found = []
    for place, ranks in sorted(where.items(), key=lambda kv: (kv[0].family, kv[0].seq)):
        me = dict(mine) if place.waited else dict(at(rank, place))
        if place.waited and place.family in me:
            me[place.family] += 1
        theirs = [at(r, place) for r in ranks if r in points]
        diff = difference(me, theirs)
        if diff is None:
            continue  # the ranks there disagree among themselves
        if place.waited:  # it stands before every call it is waited in: one fewer of those is no edit
            diff = {f: d for f, d in diff.items() if not (d == -1 and f in waited_in)}
        found.append((place, ranks, diff, {f for f in me if any(f in p for p in theirs)}))
    in_step = {f for _, _, diff, compared in found if not diff for f in compared}
    departed = [(place, ranks, diff) for place, ranks, diff, _ in found if diff and not in_step & diff.keys()]
    if departed:
        return _departure(rank, departed)
    if found:
        return None  # at one point with the ranks of its program where it was compared
    if where:
        return False
    chain = off_the_chain(mine, {m: points[m] for m in sorted(mates) if m != rank and m in points})
    return chain if chain is None or chain is False else _edit(rank, chain[0], None, chain[1])


def _departure(rank: int, departed: list[tuple[Place, tuple[int, ...], dict[str, int]]]) -> CountEdit | bool:
    """The edit of the places where ``rank`` departs: where it issued more of every other
    family than the ranks there, two or more in all, it went past that call (one skip);
    else the smallest difference."""
    for place, ranks, diff in departed:
        if all(d > 0 for d in diff.values()) and sum(diff.values()) > 1:  # went on without it
            went_on = tuple(sorted(diff.items()))
            return CountEdit(rank, SKIP, place.family, None, place, ranks, costs.SKIP, went_on)
    place, ranks, diff = min(departed, key=lambda found: sum(abs(d) for d in found[2].values()))
    edit = _edit(rank, diff, place, ranks)
    neutral = isinstance(edit, CountEdit) and edit.kind == EXTRA and not place.waited and not place.op
    return replace(edit, or_skip=place.family) if neutral else edit


def count_causes(
    comp: list[int], departures: Mapping[int, CountEdit | None | bool], explains: Callable[[CountEdit], bool]
) -> dict[int, CountEdit] | None:
    """The members of cycle ``comp`` whose points explain it: those whose edit ``explains`` a
    wait, where not every member departs; an edit measured only against ranks that depart
    too stands where strictly cheaper than theirs and theirs are measured so too (a pair
    departing from each other), and one measured only against ranks the counts cannot place
    never; ranks that depart alike run another
    program than those they were measured against. None where the counts do not decide."""
    edits = {r: e for r, e in departures.items() if isinstance(e, CountEdit) and explains(e)}
    undecided = {r for r, e in departures.items() if e is False}
    doubtful = set(edits) | undecided  # ranks that may have left the program themselves
    solid = {r for r, e in edits.items() if not set(e.against) <= doubtful}
    stands = {  # measured only against departing ranks: where cheaper than theirs, measured so too
        r: e
        for r, e in edits.items()
        if r in solid or all(m in edits and m not in solid and e.cost < edits[m].cost for m in e.against)
    }
    alike = Counter((e.kind, e.fewer, e.more) for e in stands.values())
    named = {r: e for r, e in stands.items() if alike[(e.kind, e.fewer, e.more)] == 1}
    if not named or (len(comp) > 1 and (len(named) == len(comp) or len(named) + len(undecided) == len(comp))):
        return None
    return named
