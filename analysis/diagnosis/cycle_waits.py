"""A wait-for cycle explained by its waits (layer 3 of the one model, see :mod:`.wait_explanation`).

The glue between the analysis and :mod:`.wait_explanation`: the waits between members of
a cycle, which of them the blocker's own block explains, whether each call is one the
program issues, and the finding the cheaper side becomes.
"""

from __future__ import annotations

import numpy as np

from .. import schema as s
from ..types import FailureClass
from .analysis import Analysis
from .count_explanation import CountEdit
from .cycle_counts import CountView
from .cycle_records import CycleWaits
from .desync import extra_finding
from .edit_distance import SKIP
from .findings import NEVER, Finding, Kind, Role
from .wait_explanation import CycleWait, WaitCause, wait_cause
from .waitfor import WaitEdge, WaitReason

FREE = (WaitReason.QUEUED, WaitReason.BEHIND)
"""Waits the blocker's own block explains: it issued the call, behind an earlier one of its own."""

NEEDS_AN_EDIT = (WaitReason.NOT_ISSUED, WaitReason.P2P_UNMATCHED)
"""Waits only a skip by the blocker or an extra by the waiter explains."""


def explain_cycle_by_waits(a: Analysis, w: CycleWaits, view: CountView, comp: list[int]) -> list[Finding]:
    """The member of cycle ``comp`` its waits name (see :mod:`.wait_explanation`), as a finding,
    where its counts show no edit against the ranks of its program: what it skipped or added
    is then what the counts cannot see (a send/recv, the order of two calls); a rank whose
    counts show one departed in its collectives, and its waits alone do not say how."""
    inside = set(comp)
    edges = [e for r in comp for e in w.into.get(r, []) if e.waiter in inside]
    if any(e.reason not in FREE + NEEDS_AN_EDIT for e in edges):
        return []  # a wait on a rank without a dump or a record: not a question of edits
    waits = [CycleWait(e.waiter, e.blocker, (e.pg_key, e.seq), e.reason in FREE, _program_call(a, e)) for e in edges]
    cause = wait_cause(waits)
    if cause is None or any(isinstance(view.departures([r])[r], CountEdit) for r in cause.ranks):
        return []
    return [_finding(a, w, cause, [e for e in edges if e.reason not in FREE])]


def _program_call(a: Analysis, e: WaitEdge) -> bool:
    """Whether the call waited in is one the program issues: a send/recv (its group numbers
    them, and posts others), or a collective not shown to be the waiter's own (its group's
    records of earlier seqs include the same op, sizes and dtypes, or hold none)."""
    if e.reason == WaitReason.P2P_UNMATCHED:
        return True
    c = a.cells
    group = c.loc[(c[s.PG_KEY] == e.pg_key).to_numpy()]
    whole = [s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]
    mine = group.loc[(group[s.SEQ] == e.seq).to_numpy() & (group[s.RANK] == e.waiter).to_numpy(), whole]
    earlier = group.loc[(group[s.SEQ] < e.seq).to_numpy(), whole]
    if mine.empty or earlier.empty:
        return True
    same = np.ones(len(earlier), dtype=bool)
    for col in whole:
        same &= earlier[col].astype(str).to_numpy() == str(mine[col].iloc[0])
    return bool(same.any())


def _finding(a: Analysis, w: CycleWaits, cause: WaitCause, costly: list[WaitEdge]) -> Finding:
    (rank,) = cause.ranks
    detail = {"edit": cause.edit, "cost": cause.cost, "other_side": cause.against}
    if cause.edit != SKIP:
        e = min((e for e in costly if e.waiter == rank), key=lambda e: e.seq)
        f = extra_finding(a, rank, e.pg_key, e.seq, e.op, w.created.get((e.pg_key, rank, e.seq), NEVER))
        return Finding(
            f.kind,
            f.role,
            f.ranks,
            f.failure_class,
            f.pg_key,
            f.seq,
            f.op,
            since=f.since,
            detail={**f.detail, **detail},
        )
    collectives = [e for e in costly if e.reason == WaitReason.NOT_ISSUED]
    e = min(collectives or costly, key=lambda e: (w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq))
    waiters = tuple(sorted({x.waiter for x in costly if (x.pg_key, x.seq) == (e.pg_key, e.seq)}))
    since = min((w.created.get((x.pg_key, x.waiter, x.seq), NEVER) for x in costly), default=NEVER)
    if collectives:  # it went past a collective its peers wait for it in
        return Finding(
            Kind.WENT_PAST, Role.SUSPECT, (rank,), FailureClass.DESYNC, e.pg_key, e.seq, e.op, waiters, since, detail
        )
    return Finding(
        Kind.P2P_UNMATCHED,
        Role.SUSPECT,
        (rank,),
        FailureClass.P2P_UNMATCHED,
        e.pg_key,
        e.seq,
        e.op,
        waiters,
        since,
        {**detail, "stopped": False},
    )
