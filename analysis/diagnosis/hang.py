"""Explain a hang: which roots of the wait-for graph are causes, and why.

The roots of the wait-for graph are the candidates. Program order then separates a
rank that skipped or added a collective (desync) from ranks merely blocked by it,
which also breaks wait-for cycles. Roots that only appear because of something the
dumps cannot show are set aside (see :mod:`.consequences`).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from .. import schema as s
from ..model.callsites import job_call_sites
from ..model.cells import created_ns
from ..model.groups import ProcessGroup
from ..model.order import ProgramOrder, Token
from ..model.routine import Routine, within_step
from ..types import FailureClass
from .analysis import Analysis
from .behind import behind_stuck_peers, held_pipeline_peers, left_behind
from .consequences import after_mismatch, pipeline_victims, silent
from .counts_at import CountsAt
from .cycle_counts import CountView, explain_cycle_by_counts
from .cycle_records import CycleWaits, explain_cycle
from .cycle_waits import explain_cycle_by_waits
from .dead import dead_findings
from .desync import extra_finding
from .findings import NEVER, Finding, Kind, Role
from .routines import Routines
from .waitfor import Blocked, WaitEdge, WaitGraph, WaitReason, root_components
from .whole_call import call_text, known_site


@dataclass(frozen=True, slots=True)
class HangExplanation:
    """The causes of a hang, and the candidates judged to be consequences."""

    suspects: tuple[Finding, ...]
    """One finding per suspect rank."""
    notes: tuple[Finding, ...]
    """Cycles left unresolved, ranks set aside and why, cautions."""
    set_aside: frozenset[int]
    """Candidate roots judged to be victims, though no visible wait shows it."""
    unresolved: bool
    """A wait-for cycle that program order could not break."""


MAX_COUNTED = 64
"""Largest wait-for cycle whose members' counts are compared with their level peers'."""


class _Waits:
    """Lookups over the wait-for graph shared by every rule below."""

    def __init__(self, a: Analysis, graph: WaitGraph | None = None) -> None:
        self.a = a
        self.graph = a.graph if graph is None else graph
        self.into: dict[int, list[WaitEdge]] = defaultdict(list)
        for e in self.graph.edges:
            self.into[e.blocker].append(e)
        pending = a.cells.loc[~a.cells["done"].to_numpy()]
        pending = pending.assign(**{s.T_CREATED: created_ns(a.dumps.entries, pending)}).dropna(subset=[s.T_CREATED])
        self.created = {
            (str(k), int(r), int(q)): int(t)
            for k, r, q, t in pending[[s.PG_KEY, s.RANK, s.SEQ, s.T_CREATED]].itertuples(index=False)
        }
        self.blocked_ranks = {b.rank for b in self.graph.blocked}
        self._counts_at: CountsAt | None = None
        self.heads: dict[int, list[Blocked]] = defaultdict(list)
        """Each rank's collectives it waits in (not queued behind one of its own)."""
        for b in self.graph.blocked:
            if not b.queued and not b.is_p2p:
                self.heads[b.rank].append(b)

    def counts_at(self, order: ProgramOrder) -> CountsAt:
        if self._counts_at is None:
            self._counts_at = CountsAt(self.a, order, self.routines.stage_of)
        return self._counts_at

    @functools.cached_property
    def call_sites(self) -> dict[int, str]:
        stacks = self.a.dumps.stacks
        return job_call_sites(stacks) if len(stacks) else {}

    @functools.cached_property
    def cycle_waits(self) -> CycleWaits:
        return CycleWaits(self.graph, self.into, self.created, self.program_ranks, self.call_sites)

    def program_ranks(self, rank: int) -> set[int]:
        """The ranks of ``rank``'s program and stage: by its groups smaller than the world, and
        by the families of all its groups (a job whose every group spans the world runs one)."""
        return self.routines.program_ranks(rank) | self.count_view.mates.get(rank, frozenset())

    @functools.cached_property
    def count_view(self) -> CountView:
        return CountView(self.a, self.cycle_waits)

    @functools.cached_property
    def routines(self) -> Routines:
        return Routines(self.a, self.blocked_ranks)

    def routine(self, rank: int) -> Routine | None:
        return self.routines.routine(rank)

    def since(self, edges: list[WaitEdge]) -> int:
        return min((self.created.get((e.pg_key, e.waiter, e.seq), NEVER) for e in edges), default=NEVER)

    def waiters_at(self, rank: int, pg_key: str, seq: int) -> tuple[int, ...]:
        return tuple(sorted({w.waiter for w in self.into[rank] if (w.pg_key, w.seq) == (pg_key, seq)}))

    def site(self, key: str, seq: int, rank: int) -> str | None:
        """Where ``rank`` called (group, seq) from, if the dump recorded it."""
        c = self.a.cells
        hit = c.loc[(c[s.PG_KEY] == key) & (c[s.SEQ] == seq) & (c[s.RANK] == rank), s.CALL_SITE]
        return hit.iloc[0] if len(hit) and isinstance(hit.iloc[0], str) else None


