"""Silent ranks left behind by their step-mates, though no visible wait points at them.

A rank stuck on the CPU side issues nothing more. Usually its peers wait on it in the
next collective, and the wait-for graph finds it; but when the peers of that collective
are themselves blocked elsewhere (two faults, or a pipeline), nobody waits on it
visibly. Its step-mates (the group it moves in step with, see :mod:`.consequences`)
show where it should be: when every one of them went on to a collective it never
issued and waits there, while it waits in nothing, it stopped on its own.
"""

from __future__ import annotations

from ..model.order import ProgramOrder
from ..types import FailureClass
from .analysis import Analysis
from .consequences import Steps
from .findings import NEVER, Finding, Kind, Role


def left_behind(a: Analysis, order: ProgramOrder, blocked_ranks: set[int], known: set[int]) -> list[Finding]:
    """Silent ranks (not in ``known``) whose step-mates all wait in collectives they never issued."""
    steps = Steps(a, blocked_ranks)
    heads = {b.rank: b for b in a.graph.blocked if not b.queued and not b.is_p2p}
    found = []
    for rank in sorted(steps.silent - known):
        g = steps.step_group(rank)
        mates = [r for r in g.ranks if r != rank] if g is not None else []
        if not mates or not all(m in heads for m in mates):
            continue
        tokens = {order.token(heads[m].pg_key, heads[m].seq) for m in mates}
        if any(rank in order.issuers(t) for t in tokens):
            continue
        b = heads[mates[0]]
        found.append(
            Finding(
                Kind.LEFT_BEHIND,
                Role.SUSPECT,
                (rank,),
                FailureClass.MISSING_PARTICIPANT,
                b.pg_key,
                b.seq,
                b.op,
                waiters=tuple(mates),
                since=NEVER,
                detail={"step_group": g.key},
            )
        )
    return found
