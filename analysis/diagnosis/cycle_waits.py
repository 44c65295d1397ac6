"""A wait-for cycle explained by its waits (layer 3 of the one model, see :mod:`.wait_explanation`).

The glue between the analysis and :mod:`.wait_explanation`: the waits between members of
a cycle, which of them the blocker's own block explains, whether each call is one the
program issues, and the finding the cheaper side becomes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import schema as s
from ..model.records import newest_records
from ..types import FailureClass
from .analysis import Analysis
from .count_explanation import CountEdit
from .cycle_counts import CountView
from .cycle_records import CycleWaits
from .edit_distance import EXTRA, SKIP
from .findings import NEVER, Finding, Kind, Role
from .own_calls import extra_finding
from .wait_explanation import CycleWait, WaitCause, in_routine, in_turn, out_of_turn, strict, wait_cause
from .waitfor import WaitEdge, WaitReason
from .whole_call import program_calls

FREE = (WaitReason.QUEUED, WaitReason.BEHIND)
"""Waits the blocker's own block explains: it issued the call, behind an earlier one of its own."""

NEEDS_AN_EDIT = (WaitReason.NOT_ISSUED, WaitReason.P2P_UNMATCHED)
"""Waits only a skip by the blocker or an extra by the waiter explains."""


def explain_cycle_by_waits(a: Analysis, w: CycleWaits, view: CountView, comp: list[int]) -> list[Finding]:
    """The member of cycle ``comp`` its waits name (see :mod:`.wait_explanation`), as a finding,
    where its counts show no edit against the ranks of its program but in the families of
    these waits: what it skipped or added is then what the counts cannot see or tell apart
    (a send/recv, the order of two calls); a rank whose counts show an edit elsewhere
    departed there, and its waits alone do not say how."""
    inside = set(comp)
    edges = [e for r in comp for e in w.into.get(r, []) if e.waiter in inside]
    if any(e.reason not in FREE + NEEDS_AN_EDIT for e in edges):
        return []  # a wait on a rank without a dump or a record: not a question of edits
    blocks = _blocks(a, w, comp)
    broke_turns = _out_of_turn_calls(blocks)
    free = [_free(a, e, blocks) for e in edges]
    collective = [not f and e.reason == WaitReason.NOT_ISSUED for e, f in zip(edges, free, strict=True)]
    program = program_calls(a.cells, {(e.pg_key, e.seq, e.waiter) for e, c in zip(edges, collective, strict=True) if c})
    program |= {(e.pg_key, e.seq, e.waiter): False for e in edges if broke_turns.get(e.waiter) == (e.pg_key, e.seq)}
    own = {**_added_by_count(a, view, blocks), **broke_turns}
    waits = [  # a send/recv is a call the program issues: its group numbers them, and posts others
        CycleWait(e.waiter, e.blocker, (e.pg_key, e.seq), f, not c or program[(e.pg_key, e.seq, e.waiter)])
        for e, f, c in zip(edges, free, collective, strict=True)
    ]
    cause = wait_cause(waits, own)
    costly = [e for e, x in zip(edges, waits, strict=True) if not x.free]
    if cause is None or any(_departs_elsewhere(a, w, view, r, costly, own.get(r)) for r in cause.ranks):
        return []
    return [_finding(a, w, cause, costly, own)]


def _departs_elsewhere(
    a: Analysis, w: CycleWaits, view: CountView, rank: int, costly: list[WaitEdge], own: tuple[str, int] | None
) -> bool:
    """Whether ``rank``'s counts show an edit that these waits do not: for a rank blocked in
    a call of its own (``own``), any edit but one more of that call's family; any edit of a
    rank named for send/recvs it never posted (out of step in its collectives, it never got
    to them), or one in a family other than those of the waits it is named by and of the
    collective it is blocked in (it departed there, and these waits do not say how)."""
    edit = view.departures([rank])[rank]
    if not isinstance(edit, CountEdit):
        return False
    if own is not None:
        return edit.more != a.families.family_of.get(own[0], own[0])
    if any(e.reason == WaitReason.P2P_UNMATCHED and e.blocker == rank for e in costly):
        return True
    family = a.families.family_of
    waits = {family.get(e.pg_key, e.pg_key) for e in costly if rank in (e.blocker, e.waiter)}
    waits |= {family.get(b.pg_key, b.pg_key) for b in w.graph.blocked if b.rank == rank and not b.queued}
    return not {f for f in (edit.fewer, edit.more) if f is not None} <= waits