def _first_wait(w: _Waits, rank: int, comp: list[int]) -> WaitEdge | None:
    """Where progress diverged first: the wait on ``rank`` whose pending op was issued earliest."""
    incoming = [e for e in w.into.get(rank, []) if e.waiter not in comp] or w.into.get(rank, [])
    if not incoming:
        return None
    return min(
        incoming,
        key=lambda e: (e.reason != WaitReason.NOT_ISSUED, w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq),
    )


def _skipped(w: _Waits, order: ProgramOrder, rank: int) -> Finding | None:
    """``rank`` skipped a collective its peers wait in: it went on to one that comes after it."""
    for e in sorted(w.into.get(rank, []), key=lambda e: e.seq):
        if e.reason != WaitReason.NOT_ISSUED:
            continue
        waiters = w.waiters_at(rank, e.pg_key, e.seq)
        token, voters = order.token(e.pg_key, e.seq), w.routines.program_ranks(rank)
        went_to = order.skipped_to(rank, token, set(waiters), voters) or w.counts_at(order).went_past(
            rank, e.pg_key, e.seq, w.routines.same_program(rank)
        )
        if went_to is not None:
            return Finding(
                Kind.SKIPPED,
                Role.SUSPECT,
                (rank,),
                FailureClass.DESYNC,
                e.pg_key,
                e.seq,
                e.op,
                waiters=waiters,
                since=w.since([e]),
                detail={"went_to": went_to},
            )
    return None


def _extra(w: _Waits, order: ProgramOrder, rank: int, by_position_only: bool = False) -> Finding | None:
    """``rank`` issued a collective no other rank issues, and its peers moved on past it; or
    it reached one its step-mates issue only later in the program (see ``reached_early``),
    the only test with ``by_position_only``."""
    for b in w.graph.blocked:
        if b.rank != rank or b.is_p2p:
            continue
        peers = [p for p in w.a.groups.groups[b.pg_key].ranks if p != rank]
        token = order.token(b.pg_key, b.seq)
        extra = not by_position_only and order.is_extra(rank, token, peers)
        members = set(w.a.groups.groups[b.pg_key].ranks)
        mates = _step_mates_ahead(w, order, rank, members)
        if extra or order.reached_early(rank, token, mates) or _alone_ahead(w, b.pg_key, b.seq, rank):
            return extra_finding(w.a, rank, b.pg_key, b.seq, b.op, w.created.get((b.pg_key, rank, b.seq), NEVER))
    return None


def _alone_ahead(w: _Waits, key: str, seq: int, rank: int) -> bool:
    """``rank`` alone issued (group, seq), while in a group of ranks that run its program
    (see ``Steps``) every other member issued two or more collectives it never did: it got
    to (group, seq) without them, one collective early (their host stopped before it, at a
    sync)."""
    steps = w.routines.steps
    mine = steps.program.get(rank)

    def left_behind_in(g: ProcessGroup) -> bool:
        mates = [m for m in g.ranks if m != rank]
        return all(steps.program.get(m) == mine and steps.issued(g, m) - steps.issued(g, rank) >= 2 for m in mates)

    if not any(g.key != key and left_behind_in(g) for g in steps.groups_of[rank] if steps.issued(g, rank) >= 0):
        return False
    g = w.a.groups.groups[key]
    others = [r for r in g.ranks if r != rank]
    # no record of the group (issued -1): it holds no entry there, so none pending at ``seq`` either
    return bool(others) and all(steps.issued(g, r) < seq for r in others)


