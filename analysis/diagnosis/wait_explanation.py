"""Layer 3 in waits: a wait-for cycle explained by what each of its waits needs (``docs/one-model.md``).

Where neither the records (:mod:`.explanation`) nor the counts (:mod:`.count_explanation`)
tell which member left its program, the waits of the cycle still weigh the sides. A wait
on a member that issued the call, queued behind an earlier one of its own (``queued``) or
still behind on it (``behind``), follows from that member's own block and costs nothing.
So does a wait in a collective it has not issued where its own records put that call
after the one it is blocked in: two families it issues in strict turn, the one it waits in
its turn now (it is where its program puts it). Any other wait (a collective it never
issued, a send/recv it never posted) needs an edit:
the member waited on skipped the call, or the member waiting added it. Where every wait
that needs one is on one member, the cheaper side of ``model/costs`` is the cause: that
member's skips against the waiters' extras. An extra of a call the program issues (a
send/recv of a group that posted others, a collective its group issued before) costs more
than a skip; a skip of a call the dumps show as the waiters' own costs more than their
extra. Equal costs, or waits on more than one member, decide nothing.
"""

from __future__ import annotations

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
    """The cheaper side of the waits that need an edit."""

    ranks: tuple[int, ...]
    edit: str
    """``skip``: the member waited on skipped the calls; ``extra``: the waiter added its call."""
    cost: float
    against: float
    """What the other side would cost."""


def wait_cause(waits: list[CycleWait]) -> WaitCause | None:
    """The cause of a cycle by its waits (see the module docstring); None where they do not decide."""
    costly = [w for w in waits if not w.free]
    blockers = {w.blocker for w in costly}
    if len(blockers) != 1:
        return None
    (blocker,) = blockers
    calls = {w.call: w.program_call or any(x.program_call for x in costly if x.call == w.call) for w in costly}
    skip = sum(costs.SKIP if program else costs.SKIP_OWN for program in calls.values())
    added = {(w.waiter, w.call): w.program_call for w in costly}
    extra = sum(costs.EXTRA_PROGRAM if program else costs.EXTRA for program in added.values())
    waiters = tuple(sorted({w for w, _ in added}))
    if skip < extra:
        return WaitCause((blocker,), SKIP, skip, extra)
    if extra < skip and len(waiters) == 1:
        return WaitCause(waiters, EXTRA, extra, skip)
    return None


def in_turn(families: list[str], blocked_in: str, waited_in: str) -> bool:
    """Whether a rank whose records hold calls of ``families`` (oldest first, up to the call
    it is blocked in) issues the two families in strict turn, at least a round of each, so
    that the call of ``waited_in`` it is waited for comes after the one it is blocked in."""
    turns = [f for f in families if f in (blocked_in, waited_in)]
    return (
        blocked_in != waited_in
        and len(turns) >= 3
        and turns[-1] == blocked_in
        and all(x != y for x, y in pairwise(turns))
    )
