"""Explain a hang: which roots of the wait-for graph are causes, and why.

The roots of the wait-for graph are the candidates. Program order then separates a
rank that skipped or added a collective (desync) from ranks merely blocked by it,
which also breaks wait-for cycles. Roots that only appear because of something the
dumps cannot show are set aside, with a sentence saying so: a hang that began after
a mismatch is its consequence, and in gloo dumps (no send/recv recorded) a rank whose
whole group stopped cleanly together is waiting on a pipeline peer, not stuck itself.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from .. import schema as s
from ..model.cells import created_ns
from ..model.groups import ProcessGroup
from ..model.order import ProgramOrder
from .waitfor import NO_DUMP, NO_RECORD, NOT_ISSUED, P2P_UNMATCHED, WaitEdge, root_components

NEVER = 2**63


@dataclass(frozen=True, slots=True)
class Finding:
    """One suspect rank, its failure class and the sentence that shows why."""

    rank: int
    failure_class: str
    evidence: str
    pg_key: str | None
    seq: int | None
    op: str | None
    since: int
    """When the divergence began (ns; the earliest pending op waiting on it), for ordering."""


def group_label(g: ProcessGroup | None) -> str:
    if g is None:
        return "an unknown group"
    ranks = list(g.ranks)
    shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    return f"group {g.name} ({g.desc or 'no description'}, ranks [{shown}])"


def ranks_text(ranks: list[int], limit: int = 8) -> str:
    if not ranks:
        return "no rank"
    word = "rank" if len(ranks) == 1 else "ranks"
    shown = ", ".join(map(str, ranks[:limit]))
    more = f" and {len(ranks) - limit} more" if len(ranks) > limit else ""
    return f"{word} {shown}{more}"


class HangExplainer:
    """Turns the wait-for graph of an Analysis into findings."""

    def __init__(self, a, order: ProgramOrder, mismatch_since: int | None, mismatch_members: set[int]) -> None:
        self.a = a
        self.graph = a.graph
        self.order = order
        self.mismatch_since = mismatch_since
        self.mismatch_members = mismatch_members
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
        self.notes: list[str] = []
        self.unresolved = False
        self.set_aside: set[int] = set()
        """Candidate roots judged to be consequences: victims, though no visible wait shows it."""

    # -- the pieces of evidence ------------------------------------------------------

    def since(self, edges: list[WaitEdge]) -> int:
        return min((self.created.get((e.pg_key, e.waiter, e.seq), NEVER) for e in edges), default=NEVER)

    def first_wait(self, rank: int, comp: list[int]) -> WaitEdge | None:
        """Where progress diverged first: the wait on ``rank`` whose pending op was issued earliest."""
        incoming = [e for e in self.into.get(rank, []) if e.waiter not in comp] or self.into.get(rank, [])
        if not incoming:
            return None
        return min(
            incoming,
            key=lambda e: (e.reason != NOT_ISSUED, self.created.get((e.pg_key, e.waiter, e.seq), NEVER), e.seq),
        )

    def desync(self, rank: int) -> Finding | None:
        """``rank`` skipped a collective its peers wait in, or issued one nobody else did."""
        for e in sorted(self.into.get(rank, []), key=lambda e: e.seq):
            if e.reason != NOT_ISSUED:
                continue
            missing = self.order.token(e.pg_key, e.seq)
            went_to = self.order.skipped_to(rank, missing)
            if went_to is not None:
                g = self.a.groups.groups.get(e.pg_key)
                waiters = sorted({w.waiter for w in self.into[rank] if (w.pg_key, w.seq) == (e.pg_key, e.seq)})
                text = (
                    f"Rank {rank} skipped seq {e.seq} ({e.op or 'collective'}) of {group_label(g)}: it went on to "
                    f"seq {went_to[1]} of a {went_to[0] or 'default'} group, which the other ranks issue only after it; "
                    f"{ranks_text(waiters)} wait for the skipped one."
                )
                return Finding(rank, "desync", text, e.pg_key, e.seq, e.op, self.since([e]))
        for b in self.graph.blocked:
            if b.rank != rank or b.is_p2p:
                continue
            g = self.a.groups.groups[b.pg_key]
            peers = [p for p in g.ranks if p != rank]
            if self.order.is_extra(rank, self.order.token(b.pg_key, b.seq), peers):
                site = self._site(b.pg_key, b.seq, rank)
                text = (
                    f"Rank {rank} issued an extra collective: seq {b.seq} ({b.op or 'collective'}{site}) of "
                    f"{group_label(g)}, which no other rank issues; its peers moved on to later collectives."
                )
                return Finding(
                    rank, "desync", text, b.pg_key, b.seq, b.op, self.created.get((b.pg_key, rank, b.seq), NEVER)
                )
        return None

    def _site(self, key: str, seq: int, rank: int) -> str:
        c = self.a.cells
        hit = c.loc[(c[s.PG_KEY] == key) & (c[s.SEQ] == seq) & (c[s.RANK] == rank), s.CALL_SITE]
        return f", called from {hit.iloc[0]}" if len(hit) and isinstance(hit.iloc[0], str) else ""

    def straggler(self, rank: int) -> Finding:
        b = self.graph.stragglers[rank]
        g = self.a.groups.groups[b.pg_key]
        peers = [
            p
            for p in g.ranks
            if p != rank
            and (pp := self.a.progress.get((g.key, p)))
            and pp.completed is not None
            and pp.completed >= b.seq
        ]
        text = (
            f"Rank {rank} is stuck at seq {b.seq} ({b.op or 'collective'}) of {group_label(g)}, which "
            f"{ranks_text(peers)} already completed: the collective is not progressing on rank {rank} "
            f"itself (its GPU, driver or network path)."
        )
        return Finding(
            rank, "stalled_in_flight", text, g.key, b.seq, b.op, self.created.get((g.key, rank, b.seq), NEVER)
        )

    def waited_on(self, rank: int, comp: list[int]) -> Finding | None:
        e0 = self.first_wait(rank, comp)
        if e0 is None:
            return None
        incoming = self.into[rank]
        reasons = Counter(e.reason for e in incoming)
        g = self.a.groups.groups.get(e0.pg_key)
        waiters = sorted({e.waiter for e in incoming if e.pg_key == e0.pg_key and e.seq == e0.seq})
        op = e0.op or "op"
        if reasons.get(NO_DUMP):
            cls = "missing_dump"
            text = (
                f"Rank {rank} wrote no dump (process died or the file is lost); {ranks_text(waiters)} wait for it "
                f"at seq {e0.seq} ({op}) of {group_label(g)}."
            )
        elif reasons.get(P2P_UNMATCHED) and not reasons.get(NOT_ISSUED):
            cls = "p2p_unmatched"
            other = "recv" if e0.op == "send" else "send"
            text = (
                f"Rank {rank} never posted the {other} matching {ranks_text(waiters)}'s pending {e0.op} "
                f"in {group_label(g)} (p2p seq {e0.seq})."
            )
        elif reasons.get(NO_RECORD) and not reasons.get(NOT_ISSUED):
            cls = "missing_participant"
            text = f"Rank {rank} has no record of {group_label(g)} while {ranks_text(waiters)} wait at seq {e0.seq} ({op})."
        else:
            cls = "missing_participant"
            p = self.a.progress.get((e0.pg_key, rank))
            last = (
                f"its last was seq {p.enqueued}"
                if p and p.enqueued is not None and p.enqueued >= 0
                else "none in the window"
            )
            site = self._site(e0.pg_key, e0.seq, waiters[0]) if waiters else ""
            verb = "waits" if len(waiters) == 1 else "wait"
            text = f"Rank {rank} never issued seq {e0.seq} ({op}{site}) of {group_label(g)} ({last}); {ranks_text(waiters)} issued it and {verb}."
            if rank not in self.blocked_ranks:
                text += (
                    f" Rank {rank} itself waits in no collective: it is stuck before issuing "
                    "(CPU side: compute, data loading, a lock), or blocked in something the dumps do not record."
                )
        return Finding(
            rank, cls, text, e0.pg_key, e0.seq, e0.op, self.since([e for e in incoming if e.reason == e0.reason])
        )

    # -- deciding -------------------------------------------------------------------

    def explain(self) -> list[Finding]:
        findings: list[Finding] = []
        for comp in root_components(self.graph):
            findings.extend(self._component(comp))
        findings = self._drop_consequences(findings)
        return findings

    def _component(self, comp: list[int]) -> list[Finding]:
        out = []
        for rank in comp:
            f = self.desync(rank) if rank not in self.graph.stragglers else None
            if f is not None:
                out.append(f)
        if out:
            return out  # the divergent ranks explain the rest of the cycle
        if len(comp) > 1:
            self.unresolved = True
            self.notes.append(
                f"Ranks {', '.join(map(str, comp))} wait on each other in a cycle, and program order does not "
                "say which of them diverged first."
            )
        for rank in comp:
            f = self.straggler(rank) if rank in self.graph.stragglers else self.waited_on(rank, comp)
            if f is not None:
                out.append(f)
        return out

    def _silent(self, f: Finding) -> bool:
        return f.failure_class == "missing_participant" and f.rank not in self.blocked_ranks

    def _drop_consequences(self, findings: list[Finding]) -> list[Finding]:
        kept = []
        for f in findings:
            if self.mismatch_members and f.rank in self.mismatch_members:
                continue  # part of the mismatch found above
            if self.mismatch_since is not None and self._silent(f) and f.since > self.mismatch_since:
                self.notes.append(
                    f"Rank {f.rank} stopped issuing only after the mismatch began; it is taken as a consequence, "
                    "not a cause."
                )
                self.set_aside.add(f.rank)
                continue
            kept.append(f)
        if self.a.records_p2p:
            return kept
        clean = [f for f in kept if self._silent(f) and self._stopped_cleanly(f.rank, {k.rank for k in kept})]
        if clean and (len(clean) < len(kept) or self.mismatch_since is not None):
            ranks = sorted(f.rank for f in clean)
            self.notes.append(
                f"These dumps record no send/recv (gloo), so point-to-point waits are invisible. "
                f"{ranks_text(ranks).capitalize()} completed everything they issued and stopped together with "
                f"their whole group: most likely blocked in a send/recv with a stuck pipeline peer, not stuck "
                f"themselves."
            )
            kept = [f for f in kept if f not in clean]
            self.set_aside.update(ranks)
        elif any(self._silent(f) for f in kept):
            self.notes.append(
                "These dumps record no send/recv (gloo): a rank that waits in no collective may also be blocked "
                "in a point-to-point op the dumps cannot show."
            )
        return kept

    def _stopped_cleanly(self, rank: int, roots: set[int]) -> bool:
        """Some group of ``rank`` (not the whole world) stopped at one point, all silent roots."""
        world = len(self.a.dumps.ranks)
        for g in self.a.groups.groups.values():
            if rank not in g.ranks or len(g.ranks) < 2 or len(g.ranks) >= world:
                continue
            positions = {self.a.progress[(g.key, r)].enqueued for r in g.ranks if (g.key, r) in self.a.progress}
            all_silent = all(r in roots and r not in self.blocked_ranks for r in g.ranks)
            waited_here = any(e.pg_key == g.key for e in self.into.get(rank, []))
            if all_silent and len(positions) == 1 and not waited_here:
                return True
        return False