def _step_mates_ahead(w: _Waits, order: ProgramOrder, rank: int, members: set[int]) -> dict[int, tuple[Token, int]]:
    """The members of ``rank``'s step group (the one it issued the most collectives in), where
    all of them went further in it and are ``members`` of the group of the collective in
    question: mate -> (the first collective there ``rank`` never issued, how many more)."""
    issued = w.routines.steps.issued
    mine = [(issued(g, rank), g.key) for g in w.a.groups.groups.values() if rank in g.ranks and len(g.ranks) > 1]
    if not mine:
        return {}
    top, key = max(mine)
    if top < 0:
        return {}
    g = w.a.groups.groups[key]
    mates = [m for m in g.ranks if m != rank]
    ahead = {m: (order.token(key, top + 1), beyond) for m in mates if (beyond := issued(g, m) - top) > 0}
    # every mate went on, and each is a member of the group of the collective in question
    return ahead if mates and len(ahead) == len(mates) and members.issuperset(mates) else {}


def _straggler(w: _Waits, rank: int) -> Finding:
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


def _waited_on(w: _Waits, rank: int, comp: list[int]) -> Finding | None:
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


def _unexplained(w: _Waits, comp: list[int]) -> dict[int, list[WaitEdge]]:
    """Members of a cycle held up by waits their own block does not explain, with those waits.

    A member that issued the collective another member waits for it in behind its own
    earliest pending op, or is blocked at an op earlier in its step than that collective,
    has simply not got there: that wait follows from its block. A wait it does not explain
    so (a send/recv it never posted, a collective it went past) makes it a cause. Where no
    wait is a cause so and the history cannot place the waits on one member alone, every
    other wait being queued or behind (none explained by a routine), that member is the cause.
    """
    inside = set(comp)
    family_of = w.a.families.family_of
    within: dict[tuple[int, str], bool | None] = {}
    causes: dict[int, list[WaitEdge]] = {}
    untold: dict[int, list[WaitEdge]] = {}
    routine_explained = False  # a wait explained by the blocker's routine, a judgment rather than a block
    for e in w.graph.edges:
        if e.waiter not in inside or e.blocker not in inside:
            continue
        if e.reason in (WaitReason.QUEUED, WaitReason.BEHIND):
            continue  # the blocker issued it (or an earlier seq) behind its own head: its block explains it
        if e.reason == WaitReason.NOT_ISSUED:
            key = (e.blocker, e.pg_key)
            if key not in within:
                rt = w.routine(e.blocker)
                within[key] = within_step(rt, (family_of.get(e.pg_key, e.pg_key), e.op or "")) if rt else None
            if within[key] is None:
                untold.setdefault(e.blocker, []).append(e)
            routine_explained = routine_explained or bool(within[key])
            if within[key] is not False:
                continue  # explained, or the history cannot tell: no cause on this wait's strength
        causes.setdefault(e.blocker, []).append(e)
    if not causes and len(untold) == 1 and not routine_explained:
        return untold  # every other wait of the cycle follows from a block: the one left is its cause
    return causes


def _went_past(w: _Waits, order: ProgramOrder, rank: int, edges: list[WaitEdge], comp: list[int]) -> Finding | None:
    """A cause of a cycle: it went past a collective its peers wait for it in (desync), or
    holds them up otherwise (a send/recv it never posted)."""
    skipped = [e for e in edges if e.reason == WaitReason.NOT_ISSUED]
    if not skipped:  # a send/recv it never posted, too, follows from being elsewhere in its program
        early = _extra(w, order, rank, by_position_only=True)
        return early if early is not None else _waited_on(w, rank, comp)
    found = _skipped(w, order, rank) or _extra(w, order, rank)
    return found if found is not None else _past(w, rank, skipped)


def _past(w: _Waits, rank: int, skipped: list[WaitEdge]) -> Finding:
    """``rank`` went past the earliest of the collectives ``skipped`` its peers wait for it in."""
    e = min(skipped, key=lambda e: (w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq))
    waiters = w.waiters_at(rank, e.pg_key, e.seq)
    return Finding(
        Kind.WENT_PAST, Role.SUSPECT, (rank,), FailureClass.DESYNC, e.pg_key, e.seq, e.op, waiters, w.since([e])
    )


