"""Who waits on whom: the wait-for graph across every process group, and its roots.

Rank r, blocked at collective (g, q), waits on each member s of g that has not issued
q (or has no dump), or that is still stuck at an earlier seq of g. A pending P2P op
waits on its peer unless the peer posted the matching op. Following the edges from
the victims ends at the roots: ranks that wait on nobody while others wait on them,
and ranks stuck on a collective their peers already completed (GPU or network side).
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pandas as pd

from .. import schema as s
from ..model.groups import GroupIndex
from ..model.progress import Progress


class WaitReason(enum.StrEnum):
    """Why a blocked rank waits on another."""

    NOT_ISSUED = "not_issued"
    """The other never issued the collective."""
    BEHIND = "behind"
    """The other is still stuck at an earlier seq of the group."""
    NO_DUMP = "no_dump"
    """The other wrote no dump."""
    NO_RECORD = "no_record"
    """The other's dump has no record of the group."""
    P2P_UNMATCHED = "p2p_unmatched"
    """The peer never posted the send/recv matching this one."""
    QUEUED = "queued"
    """The other issued it, but behind an earlier collective of its own that has not completed."""


Head = tuple[bool, str, int]
"""A rank's earliest pending op: (is send/recv, group key, seq or p2p seq)."""


@dataclass(frozen=True, slots=True)
class WaitEdge:
    """``waiter`` is blocked at (pg_key, seq) because of ``blocker``."""

    waiter: int
    blocker: int
    pg_key: str
    seq: int
    reason: WaitReason
    op: str | None = None


@dataclass(slots=True)
class Blocked:
    """One rank blocked at one collective or P2P op."""

    rank: int
    pg_key: str
    seq: int
    op: str | None
    is_p2p: bool = False
    peer: int | None = None
    queued: bool = False
    """Issued behind an earlier pending collective of the same rank: not where it waits."""


@dataclass(slots=True)
class WaitGraph:
    edges: list[WaitEdge] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    stragglers: dict[int, Blocked] = field(default_factory=dict)
    """Ranks stuck on a collective that a peer already completed."""
    stalled: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    """(group, seq) that every member issued and none completed."""

    def out_edges(self) -> dict[int, list[WaitEdge]]:
        out: dict[int, list[WaitEdge]] = defaultdict(list)
        for e in self.edges:
            out[e.waiter].append(e)
        return out


def build_wait_graph(
    index: GroupIndex,
    progress: dict[tuple[str, int], Progress],
    have_dump: set[int],
    pending_ops: dict[tuple[str, int, int], str],
    p2p_pending: pd.DataFrame,
    queue_head: dict[int, Head] | None = None,
) -> WaitGraph:
    """Edges from every blocked rank to the ranks it waits on.

    ``queue_head`` is each rank's earliest pending op, collective or send/recv (by record
    id). A rank runs its ops in the order it issued them, so a later pending one is queued
    behind it: the rank waits only at its head, and peers waiting in a queued one wait on it.
    """
    heads = queue_head or {}
    graph = WaitGraph()
    for key, group in index.groups.items():
        members = group.ranks
        at: dict[int, tuple[list[tuple[int, WaitReason]], bool]] = {}  # seq -> (who holds it up and why, any done)
        for r in members:
            p = progress.get((key, r))
            if p is None or p.first_pending is None:
                continue
            q = p.first_pending
            if q not in at:  # the same for every rank blocked at q: one pass over the members per seq
                at[q] = _holding_up(key, members, q, progress, have_dump, heads)
            reasons, peer_completed = at[q]
            op = pending_ops.get((key, r, q))
            queued = heads.get(r, (False, key, q)) != (False, key, q)
            blocked = Blocked(r, key, q, op, queued=queued)
            graph.blocked.append(blocked)
            if queued:
                continue
            waits = [WaitEdge(r, other, key, q, reason, op) for other, reason in reasons if other != r]
            if waits:
                graph.edges.extend(waits)
            elif peer_completed:
                graph.stragglers[r] = blocked
            else:
                graph.stalled.setdefault((key, q), []).append(r)
    _add_p2p_edges(graph, index, have_dump, p2p_pending, heads)
    return graph


def _holding_up(
    key: str,
    members: tuple[int, ...],
    q: int,
    progress: dict[tuple[str, int], Progress],
    have_dump: set[int],
    heads: dict[int, Head],
) -> tuple[list[tuple[int, WaitReason]], bool]:
    """The members a rank blocked at seq ``q`` waits on, with the reason, and whether any
    member completed ``q``. A blocked rank itself never waits on itself: it issued ``q``."""
    reasons: list[tuple[int, WaitReason]] = []
    peer_completed = False
    for other in members:
        if other not in have_dump:
            reasons.append((other, WaitReason.NO_DUMP))
            continue
        po = progress.get((key, other))
        if po is None or not po.known:
            reasons.append((other, WaitReason.NO_RECORD))
        elif po.enqueued < q:
            reasons.append((other, WaitReason.NOT_ISSUED))
        elif po.first_pending is not None and po.first_pending < q:
            reasons.append((other, WaitReason.BEHIND))
        elif po.first_pending == q and heads.get(other, (False, key, q)) != (False, key, q):
            reasons.append((other, WaitReason.QUEUED))
        elif po.completed is not None and po.completed >= q:
            peer_completed = True
    return reasons, peer_completed


