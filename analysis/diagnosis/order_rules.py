"""The rules over program order that still decide the wait-for cycles the model leaves
(``docs/one-model.md``, "Where 4e starts"): a rank that skipped or added a collective by
the program order of :mod:`..model.order`, one out of place in its group, one ahead in a
group of its level peers, and the members whose waits their own block does not explain.
Each is to be replaced by the model and deleted."""

from __future__ import annotations

from .. import schema as s
from ..model.groups import ProcessGroup
from ..model.order import ProgramOrder, Token
from ..model.routine import within_step
from ..types import FailureClass
from .desync import extra_finding
from .findings import NEVER, Finding, Kind, Role
from .hang_view import HangView
from .root_findings import waited_on
from .waitfor import WaitEdge, WaitReason
from .whole_call import call_text, known_site


def skipped(w: HangView, order: ProgramOrder, rank: int) -> Finding | None:
    """``rank`` skipped a collective its peers wait in: it went on to one that comes after it."""
    for e in sorted(w.into.get(rank, []), key=lambda e: e.seq):
        if e.reason != WaitReason.NOT_ISSUED:
            continue
        waiters = w.waiters_at(rank, e.pg_key, e.seq)
        token, voters = order.token(e.pg_key, e.seq), w.routines.program_ranks(rank)
        went_to = order.skipped_to(rank, token, set(waiters), voters)
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


def extra(w: HangView, order: ProgramOrder, rank: int, by_position_only: bool = False) -> Finding | None:
    """``rank`` issued a collective no other rank issues, and its peers moved on past it; or
    it reached one its step-mates issue only later in the program (see ``reached_early``),
    the only test with ``by_position_only``."""
    for b in w.graph.blocked:
        if b.rank != rank or b.is_p2p:
            continue
        peers = [p for p in w.a.groups.groups[b.pg_key].ranks if p != rank]
        token = order.token(b.pg_key, b.seq)
        added = not by_position_only and order.is_extra(rank, token, peers)
        members = set(w.a.groups.groups[b.pg_key].ranks)
        mates = _step_mates_ahead(w, order, rank, members)
        if added or order.reached_early(rank, token, mates) or _alone_ahead(w, b.pg_key, b.seq, rank):
            return extra_finding(w.a, rank, b.pg_key, b.seq, b.op, w.created.get((b.pg_key, rank, b.seq), NEVER))
    return None


def _alone_ahead(w: HangView, key: str, seq: int, rank: int) -> bool:
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


def _step_mates_ahead(w: HangView, order: ProgramOrder, rank: int, members: set[int]) -> dict[int, tuple[Token, int]]:
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


def unexplained(w: HangView, comp: list[int]) -> dict[int, list[WaitEdge]]:
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


def went_past(w: HangView, order: ProgramOrder, rank: int, edges: list[WaitEdge], comp: list[int]) -> Finding | None:
    """A cause of a cycle: it went past a collective its peers wait for it in (desync), or
    holds them up otherwise (a send/recv it never posted)."""
    passed = [e for e in edges if e.reason == WaitReason.NOT_ISSUED]
    if not passed:  # a send/recv it never posted, too, follows from being elsewhere in its program
        early = extra(w, order, rank, by_position_only=True)
        return early if early is not None else waited_on(w, rank, comp)
    found = skipped(w, order, rank) or extra(w, order, rank)
    return found if found is not None else _past(w, rank, passed)


def _past(w: HangView, rank: int, passed: list[WaitEdge]) -> Finding:
    """``rank`` went past the earliest of the collectives ``passed`` its peers wait for it in."""
    e = min(passed, key=lambda e: (w.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq))
    waiters = w.waiters_at(rank, e.pg_key, e.seq)
    return Finding(
        Kind.WENT_PAST, Role.SUSPECT, (rank,), FailureClass.DESYNC, e.pg_key, e.seq, e.op, waiters, w.since([e])
    )


def issued_before(w: HangView, f: Finding) -> bool:
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


def held_by_divergent(rank: int, causes: dict[int, list[WaitEdge]], found: dict[int, Finding | None]) -> bool:
    """Whether ``rank`` is a cause only because ranks that went past a collective, or added
    one, wait on it: they wait where their peers have not arrived, as a consequence of their
    own divergence."""
    divergent = {r for r, f in found.items() if f is not None and f.kind in (Kind.SKIPPED, Kind.EXTRA)}
    return rank not in divergent and bool(divergent) and all(e.waiter in divergent for e in causes[rank])