def _went_ahead(w: _Waits, rank: int, key: str, more: int) -> Finding:
    """``rank`` issued ``more`` collectives of group ``key`` than its level peers: the members
    of its cycle wait for it where it has not come back to (see :mod:`.level_counts`)."""
    waits = w.into.get(rank, [])
    e = min(waits, key=lambda e: (w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq)) if waits else None
    where = (e.pg_key, e.seq, e.op) if e is not None else (key, None, None)
    waiters = w.waiters_at(rank, e.pg_key, e.seq) if e is not None else ()
    detail = {"ahead_in": key, "more": more}
    since = w.since([e]) if e is not None else NEVER
    return Finding(Kind.WENT_AHEAD, Role.SUSPECT, (rank,), FailureClass.DESYNC, *where, waiters, since, detail)


def _out_of_place(w: _Waits, order: ProgramOrder, rank: int) -> Finding | None:
    """``rank`` holds a collective pending that it issued later in its program than the other
    ranks of its program issued it (see ``ProgramOrder.out_of_place``), or it issued one
    having issued fewer of a group's collectives than they had then (it skipped one)."""
    mates = w.routines.same_program(rank)
    short = w.counts_at(order).off_at(rank, mates)
    if short is not None:
        key, seq, went_to = short
        waiters = w.waiters_at(rank, key, seq)
        op = next((b.op for b in w.graph.blocked if (b.pg_key, b.seq) == (key, seq)), None)
        return Finding(
            Kind.SKIPPED, Role.SUSPECT, (rank,), FailureClass.DESYNC, key, seq, op, waiters, NEVER, {"went_to": went_to}
        )
    for b in w.graph.blocked:
        if b.rank != rank or b.is_p2p:
            continue
        after = order.out_of_place(rank, order.token(b.pg_key, b.seq), mates)
        if after is not None:
            waiters = w.waiters_at(rank, b.pg_key, b.seq)
            since = w.created.get((b.pg_key, rank, b.seq), NEVER)
            detail = {"after": after}
            return Finding(
                Kind.OUT_OF_PLACE,
                Role.SUSPECT,
                (rank,),
                FailureClass.DESYNC,
                b.pg_key,
                b.seq,
                b.op,
                waiters,
                since,
                detail,
            )
    return None


def _departed_records(w: _Waits, comp: list[int]) -> list[Finding]:
    """The members of a cycle whose records explain it (see :mod:`.cycle_records`), else
    whose counts do (see :mod:`.cycle_counts`), else the member its waits name (see
    :mod:`.cycle_waits`)."""
    return (
        explain_cycle(w.a, w.cycle_waits, comp)
        or explain_cycle_by_counts(w.a, w.count_view, comp)
        or explain_cycle_by_waits(w.a, w.cycle_waits, w.count_view, comp)
    )


def _issued_before(w: _Waits, f: Finding) -> bool:
    """Whether the call ``f`` holds pending (op, sizes, dtypes and a known call site) was
    issued at an earlier seq of its group: a call of the program, not one of its own (an
    added collective, a debug metric, comes from a call of its own)."""
    c = w.a.cells
    group = c.loc[(c[s.PG_KEY] == f.pg_key).to_numpy()]
    whole = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)
    mine = call_text(group.loc[(group[s.SEQ] == f.seq).to_numpy() & (group[s.RANK] == f.rank).to_numpy()], whole)
    site = mine[s.CALL_SITE].iloc[0] if not mine.empty else None
    if not known_site(site):  # no call site: no call of its own to tell
        return False
    earlier = call_text(group.loc[(group[s.SEQ] < f.seq).to_numpy()], whole)
    return bool((earlier == mine.iloc[0]).all(axis=1).any())


def _held_by_divergent(rank: int, causes: dict[int, list[WaitEdge]], found: dict[int, Finding | None]) -> bool:
    """Whether ``rank`` is a cause only because ranks that went past a collective, or added
    one, wait on it: they wait where their peers have not arrived, as a consequence of their
    own divergence."""
    divergent = {r for r, f in found.items() if f is not None and f.kind in (Kind.SKIPPED, Kind.EXTRA)}
    return rank not in divergent and bool(divergent) and all(e.waiter in divergent for e in causes[rank])


