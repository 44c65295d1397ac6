"""Findings for a root of the wait-for graph that no departure explains: a rank stuck in a
collective its peers completed (a straggler), or one its peers wait on (why, from the
reasons they wait)."""

from __future__ import annotations

from collections import Counter

from ..types import FailureClass
from .findings import NEVER, Finding, Kind, Role
from .hang_view import HangView
from .waitfor import WaitEdge, WaitReason


def _first_wait(w: HangView, rank: int, comp: list[int]) -> WaitEdge | None:
    """Where progress diverged first: the wait on ``rank`` whose pending op was issued earliest."""
    incoming = [e for e in w.into.get(rank, []) if e.waiter not in comp] or w.into.get(rank, [])
    if not incoming:
        return None
    return min(
        incoming,
        key=lambda e: (e.reason != WaitReason.NOT_ISSUED, w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq),
    )


def straggler(w: HangView, rank: int) -> Finding:
    b = w.graph.stragglers[rank]
    g = w.a.groups.groups[b.pg_key]
    progress = w.a.progress
    done_by = tuple(
        p
        for p in g.ranks
        if p != rank and (pp := progress.get((g.key, p))) and pp.completed is not None and pp.completed >= b.seq
    )
    return Finding(
        Kind.STRAGGLER,
        Role.SUSPECT,
        (rank,),
        FailureClass.STALLED_IN_FLIGHT,
        g.key,
        b.seq,
        b.op,
        since=w.created.get((g.key, rank, b.seq), NEVER),
        detail={"completed_by": done_by},
    )


def waited_on(w: HangView, rank: int, comp: list[int]) -> Finding | None:
    """``rank`` holds others up: why, from the reasons its waiters wait."""
    e0 = _first_wait(w, rank, comp)
    if e0 is None:
        return None
    incoming = w.into[rank]
    reasons = Counter(e.reason for e in incoming)
    waiters = w.waiters_at(rank, e0.pg_key, e0.seq)
    detail: dict = {}
    if reasons.get(WaitReason.NO_DUMP):
        kind, cls = Kind.NO_DUMP, FailureClass.MISSING_DUMP
    elif reasons.get(WaitReason.P2P_UNMATCHED) and not reasons.get(WaitReason.NOT_ISSUED):
        # a rank that waits in nothing stopped before posting it (CPU side); one blocked further
        # on went on without it
        e0 = min((e for e in incoming if e.reason == WaitReason.P2P_UNMATCHED), key=lambda e: (e.seq, e.waiter))
        waiters = w.waiters_at(rank, e0.pg_key, e0.seq)
        stopped = rank not in w.blocked_ranks
        kind = Kind.P2P_UNMATCHED
        cls = FailureClass.MISSING_PARTICIPANT if stopped else FailureClass.P2P_UNMATCHED
        detail = {"stopped": stopped}
    elif reasons.get(WaitReason.NO_RECORD) and not reasons.get(WaitReason.NOT_ISSUED):
        kind, cls = Kind.NO_RECORD, FailureClass.MISSING_PARTICIPANT
    else:
        kind, cls = Kind.NOT_ISSUED, FailureClass.MISSING_PARTICIPANT
        p = w.a.progress.get((e0.pg_key, rank))
        detail = {
            "last_seq": p.enqueued if p and p.enqueued is not None and p.enqueued >= 0 else None,
            "call_site": w.site(e0.pg_key, e0.seq, waiters[0]) if waiters else None,
            "silent": rank not in w.blocked_ranks,
        }
    since = w.since([e for e in incoming if e.reason == e0.reason])
    return Finding(kind, Role.SUSPECT, (rank,), cls, e0.pg_key, e0.seq, e0.op, waiters, since, detail)


def held_by_stall(w: HangView, rank: int) -> bool:
    """``rank`` issued what its peers wait for (they wait only on collectives it holds queued
    or is behind on), and is itself blocked at a collective every member issued and none
    completed: it is held by whatever holds that collective (in a small buffer, an op
    before the window), not a cause in its own right."""
    incoming = w.into.get(rank, [])
    if not incoming or any(e.reason not in (WaitReason.QUEUED, WaitReason.BEHIND) for e in incoming):
        return False
    heads = w.heads.get(rank, [])
    return bool(heads) and all((b.pg_key, b.seq) in w.graph.stalled for b in heads)
