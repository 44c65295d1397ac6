"""Roots of the wait-for graph that are consequences, not causes.

Two things the dumps cannot show directly make victims look like roots:

- a hang that began after a mismatch: a rank that stopped issuing only after the
  mismatch was issued is waiting on its consequences;
- in gloo dumps (no send/recv recorded), a rank blocked in a send/recv with a stuck
  pipeline peer waits in no recorded collective, like a stuck rank. A CPU-side stall
  strikes one process; a whole group that stopped cleanly together, every member at
  the same point and none waiting in a collective, is blocked on a pipeline peer.
"""

from __future__ import annotations

from ..types import FailureClass
from .analysis import Analysis
from .findings import Finding, Kind, Role
from .waitfor import WaitEdge


def _silent(f: Finding, blocked_ranks: set[int]) -> bool:
    """A suspect only because peers wait on it: it waits in no recorded collective itself."""
    return f.failure_class == FailureClass.MISSING_PARTICIPANT and f.rank not in blocked_ranks


def drop_consequences(
    a: Analysis,
    into: dict[int, list[WaitEdge]],
    blocked_ranks: set[int],
    findings: list[Finding],
    mismatch_since: int | None,
    mismatch_members: set[int],
) -> tuple[list[Finding], list[Finding]]:
    """The findings that stay causes, and notes for those set aside (role CLEARED) or cautions."""
    kept: list[Finding] = []
    notes: list[Finding] = []
    for f in findings:
        if mismatch_members and f.rank in mismatch_members:
            continue  # part of the mismatch found before the hang
        if mismatch_since is not None and _silent(f, blocked_ranks) and f.since > mismatch_since:
            notes.append(Finding(Kind.CONSEQUENCE, Role.CLEARED, f.ranks))
            continue
        kept.append(f)
    if a.records_p2p:
        return kept, notes
    roots = {k.rank for k in kept}
    clean = [f for f in kept if _silent(f, blocked_ranks) and _stopped_cleanly(a, into, blocked_ranks, f.rank, roots)]
    if clean and (len(clean) < len(kept) or mismatch_since is not None):
        notes.append(Finding(Kind.PIPELINE_BLOCKED, Role.CLEARED, tuple(sorted(f.rank for f in clean))))
        kept = [f for f in kept if f not in clean]
    elif any(_silent(f, blocked_ranks) for f in kept):
        notes.append(Finding(Kind.P2P_INVISIBLE, Role.NOTE, ()))
    return kept, notes


def _stopped_cleanly(
    a: Analysis, into: dict[int, list[WaitEdge]], blocked_ranks: set[int], rank: int, roots: set[int]
) -> bool:
    """Some group of ``rank`` (not the whole world) stopped at one point, all silent roots."""
    world = len(a.dumps.ranks)
    for g in a.groups.groups.values():
        if rank not in g.ranks or len(g.ranks) < 2 or len(g.ranks) >= world:
            continue
        positions = {a.progress[(g.key, r)].enqueued for r in g.ranks if (g.key, r) in a.progress}
        all_silent = all(r in roots and r not in blocked_ranks for r in g.ranks)
        waited_here = any(e.pg_key == g.key for e in into.get(rank, []))
        if all_silent and len(positions) == 1 and not waited_here:
            return True
    return False