def _held_by_stall(w: _Waits, rank: int) -> bool:
    """``rank`` issued what its peers wait for (they wait only on collectives it holds queued
    or is behind on), and is itself blocked at a collective every member issued and none
    completed: it is held by whatever holds that collective (in a small buffer, an op
    before the window), not a cause in its own right."""
    incoming = w.into.get(rank, [])
    if not incoming or any(e.reason not in (WaitReason.QUEUED, WaitReason.BEHIND) for e in incoming):
        return False
    heads = w.heads.get(rank, [])
    return bool(heads) and all((b.pg_key, b.seq) in w.graph.stalled for b in heads)


def _went_past_each(w: _Waits, order: ProgramOrder, ranks: set[int]) -> list[Finding]:
    """Each of ``ranks`` skipped a collective its peers wait in (where program order shows
    where it went), else went past the earliest one they wait for it in."""
    return [_skipped(w, order, r) or _past(w, r, w.into[r]) for r in sorted(ranks)]


def _component(w: _Waits, order: ProgramOrder, comp: list[int]) -> tuple[list[Finding], list[Finding]]:
    """Findings for one root component of the wait-for graph, and notes."""
    if len(comp) == 1 and _held_by_stall(w, comp[0]):
        return [], []
    by_records = _departed_records(w, comp) if 1 < len(comp) <= MAX_COUNTED else []
    if by_records:  # records that depart from those of their program's ranks
        return by_records, []
    causes = _unexplained(w, comp) if len(comp) > 1 else {}
    off = {r: found for r in comp if (found := w.a.levels.off_program(r))} if len(comp) <= MAX_COUNTED else {}
    off = {r: found for r, found in off.items() if not w.a.levels.program_mates(r, set(off))}  # off each other
    if off and (len(off) < len(comp) or len(comp) == 1):  # ahead in one group, behind in another
        return [_went_ahead(w, r, key, more) for r, (key, more) in sorted(off.items())], []
    placed = {r: f for r in comp if (f := _out_of_place(w, order, r))} if 1 < len(comp) <= MAX_COUNTED else {}
    if placed and len(placed) < len(comp):  # a seq of its group where its program issues another
        return list(placed.values()), []
    if causes and len(causes) < len(comp):
        found = {r: _went_past(w, order, r, edges, comp) for r, edges in sorted(causes.items())}
        return [f for r, f in found.items() if f is not None and not _held_by_divergent(r, causes, found)], []
    # how each member diverged: a skip or an extra where program order shows it
    candidates = [r for r in comp if r not in w.graph.stragglers]
    diverged = [f for r in candidates if (f := _skipped(w, order, r) or _extra(w, order, r))]
    if len(comp) > 1 and len(diverged) == len(comp) and all(f.kind == Kind.EXTRA for f in diverged):
        own = [f for f in diverged if not _issued_before(w, f)]
        if own and len(own) < len(diverged):  # the others hold a call the program issued before
            return own, []
        # each member added one the others never issued: no member's program is left to judge by
        undecided = [replace(f, role=Role.POSSIBLE, detail={**f.detail, "every_rank": True}) for f in diverged]
        return [], [Finding(Kind.CYCLE, Role.NOTE, tuple(comp)), *undecided]
    if diverged:
        return diverged, []  # the divergent ranks explain the rest of the cycle
    notes = []
    if len(comp) > 1:
        notes.append(Finding(Kind.CYCLE, Role.NOTE, tuple(comp)))
    found = [_straggler(w, r) if r in w.graph.stragglers else _waited_on(w, r, comp) for r in comp]
    return [f for f in found if f is not None], notes


def _explain(w: _Waits, order: ProgramOrder) -> tuple[list[Finding], list[Finding]]:
    findings: list[Finding] = []
    notes: list[Finding] = []
    for comp in root_components(w.graph):
        found, comp_notes = _component(w, order, comp)
        findings += found
        notes += comp_notes
    return findings, notes


def _past_silent_roots(
    a: Analysis, order: ProgramOrder, w: _Waits, notes: list[Finding]
) -> tuple[_Waits, list[Finding], list[Finding]]:
    """Where no root of the wait-for graph explains anything (each is held at an op its
    record no longer holds, or in a collective stuck in flight), the graph read again
    without the waits on them: a rank further down that left its program (a desync that
    program order or counts show) is named. Only such ranks: a rank merely waited on there
    may well be held by a root."""
    roots = {r for comp in root_components(w.graph) for r in comp}
    if not roots:
        return w, [], notes
    deeper = _Waits(a, _beyond(a, roots))
    more, more_notes = _explain(deeper, order)
    more = [f for f in more if f.failure_class == FailureClass.DESYNC]
    return (deeper, more, more_notes) if more else (w, [], notes)


