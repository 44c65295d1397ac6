"""Collectives only one rank issued, where that rank left its routine: an added collective.

A rank blocked in a collective no other member issued waits on all of them, so they look
like the ranks holding it up. Where the rank's own earlier steps issued something else
at that point, and no rank of its program left the routine there, the lone collective is
one the rank added (a debug metric, say): a desync that explains the wait, like a mismatch.
A departure counts only where a rank of its program got as far (a first checkpoint
barrier, say, is a departure no peer can share until it gets there). Where the dumps keep no history (only active entries), members of the group that run the
rank's program and issued, without the lone collective, one the rank issued after it
went past the point where the rank added it: the same finding.
"""

from __future__ import annotations

from dataclasses import replace

from ..model.order import ProgramOrder, Token
from .analysis import Analysis
from .desync import departed_finding, extra_finding
from .findings import Finding, Role
from .record_alignment import MATES_COMPARED, RecordAlignment
from .routines import Routines


def lone_departures(a: Analysis, order: ProgramOrder) -> list[Finding]:
    """Ranks blocked in a collective only they issued, which departs from their routine."""
    blocked = {b.rank for b in a.graph.blocked}
    routines: Routines | None = None
    alignment: RecordAlignment | None = None
    found = []
    for b in a.graph.blocked:
        if b.queued or b.is_p2p or order.issuers(order.token(b.pg_key, b.seq)) != {b.rank}:
            continue
        if _issued_in_siblings(a, b.pg_key, b.seq):
            continue  # the program's: its sibling groups issued that seq (their records of it are gone)
        routines = routines or Routines(a, blocked)
        alignment = alignment or RecordAlignment(a)
        if _a_mate_skipped(routines, alignment, b.rank):
            continue  # a rank of its program and stage is a record short: it skipped one, this one is the program's
        own = [d for d in routines.own_departures(b.rank) if (d.pg_key, d.seq) == (b.pg_key, b.seq)]
        peers = [p for p in a.groups.groups[b.pg_key].ranks if p != b.rank]
        token = order.token(b.pg_key, b.seq)
        if own and not routines.reached_by_its_program(b.rank, b.pg_key):
            continue  # no rank of its program got this far: the departure may be the program's own
        if own and not order.is_extra(b.rank, token, peers):
            found.append(departed_finding(b.rank, own[0], since=-1))
        elif own or _passed_by_its_program(routines, order, b.rank, token, peers):  # its peers went on: say so
            found.append(extra_finding(a, b.rank, b.pg_key, b.seq, b.op, since=-1))
    found += _lone_before_window(a, order, routines or Routines(a, blocked), {f.rank for f in found})
    if len(found) >= 2 and {f.rank for f in found} >= set(a.dumps.ranks):
        # every rank added one the others did not issue: no rank's program is left to judge by
        return [replace(f, role=Role.POSSIBLE, detail={**f.detail, "every_rank": True}) for f in found]
    return found


def _a_mate_skipped(routines: Routines, alignment: RecordAlignment, rank: int) -> bool:
    """Whether a rank of ``rank``'s program and stage (of the first ``MATES_COMPARED``) is a
    record short of it where the record it lacks is a call of the program (see
    :mod:`.record_alignment`)."""
    mates = sorted(routines.program_ranks(rank) - {rank})[:MATES_COMPARED]
    return any((m := alignment.compare(rank, mate)) is not None and m.long == rank and not m.added for mate in mates)


def _lone_before_window(a: Analysis, order: ProgramOrder, routines: Routines, named: set[int]) -> list[Finding]:
    """Collectives only one member of a group issued, by the members' counts, still pending on
    it, and older than its record (a small ring buffer): where the group's members that run
    its program issued, without it, collectives the rank issued after it (everything in its
    record), the rank added it."""
    found = []
    for key, group in a.groups.groups.items():
        if group.has_p2p or len(group.ranks) < 2:
            continue
        counts = {r: p for r in group.ranks if (p := a.progress.get((key, r))) is not None and p.enqueued is not None}
        if len(counts) != len(group.ranks):
            continue
        top = max(counts, key=lambda r: counts[r].enqueued)
        others = max(counts[r].enqueued for r in counts if r != top)
        p = counts[top]
        if top in named or p.enqueued <= others or p.completed is None or p.completed > others:
            continue  # not lone, or it completed the lone collective
        seq = max(others, 0) + 1  # seqs count from 1; -1: none issued yet
        token = order.token(key, seq)
        if top in order.issuers(token):
            continue  # its record holds it: the routine-based rule above reads it
        mates = sorted(set(group.ranks) & set(routines.same_program(top)))
        if _went_past_without(routines, mates, token, order.recent(top)):  # all it recorded came after it
            found.append(extra_finding(a, top, key, seq, None, since=-1))
    return found


def _passed_by_its_program(routines: Routines, order: ProgramOrder, rank: int, token: Token, peers: list[int]) -> bool:
    """Members of the group that run ``rank``'s program issued a collective ``rank`` issued only
    after the lone one, without it: they went past the point where ``rank`` added it. Their
    counts tell where their records do not (only active entries)."""
    mates = sorted(set(peers) & set(routines.same_program(rank)))
    return (
        order.passed_without(rank, token, mates) is not None
        or _went_past_without(routines, mates, token, order.issued_after(rank, token))
        or (len(mates) >= 2 and _past_its_counts(routines, order, rank, token, mates))
    )


def _went_past_without(routines: Routines, mates: list[int], token: Token, later: list[Token]) -> bool:
    """Every one of ``mates`` issued, by its counts, one same collective of ``later`` (in its
    group of that family, as far as that seq), and fewer than ``token``'s seq of its family."""
    if not mates or any(_count(routines, m, token[0]) >= token[1] for m in mates):
        return False
    return any(all(_count(routines, m, t[0]) >= t[1] for m in mates) for t in later)


def _past_its_counts(routines: Routines, order: ProgramOrder, rank: int, token: Token, mates: list[int]) -> bool:
    """Each of ``mates`` issued more of one of ``rank``'s groups' collectives than ``rank`` had
    issued there when it issued the lone one: they went on past that point without it. Asked
    of two or more mates: one mate that went on may as well have skipped it."""
    if any(_count(routines, m, token[0]) >= token[1] for m in mates):
        return False  # a mate issued that seq of the lone one's family: not without it
    family_of = routines.a.families.family_of
    for g in routines.steps.groups_of[rank]:
        family = family_of.get(g.key, g.key)
        if family == token[0] or (mine := routines.steps.issued(g, rank)) < 0:
            continue
        then = mine - order.count_after(rank, token, family)
        if all(_count(routines, m, family) > then for m in mates):
            return True
    return False


def _count(routines: Routines, rank: int, family: str) -> int:
    """How many collectives ``rank`` issued in its group of ``family`` (-1: none, or no such group)."""
    steps = routines.steps
    family_of = routines.a.families.family_of
    return max(
        (steps.issued(g, rank) for g in steps.groups_of[rank] if family_of.get(g.key, g.key) == family), default=-1
    )


def _issued_in_siblings(a: Analysis, key: str, seq: int) -> bool:
    """A group of ``key``'s family other than ``key`` issued ``seq``, by its members' counts."""
    family_of = a.families.family_of
    family = family_of.get(key)
    if family is None:
        return False
    return any(
        (p := a.progress.get((k, r))) is not None and (p.enqueued or -1) >= seq
        for k, g in a.groups.groups.items()
        if k != key and family_of.get(k) == family
        for r in g.ranks
    )
