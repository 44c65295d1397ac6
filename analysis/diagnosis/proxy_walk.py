"""Walk each waiting edge of one communicator back to where its wait began.

probing's rule blames an edge's immediate sender; in a ring or a tree a slow rank's delay
propagates hop by hop, so every hop names its own upstream. Here a ``propagated`` edge
s -> r (the sender s waited on its GPU) is explained by s's own waiting receives: the
largest of them, from a peer other than r (data a rank sends to r never depends on what
it receives from r, except in a tree's root, which sends back down what its children
sent up: the receive from r counts then, if it finished before the send did, on s's own
clock). The walk goes on from that edge's sender until:

- a rank whose sends waited on its GPU while none of its receives waited: **slow GPU**;
- an edge that waited while its sender neither waited on its GPU nor on credits: **slow link**;
- an edge whose sender waited on the receiver's credits: **receiver congestion**, unless
  the receiver's own sends of that op waited on its GPU: a rank late with its own data
  frees its receive slots late too, so its senders' credit waits are its lateness, and the
  walk goes on from its own late sends. (In a ring, a receive side that posts late also
  makes the rank late with its sends: from per-op sums that reads as a slow GPU of the
  same rank; the finding says that both fit.) A credit wait never explains a rank's own
  GPU wait: it is the receiver making its sender wait, not the reverse;
- an edge with no send rows: **unresolved** (the sender's rows are missing);
- a cycle (no rank whose wait is its own): the delay of a root found elsewhere in the
  communicator coming back around (:func:`settle_cycles`), or else the rank in it whose
  GPU wait is least explained by its receives, flagged as ambiguous.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .proxy_edges import CONGESTION, PROPAGATED, SLOW_LINK, UNMATCHED

SLOW_GPU, LINK, RECEIVER, UNRESOLVED = "slow_gpu", "slow_link", "receiver_congestion", "unresolved"


@dataclass(frozen=True, slots=True)
class Root:
    """Where waits began: ``kind`` and its communicator-local ranks ((rank,) or (sender, receiver))."""

    kind: str
    ranks: tuple[int, ...]
    ambiguous: bool = False


EXPLAINS_SHARE = 0.5
"""A receive below the noise floor still explains a send whose wait it is half of: a wave
that fades along a chain must not stop the walk short of its root."""


@dataclass(frozen=True, slots=True)
class _In:
    row: int
    sender: int
    x_recv: float
    recv_op: float
    cls: str
    recv_ts: float
    waiting: bool
    credit_only: bool


class Walker:
    """The waiting edges of one communicator, and the memoized walk from each."""

    def __init__(self, edges: pd.DataFrame) -> None:
        self.edges = edges
        self.into: dict[int, list[_In]] = defaultdict(list)
        self.send_ts: dict[tuple[int, int], float] = {}
        self.by_pair: dict[tuple[int, int], _In] = {}
        self.gpu_out: dict[int, float] = defaultdict(float)
        self.recv_in: dict[int, float] = defaultdict(float)
        self.recv_raw: dict[int, float] = defaultdict(float)
        self.gpu_raw: dict[tuple[int, int], float] = {}
        self.late_out: dict[int, list[tuple[int, float]]] = defaultdict(list)
        """Each rank's sends that waited on its GPU beyond the noise: (receiver, excess)."""
        cols = [
            "sender",
            "receiver",
            "x_recv",
            "recv_op",
            "gpu_op",
            "mode",
            "waiting",
            "sender_ts",
            "receiver_ts",
            "receiver_ops",
            "credit_only",
            "sender_late",
            "x_gpu",
        ]
        for row, (s, r, xr, rr, g, mode, waiting, sts, rts, rops, credit, late, xg) in zip(
            edges.index, edges[cols].itertuples(index=False)
        ):
            s, r = int(s), int(r)
            self.send_ts[(s, r)] = _time(sts)
            self.gpu_raw[(s, r)] = float(g)
            self.gpu_out[s] += float(g)
            self.recv_raw[r] += float(rr)
            if late:
                self.late_out[s].append((r, float(xg)))
            if rops > 0:
                edge = _In(row, s, float(xr), float(rr), mode, _time(rts), bool(waiting), bool(credit))
                self.into[r].append(edge)
                self.by_pair[(s, r)] = edge
            if waiting:
                self.recv_in[r] += float(xr)
        self.memo: dict[tuple[int, int], Root] = {}

    def _pick(self, s: int, r: int, enough: list[_In], by: str) -> _In | None:
        """The largest receive of ``enough`` from a peer other than ``r``; else the one from
        ``r`` itself if it finished before ``s``'s send to ``r`` did (a tree's root)."""
        others = [e for e in enough if e.sender != r]
        if others:
            return max(others, key=lambda e: getattr(e, by))
        back = next((e for e in enough if e.sender == r), None)
        if back is None:
            return None
        sent = self.send_ts.get((s, r), math.nan)
        if math.isnan(back.recv_ts) or math.isnan(sent) or back.recv_ts <= sent:
            return back
        return None

    def _explaining(self, s: int, r: int, x: float) -> _In | None:
        """The receive of ``s`` that explains why its send to ``r`` (a wait of ``x``) waited on its GPU.

        First a receive that waited itself (or whose excess is half of ``x``); else one whose
        wait, as measured, is half of the send's GPU wait: a rank whose receives wait as long
        as its sends is not where the wait began, even when its siblings, compared with,
        happen to be slow too."""
        into = [e for e in self.into.get(s, []) if not e.credit_only]
        found = self._pick(s, r, [e for e in into if e.waiting or e.x_recv >= EXPLAINS_SHARE * x], "x_recv")
        if found is not None:
            return found
        gpu = self.gpu_raw.get((s, r), 0.0)
        return self._pick(s, r, [e for e in into if gpu > 0 and e.recv_op >= EXPLAINS_SHARE * gpu], "recv_op")

    def _cycle_root(self, states: list[tuple[int, int]]) -> Root:
        ranks = sorted({s for s, _ in states})
        own = max(ranks, key=lambda k: (self.gpu_out[k] - self.recv_raw[k], -k))
        return Root(SLOW_GPU, (own,), ambiguous=True)

    def root(self, s: int, r: int, x: float) -> Root:
        """Where the wait of a propagated edge ``s -> r`` (excess ``x``) began."""
        path: list[tuple[int, int]] = []
        seen: dict[tuple[int, int], int] = {}
        cur = (s, r)
        while True:
            if cur in self.memo:
                found = self.memo[cur]
                break
            if cur in seen:
                found = self._cycle_root(path[seen[cur] :])
                break
            seen[cur] = len(path)
            path.append(cur)
            e = self._explaining(*cur, x)
            if e is None:
                found = Root(SLOW_GPU, (cur[0],))
                break
            if e.cls == PROPAGATED:
                cur, x = (e.sender, cur[0]), max(x, e.x_recv) if not e.waiting else e.x_recv
                continue
            found = _terminal(e.cls, e.sender, cur[0])
            break
        for state in path:
            self.memo[state] = found
        return found

    def late_receiver(self, r: int) -> Root:
        """Where the lateness of ``r``, whose senders waited for its credits, began: from its
        latest send that waited on its GPU; a congested receive side if none did."""
        if not self.late_out.get(r):
            return Root(RECEIVER, (r,))
        k, x = max(self.late_out[r], key=lambda late: late[1])
        return self.root(r, k, x)

    def roots(self) -> dict[int, Root]:
        """The root of every waiting edge, by the edge's row label."""
        out: dict[int, Root] = {}
        for r, edges in self.into.items():
            for e in edges:
                if not e.waiting:
                    continue
                if e.credit_only:
                    out[e.row] = self.late_receiver(r)
                elif e.cls == PROPAGATED:
                    out[e.row] = self.root(e.sender, r, e.x_recv)
                else:
                    out[e.row] = _terminal(e.cls, e.sender, r)
        alone = self.edges.loc[self.edges["send_only"], ["sender", "receiver", "x_gpu"]]
        for row, (s, r, xg) in zip(alone.index, alone.itertuples(index=False)):
            out[row] = self.root(int(s), int(r), float(xg))
        return out


