"""Layer 3 in waits: a wait-for cycle explained by what each of its waits needs (``docs/one-model.md``).

Where neither the records (:mod:`.explanation`) nor the counts (:mod:`.count_explanation`)
tell which member left its program, the waits of the cycle still weigh the sides.

- A wait on a member that issued the call, queued behind an earlier one of its own
  (``queued``) or still behind on it (``behind``), follows from that member's own block and
  costs nothing. So does a wait in a collective it has not issued where its own records put
  that call after the one it is blocked in: two families it issues in strict turn, the one
  it waits in its turn now; or where its block follows its routine (its records show the
  call it is blocked in after every earlier record of its previous call): it is where its
  program puts it, and went past nothing since its previous call.
- Any other wait (a collective the member waited on never issued, a send/recv it never
  posted) needs an edit: that member skipped the call, or the member waiting added it. An
  extra of a call the program issues (a send/recv of a group that posted others, a
  collective its group issued before) costs more than a skip; a skip of a call the dumps
  show as the waiter's own costs more than its extra.
- One member's one departure explains every such wait it is at one end of: having skipped
  the calls it is waited in, it went on to the call it waits in, where the others, held
  at what it skipped, never come; having added the call it waits in, it never gets to the
  calls it is waited in. A member blocked in a call that breaks two families' strict
  turns in its own records (the second of one family in a row, turns the other members
  that issue both keep) is blocked in a call of its own, an extra no program issues.
- The cause is the member at one end of every wait that needs an edit (its own waits all
  in one call, on members that wait on it: held by its departure, not by something else)
  whose cheaper departure costs strictly less than any other such member's and than
  explaining the waits without it (the waiters' extras, the blockers' skips).
  Equal costs, or no such member, decide nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

from ..model import costs
from .edit_distance import EXTRA, SKIP


@dataclass(frozen=True, slots=True)
class CycleWait:
    """One wait between two members of a cycle."""

    waiter: int
    blocker: int
    call: tuple[str, int]
    """The group and seq (p2p seq for a send/recv) waited in."""
    free: bool
    """The blocker issued the call and its own block explains the wait."""
    program_call: bool
    """The call is one the program issues (not shown to be the waiter's own)."""


@dataclass(frozen=True, slots=True)
class WaitCause:
    """The member whose one departure explains every wait of a cycle that needs an edit."""

    ranks: tuple[int, ...]
    edit: str
    """``skip``: it skipped the calls it is waited in; ``extra``: it added the call it waits in."""
    cost: float
    against: float
    """What the same waits cost explained without it (the waiters' extras, the blockers' skips)."""


def wait_cause(waits: list[CycleWait], own: Mapping[int, tuple[str, int]] | None = None) -> WaitCause | None:
    """The cause of a cycle by its waits (see the module docstring); None where they do not
    decide. ``own``: the members blocked in a call of their own, with that call."""
    costly = [w for w in waits if not w.free]
    if not costly:
        return None
    own = own or {}
    ends = {w.blocker for w in costly} | {w.waiter for w in costly}
    found = [c for r in sorted(ends) if (c := _departure(costly, r, r in own, _held_by(waits, r))) is not None]
    if not found:
        return None
    best = min(found, key=lambda c: c.cost)
    others = [c.cost for c in found if c is not best]
    return best if best.cost < best.against and all(best.cost < x for x in others) else None


def _held_by(waits: list[CycleWait], rank: int) -> set[int]:
    """The members that wait on ``rank`` in some call."""
    return {w.waiter for w in waits if w.blocker == rank}


def _departure(costly: list[CycleWait], rank: int, own: bool, held: set[int]) -> WaitCause | None:
    """``rank``'s one departure that explains every wait of ``costly``, where it is at one end
    of each, waits in one call at most, and only on members ``held`` (they wait on it: its
    departure holds them, whichever it is): its cheaper edit, against what the waits cost
    explained without it."""
    if any(rank not in (w.blocker, w.waiter) for w in costly):
        return None
    if any(w.blocker not in held for w in costly if w.waiter == rank):
        return None
    on = {
        w.call: w.program_call or any(x.program_call for x in costly if x.call == w.call and x.blocker == rank)
        for w in costly
        if w.blocker == rank
    }
    mine = {w.call: w.program_call for w in costly if w.waiter == rank}
    if len(mine) > 1:
        return None
    skip = sum(costs.SKIP if program else costs.SKIP_OWN for program in on.values()) if on else math.inf
    extra = sum(costs.EXTRA_PROGRAM if program else costs.EXTRA for program in mine.values()) if mine else math.inf
    if own and not mine:
        extra = costs.EXTRA  # blocked in a call of its own, on which nobody waits in vain
    waiters_add = sum(costs.EXTRA_PROGRAM if w.program_call else costs.EXTRA for w in costly if w.blocker == rank)
    blockers_skip = sum(costs.SKIP if w.program_call else costs.SKIP_OWN for w in costly if w.waiter == rank)
    against = waiters_add + blockers_skip
    if skip == extra == math.inf:
        return None
    kind = SKIP if skip < extra or (skip == extra and not own) else EXTRA
    return WaitCause((rank,), kind, min(skip, extra), against)


def out_of_turn(families: list[str]) -> tuple[str, str] | None:
    """The two families whose strict turns the newest of ``families`` (a rank's records,
    oldest first) breaks: (its family, the other), where the two before it were in strict
    turn for at least a round; None where it breaks none."""
    newest = families[-1] if families else None
    for other in sorted(set(families) - {newest}):
        turns = [f for f in families if f in (newest, other)]
        if len(turns) >= 3 and turns[-2] == newest and strict(turns[:-1]):
            return newest, other
    return None


def strict(turns: list[str]) -> bool:
    """Two families in strict turn, at least a round of each."""
    return len(turns) >= 2 and all(x != y for x, y in pairwise(turns))


def in_routine(calls: list[int]) -> bool:
    """Whether a rank whose records hold ``calls`` (oldest first, up to the call it is blocked
    in, equal where the call is) is blocked where its routine puts it: every earlier record
    of its previous call (one at least) was followed by the call it is blocked in."""
    if len(calls) < 3:
        return False
    before, block = calls[-2], calls[-1]
    after = [calls[i + 1] for i in range(len(calls) - 2) if calls[i] == before]
    return bool(after) and all(c == block for c in after)


def in_turn(families: list[str], blocked_in: str, waited_in: str) -> bool:
    """Whether a rank whose records hold calls of ``families`` (oldest first, up to the call
    it is blocked in) issues the two families in strict turn, at least a round of each, so
    that the call of ``waited_in`` it is waited for comes after the one it is blocked in."""
    turns = [f for f in families if f in (blocked_in, waited_in)]
    return blocked_in != waited_in and len(turns) >= 3 and turns[-1] == blocked_in and strict(turns)
