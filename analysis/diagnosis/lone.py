"""Collectives only one rank issued, where that rank left its routine: an added collective.

A rank blocked in a collective no other member issued waits on all of them, so they look
like the ranks holding it up. Where the rank's own earlier steps issued something else
at that point, and no rank of its program left the routine there, the lone collective is
one the rank added (a debug metric, say): a desync that explains the wait, like a mismatch.
"""

from __future__ import annotations

from ..model.order import ProgramOrder
from .analysis import Analysis
from .findings import Finding
from .hang import departed_finding, extra_finding
from .routines import Routines


def lone_departures(a: Analysis, order: ProgramOrder) -> list[Finding]:
    """Ranks blocked in a collective only they issued, which departs from their routine."""
    blocked = {b.rank for b in a.graph.blocked}
    routines: Routines | None = None
    found = []
    for b in a.graph.blocked:
        if b.queued or b.is_p2p or order.issuers(order.token(b.pg_key, b.seq)) != {b.rank}:
            continue
        routines = routines or Routines(a, blocked)
        own = [d for d in routines.own_departures(b.rank) if (d.pg_key, d.seq) == (b.pg_key, b.seq)]
        if not own:
            continue
        peers = [p for p in a.groups.groups[b.pg_key].ranks if p != b.rank]
        if order.is_extra(b.rank, order.token(b.pg_key, b.seq), peers):  # its peers went on: say so
            found.append(extra_finding(a, b.rank, b.pg_key, b.seq, b.op, since=-1))
        else:
            found.append(departed_finding(b.rank, own[0], since=-1))
    return found