@dataclass(frozen=True, slots=True)
class Block:
    """A member blocked in a collective, and its records up to that call, oldest first."""

    family: str
    call: tuple[str, int]
    """(group, seq) of the call it is blocked in."""
    families: list[str]
    tokens: list[int]
    """The whole call of each record (``model.records``: equal where the call is)."""


def _out_of_turn_calls(blocks: dict[int, Block]) -> dict[int, tuple[str, int]]:
    """The members blocked in a call of their own: one that breaks two families' strict
    turns in their records (see ``out_of_turn``), turns every other member that issued both
    keeps (one at least): member -> the (group, seq) it is blocked in."""
    found = {}
    for rank, b in blocks.items():
        pair = out_of_turn(b.families)
        if pair is None:
            continue
        others = [[f for f in o.families if f in pair] for r, o in blocks.items() if r != rank]
        others = [x for x in others if set(x) == set(pair)]
        if others and all(strict(x) for x in others):
            found[rank] = b.call
    return found


def _added_by_count(a: Analysis, view: CountView, blocks: dict[int, Block]) -> dict[int, tuple[str, int]]:
    """The members whose counts show one more of the family of the collective they are
    blocked in than the ranks of their program (``count_explanation``): blocked in a call of
    their own, they added it -> the (group, seq) they are blocked in."""
    edits = view.departures(sorted(blocks))
    return {
        r: b.call
        for r, b in blocks.items()
        if isinstance(e := edits.get(r), CountEdit) and e.kind == EXTRA and e.more == b.family
    }


def _blocks(a: Analysis, w: CycleWaits, comp: list[int]) -> dict[int, Block]:
    """Each member blocked in a collective, with its records up to that call."""
    heads = {b.rank: b for b in w.graph.blocked if b.rank in comp and not b.queued and not b.is_p2p}
    if not heads:
        return {}
    records = newest_records(a.dumps.entries, set(heads), a.groups.key_of, a.families.family_of, w.call_sites).table
    found = {}
    for rank, b in heads.items():
        mine = records.loc[(records[s.RANK] == rank).to_numpy() & ~records[s.IS_P2P].to_numpy()]
        at = mine.loc[((mine[s.PG_KEY] == b.pg_key) & (mine[s.SEQ] == b.seq)).to_numpy(), s.RECORD_ID]
        if len(at):
            upto = mine.loc[(mine[s.RECORD_ID] <= at.max()).to_numpy()].sort_values(s.RECORD_ID)
            family = a.families.family_of.get(b.pg_key, b.pg_key)
            found[rank] = Block(family, (b.pg_key, b.seq), upto["family"].tolist(), upto["token"].tolist())
    return found


def _free(a: Analysis, e: WaitEdge, blocks: dict[int, Block]) -> bool:
    """Whether the blocker's own block explains the wait: it issued the call behind its own
    earlier one, or its records put the collective after the one it is blocked in, or its
    block where its routine puts it (see :mod:`.wait_explanation`)."""
    if e.reason in FREE:
        return True
    if e.reason != WaitReason.NOT_ISSUED or e.blocker not in blocks:
        return False
    b = blocks[e.blocker]
    return in_turn(b.families, b.family, a.families.family_of.get(e.pg_key, e.pg_key)) or in_routine(b.tokens)


def _finding(
    a: Analysis, w: CycleWaits, cause: WaitCause, costly: list[WaitEdge], own: dict[int, tuple[str, int]]
) -> Finding:
    (rank,) = cause.ranks
    detail = {"edit": cause.edit, "cost": cause.cost, "other_side": cause.against}
    if cause.edit != SKIP:
        if rank in own:
            key, seq = own[rank]
            op = next((b.op for b in w.graph.blocked if (b.rank, b.pg_key, b.seq) == (rank, key, seq)), None)
            detail["turns"] = True
        else:
            e = min((e for e in costly if e.waiter == rank), key=lambda e: e.seq)
            key, seq, op = e.pg_key, e.seq, e.op
        f = extra_finding(a, rank, key, seq, op, w.created.get((key, rank, seq), NEVER))
        return replace(f, detail={**f.detail, **detail})
    on = [e for e in costly if e.blocker == rank]  # its own waits follow from the skip
    collectives = [e for e in on if e.reason == WaitReason.NOT_ISSUED]
    e = min(collectives or on, key=lambda e: (w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq))
    waiters = tuple(sorted({x.waiter for x in on if (x.pg_key, x.seq) == (e.pg_key, e.seq)}))
    since = min((w.created.get((x.pg_key, x.waiter, x.seq), NEVER) for x in on), default=NEVER)
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