def _add_p2p_edges(
    graph: WaitGraph, index: GroupIndex, have_dump: set[int], pending: pd.DataFrame, heads: dict[int, Head]
) -> None:
    """A pending send/recv waits on its peer unless the peer posted the opposite op (and that
    op is not queued behind an earlier one of the peer's)."""
    if pending.empty:
        return
    posted: Counter = Counter()
    rows = []
    for key, rank, op, src, dst, p2p_seq in pending[
        [s.PG_KEY, s.RANK, s.OP, s.PEER_SRC, s.PEER_DST, s.P2P_SEQ]
    ].itertuples(index=False):
        group = index.groups.get(key)
        if group is None or pd.isna(src) or pd.isna(dst):
            continue
        g_src, g_dst = group.local_to_global(int(src)), group.local_to_global(int(dst))
        if g_src is None or g_dst is None:
            continue
        posted[(key, str(op), g_src, g_dst)] += 1
        rows.append((key, int(rank), str(op), g_src, g_dst, int(p2p_seq) if not pd.isna(p2p_seq) else -1))
    op_at = {
        (rank, key, p2p_seq): (op, g_dst if op == "send" else g_src) for key, rank, op, g_src, g_dst, p2p_seq in rows
    }
    used: Counter = Counter()
    for key, rank, op, g_src, g_dst, p2p_seq in rows:
        peer = g_dst if op == "send" else g_src
        if peer == rank:
            continue
        opposite = "recv" if op == "send" else "send"
        k = (key, opposite, g_src, g_dst)
        queued = heads.get(rank, (True, key, p2p_seq)) != (True, key, p2p_seq)
        graph.blocked.append(Blocked(rank, key, p2p_seq, op, True, peer, queued=queued))
        if queued:
            continue
        if peer not in have_dump:
            graph.edges.append(WaitEdge(rank, peer, key, p2p_seq, WaitReason.NO_DUMP, op))
        elif used[k] < posted[k]:
            used[k] += 1
            head = heads.get(peer)
            if head is not None and op_at.get((peer, *head[1:]) if head[0] else None) != (opposite, rank):
                graph.edges.append(WaitEdge(rank, peer, key, p2p_seq, WaitReason.QUEUED, op))
        else:
            graph.edges.append(WaitEdge(rank, peer, key, p2p_seq, WaitReason.P2P_UNMATCHED, op))


def strongly_connected(nodes: set[int], out: dict[int, list[WaitEdge]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative (jobs have 100k ranks; recursion would overflow)."""
    index_of: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    result: list[list[int]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index_of:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index_of[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = sorted({e.blocker for e in out.get(v, [])})
            recurse = False
            for j in range(i, len(succ)):
                w = succ[j]
                if w not in index_of:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index_of[w])
            if recurse:
                continue
            if low[v] == index_of[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                result.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result


def root_components(graph: WaitGraph) -> list[list[int]]:
    """Sink components that someone waits on, plus stragglers: the candidate causes."""
    out = graph.out_edges()
    nodes = set(out) | {e.blocker for e in graph.edges} | set(graph.stragglers)
    comp_of: dict[int, int] = {}
    comps = strongly_connected(nodes, out)
    for i, comp in enumerate(comps):
        for v in comp:
            comp_of[v] = i
    waited_on_from_outside = {comp_of[e.blocker] for e in graph.edges if comp_of[e.waiter] != comp_of[e.blocker]}
    roots = []
    for i, comp in enumerate(comps):
        leaves = all(comp_of[e.blocker] == i for v in comp for e in out.get(v, []))
        waited_on = i in waited_on_from_outside
        straggler = any(v in graph.stragglers for v in comp)
        if leaves and (waited_on or straggler or len(comp) > 1):
            roots.append(comp)
    return roots


def reaches(graph: WaitGraph, targets: set[int]) -> set[int]:
    """Ranks that wait, directly or through others, on any of ``targets``."""
    into: dict[int, set[int]] = defaultdict(set)
    for e in graph.edges:
        into[e.blocker].add(e.waiter)
    seen: set[int] = set()
    frontier = list(targets)
    while frontier:
        v = frontier.pop()
        for w in into.get(v, ()):
            if w not in seen and w not in targets:
                seen.add(w)
                frontier.append(w)
    return seen