def _time(value: object) -> float:
    """A median stop time, NaN when the rows had none."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _terminal(cls: str, sender: int, receiver: int) -> Root:
    if cls == SLOW_LINK:
        return Root(LINK, (sender, receiver))
    if cls == CONGESTION:
        return Root(RECEIVER, (receiver,))
    if cls == UNMATCHED:
        return Root(UNRESOLVED, (sender,))
    raise ValueError(cls)


def walk(edges: pd.DataFrame) -> pd.Series:
    """Root of each waiting edge of one communicator (None for the others)."""
    roots = Walker(edges).roots()
    return pd.Series([roots.get(i) for i in edges.index], index=edges.index, dtype=object)


def attributed_wait(edges: pd.DataFrame) -> np.ndarray:
    """Each edge's excess wait over the window (ns): per-op excess times ops, of the receive
    wait; of the sender's credit wait where only that waited; of the sender's GPU wait for a
    send with no receive rows."""
    recv = (edges["x_recv"] * edges["receiver_ops"]).to_numpy(dtype=float)
    credit = (edges["x_peerw"] * edges["sender_ops"]).to_numpy(dtype=float)
    send = (edges["x_gpu"] * edges["sender_ops"]).to_numpy(dtype=float)
    return np.where(edges["send_only"].to_numpy(), send, np.where(edges["credit_only"].to_numpy(), credit, recv))


def settle_cycles(edges: pd.DataFrame, roots: pd.Series) -> pd.Series:
    """A cycle in a communicator that also has a root of its own (found in another op
    kind, or from other edges) is that root's delay coming back around (a tree's broadcast
    returns to the slow leaf): its edges go to the largest such root. Only a communicator
    with no other root keeps the cycle's guess."""
    out = roots.copy()
    for _, part in edges.groupby("comm", sort=False):
        found = out.loc[part.index]
        firm = [(r, w) for r, w in zip(found, part["attributed_ns"]) if r is not None and not r.ambiguous]
        if not firm or not any(r is not None and r.ambiguous for r in found):
            continue
        weight: dict[Root, float] = defaultdict(float)
        for r, w in firm:
            weight[r] += float(w)
        best = max(weight, key=lambda r: weight[r])
        out.loc[part.index] = [best if r is not None and r.ambiguous else r for r in found]
    return out