def _beyond(a: Analysis, victims: set[int]) -> WaitGraph:
    """The wait-for graph without the waits on ``victims``: they wait on others themselves."""
    g = a.graph
    edges = [e for e in g.edges if e.blocker not in victims]
    return WaitGraph(edges=edges, blocked=g.blocked, stragglers=g.stragglers, stalled=g.stalled)


def explain_hang(
    a: Analysis,
    order: ProgramOrder,
    mismatch_since: int | None,
    mismatch_members: set[int],
    went_ahead: set[int] = frozenset(),
    named: set[int] = frozenset(),
) -> HangExplanation:
    """The causes of the hang in ``a``'s wait-for graph, with what was set aside and why.

    ``mismatch_since`` is when the earliest decisive mismatch was issued and
    ``mismatch_members`` the members of groups with one: a hang that follows a
    mismatch is read as its consequence. ``went_ahead`` are the ranks a mismatch shows
    one collective off (they skipped or added one): a rank only they wait on has simply
    not got where they went. ``named`` are the ranks a mismatch or a lone collective names
    already (a silent rank whose pipeline peer waits on one of them is behind it). Where
    every root is a rank blocked on a
    pipeline peer, the causes lie beyond them: the graph is read again without the
    waits on them.
    """
    w = _Waits(a)
    findings, notes = _explain(w, order)
    if not findings:
        w, findings, notes = _past_silent_roots(a, order, w, notes)
    kept, dropped = after_mismatch(findings, w.blocked_ranks, mismatch_since, mismatch_members)
    held = [f for f in kept if f.waiters and set(f.waiters) <= went_ahead and f.rank not in went_ahead]
    kept = [f for f in kept if f not in held]  # waited on only by ranks that skipped or added one
    dropped += [Finding(Kind.CONSEQUENCE, Role.CLEARED, f.ranks, detail={"waited_on_by": f.waiters}) for f in held]
    victims = pipeline_victims(a, w.blocked_ranks, kept)
    if victims and len(victims) == len(kept) and mismatch_since is None:
        deeper = _Waits(a, _beyond(a, {f.rank for f in victims}))
        more, more_notes = _explain(deeper, order)
        more_kept, more_dropped = after_mismatch(more, w.blocked_ranks, mismatch_since, mismatch_members)
        more_kept = [f for f in more_kept if f.rank not in {v.rank for v in victims}]
        if more_kept:
            w, kept, notes, dropped = deeper, victims + more_kept, more_notes, dropped + more_dropped
    pipeline = bool(victims) and (len(victims) < len(kept) or mismatch_since is not None)
    if pipeline:
        dropped.append(Finding(Kind.PIPELINE_BLOCKED, Role.CLEARED, tuple(sorted(f.rank for f in victims))))
        kept = [f for f in kept if f not in victims]
    kept, behind = dead_findings(a, w.blocked_ranks, kept)
    if not (pipeline or behind) and not a.records_p2p and any(silent(f, w.blocked_ranks) for f in kept):
        dropped.append(Finding(Kind.P2P_INVISIBLE, Role.NOTE, ()))
    dropped += behind
    set_aside = frozenset(r for f in dropped if f.role == Role.CLEARED for r in f.ranks)
    if mismatch_since is None:
        explained = {f.rank for f in kept} | {r for f in dropped for r in f.ranks}
        lone, lone_behind = dead_findings(a, w.blocked_ranks, left_behind(a, order, w.blocked_ranks, explained))
        kept, held = held_pipeline_peers(a, w.blocked_ranks, kept)
        dropped += held
        lone, behind_stuck = behind_stuck_peers(a, w.blocked_ranks, kept, lone, named)
        lone_behind += behind_stuck
        kept, dropped = kept + lone, dropped + lone_behind  # behind a dead rank of its chain: not on its own
    return HangExplanation(tuple(kept), tuple(notes + dropped), set_aside, any(n.kind == Kind.CYCLE for n in notes))
