"""A simulated training job's NCCL network proxy ops, as probing's ``global.nccl.proxy_ops`` rows.

Layout: ``pp`` pipeline stages x ``dp`` data-parallel replicas, one GPU and NIC per rank
(tensor parallelism stays inside a node, over NVLink, where NCCL writes no proxy ops);
global rank = stage * dp + replica. Communicators, each with its own hash and
communicator-local ranks (NCCL's ``comm->rank``):

- ``world`` (all ranks, local = global): a ring all_reduce per iteration (the loss);
- one ``dp`` communicator per stage (local rank = replica): ring all_gather (parameters),
  ring all_reduce (gradients) over two channels, and a tree all_reduce (a norm) per
  iteration;
- one ``pp`` communicator per replica (local rank = stage): send/recv of activations
  forward and gradients backward, per micro-batch (GPipe order).

Faults (global ranks): ``slow_gpu`` (the GPU reaches every collective late and runs its
kernels slowly), ``slow_link`` (sender -> receiver: every step on that link takes
longer), ``congestion`` (the receiver grants clear-to-send late), ``credit_congestion``
(the receiver posts each receive of its pipeline connections late, as a receive path
congested on its host would: only its senders' credit waits show it, as each receive, once
posted, gets its data at once; put at a first stage, whose sends do not wait on those
receives, nothing else shows it), ``credit_noise`` (the receiver posts
each op's receives a little late, once: credit waits within the noise, nothing to name). Every op also gets healthy noise: jitter in when
ranks arrive, kernel and link times.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .timing import Connections, Ranks, p2p, ring, tree

EPOCH_NS = 1_760_000_000_000_000_000
ITERATION_US = 60_000.0
KINDS = ("slow_gpu", "slow_link", "congestion", "credit_congestion", "credit_noise")


@dataclass(frozen=True)
class Fault:
    kind: str
    ranks: tuple[int, ...]
    """slow_gpu: (rank,); slow_link: (sender, receiver); congestion, credit_congestion,
    credit_noise: (receiver,)."""


@dataclass(frozen=True)
class Comm:
    name: str
    hash: int
    members: tuple[int, ...]
    """Global rank of each local rank."""


@dataclass
class Params:
    slow_delay_us: float = 20_000.0
    slow_kernel: float = 3.0
    link_factor: float = 30.0
    congestion_us: float = 400.0
    repost_us: float = 500.0
    """credit_congestion: after each receive of a pipeline transfer (8 steps: several ms of
    credit waits an op)."""
    noise_post_us: float = 100.0
    """credit_noise: the receiver posts an op's first receives this late, once per op (its
    senders wait for its first credits about that long, within the healthy jitter of when ranks
    reach an op)."""
    kernel_us: float = 5.0
    xfer_us: float = 10.0
    ctl_us: float = 3.0
    jitter_us: float = 200.0
    slices: int = 2
    tree_steps: int = 16
    p2p_steps: int = 8
    microbatches: int = 2
    compute_us: float = 500.0


@dataclass
class Job:
    world: int
    pp: int
    dp: int
    comms: dict[str, Comm]
    faults: list[Fault]
    params: Params = field(default_factory=Params)

    def rank(self, stage: int, replica: int) -> int:
        return stage * self.dp + replica


def layout(world: int) -> tuple[int, int]:
    """(pp, dp): 2 stages up to 16 ranks, else 4."""
    pp = 2 if world <= 16 else 4
    if world % pp:
        raise ValueError(f"world size {world} is not a multiple of {pp} stages")
    return pp, world // pp


def _hash(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little")


def make_job(world: int, faults: list[Fault], seed: int = 0, params: Params | None = None) -> Job:
    pp, dp = layout(world)
    comms = {"world": Comm("world", _hash(seed, "world"), tuple(range(world)))}
    for s in range(pp):
        comms[f"dp{s}"] = Comm(f"dp{s}", _hash(seed, f"dp{s}"), tuple(s * dp + d for d in range(dp)))
    for d in range(dp):
        comms[f"pp{d}"] = Comm(f"pp{d}", _hash(seed, f"pp{d}"), tuple(s * dp + d for s in range(pp)))
    for f in faults:
        if f.kind not in KINDS or any(not 0 <= r < world for r in f.ranks):
            raise ValueError(f"bad fault {f}")
    return Job(world, pp, dp, comms, list(faults), params or Params())


class _Sim:
    """Draws each op's per-rank parameters (with the faults) and collects the rows."""

    def __init__(self, job: Job, seed: int, keep_steps: bool) -> None:
        self.job, self.p = job, job.params
        self.rng = np.random.default_rng(seed)
        self.slow = {f.ranks[0] for f in job.faults if f.kind == "slow_gpu"}
        self.links = {f.ranks for f in job.faults if f.kind == "slow_link"}
        self.congested = {f.ranks[0] for f in job.faults if f.kind == "congestion"}
        self.reposting = {f.ranks[0] for f in job.faults if f.kind == "credit_congestion"}
        self.late_post = {f.ranks[0] for f in job.faults if f.kind == "credit_noise"}
        self.rows: list[pd.DataFrame] = []
        self.keep_steps = keep_steps
        self.steps: list[dict] = []
        self.seq: dict[tuple[str, str], int] = {}
        self.op = 0
        """Which op the emitted rows belong to (a tree's up and down halves are one op)."""

    def ranks(self, members: np.ndarray, t0: float, pipeline: bool = False) -> Ranks:
        """``members`` ``(C, n)`` global ranks; ``pipeline``: for the pipeline's transfers."""
        p, shape = self.p, members.shape
        ready = t0 + 100.0 + self.rng.uniform(0, p.jitter_us, shape)
        kernel = p.kernel_us * (1 + self.rng.uniform(0, 0.2, shape))
        slow = np.isin(members, list(self.slow))
        ready = ready + slow * p.slow_delay_us
        kernel = kernel * np.where(slow, p.slow_kernel, 1.0)
        ctl = p.ctl_us + np.isin(members, list(self.congested)) * p.congestion_us
        post = t0 + self.rng.uniform(0, 20.0, shape)
        repost = np.isin(members, list(self.reposting)) * p.repost_us * pipeline
        recv_late = np.isin(members, list(self.late_post)) * p.noise_post_us
        return Ranks(post, ready, kernel, ctl, repost, recv_late)

    def xfer(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        base = self.p.xfer_us * (1 + self.rng.uniform(0, 0.2, src.shape))
        slow = np.zeros(src.shape, bool)
        for s, r in self.links:
            slow |= (src == s) & (dst == r)
        return base * np.where(slow, self.p.link_factor, 1.0)

    def emit(self, comms: list[Comm], func: str, conn: Connections, members: np.ndarray, seq: int, chans: int) -> None:
        """Rows of one op: ``conn`` instance ``c`` is comm ``c // chans``, channel ``c % chans``."""
        waits = conn.waits()
        send_stop, recv_stop = conn.stops()
        c_idx, m_idx = np.indices(send_stop.shape)
        comm_of = c_idx // chans
        for is_send, rank_pos, peer_pos, stop in (
            (1, conn.src, conn.dst, send_stop),
            (0, conn.dst, conn.src, recv_stop),
        ):
            cols = ("send_gpu_wait", "send_peer_wait", "send_wait") if is_send else ("recv_wait", "recv_flush_wait")
            local = rank_pos[m_idx]
            frame = {
                "ts": EPOCH_NS + np.round(stop * 1000).astype(np.int64).ravel(),
                "rank": local.ravel(),
                "comm": comm_of.ravel(),
                "coll_func": func,
                "seq": seq,
                "channel_id": (c_idx % chans).ravel(),
                "peer": peer_pos[m_idx].ravel(),
                "is_send": is_send,
                "n_steps": conn.n_steps,
                "_rank": members[c_idx, local].ravel(),
            }
            for w in ("send_gpu_wait", "send_peer_wait", "send_wait", "recv_wait", "recv_flush_wait"):
                frame[f"{w}_ns"] = np.round(waits[w] * 1000).astype(np.int64).ravel() if w in cols else 0
            df = pd.DataFrame(frame)
            df["comm_hash"] = np.array([c.hash for c in comms], dtype=np.uint64)[df.pop("comm").to_numpy()]
            self.rows.append(df)
        if self.keep_steps:
            self.steps.append(
                {"comms": comms, "func": func, "seq": seq, "chans": chans, "op": self.op, "conn": _tail(conn)}
            )

    def next_seq(self, comm: str, func: str) -> int:
        self.op += 1
        key = (comm, func)
        self.seq[key] = self.seq.get(key, -1) + 1
        return self.seq[key]


def _tail(conn: Connections, keep: int = 32) -> Connections:
    """Only the last ``keep`` steps (NCCL's example plugin keeps 32 per op)."""
    out = Connections.__new__(Connections)
    out.src, out.dst, out.n_steps = conn.src, conn.dst, conn.n_steps
    out.send = {k: v[..., -keep:] for k, v in conn.send.items()}
    out.recv = {k: v[..., -keep:] for k, v in conn.recv.items()}
    return out


def _ring_op(sim: _Sim, comms: list[Comm], func: str, t0: float, ring_steps, chans: int = 2) -> None:
    members = np.repeat(np.array([c.members for c in comms]), chans, axis=0)
    ranks = sim.ranks(members, t0)
    n = members.shape[1]
    xfer = sim.xfer(members, np.roll(members, -1, axis=1))
    conn = ring(ranks, xfer, ring_steps(n), sim.p.slices)
    seq = sim.next_seq(comms[0].name[:2], func)
    sim.emit(comms, func, conn, members, seq, chans)


def _tree_op(sim: _Sim, comms: list[Comm], t0: float) -> None:
    members = np.array([c.members for c in comms])
    ranks = sim.ranks(members, t0)
    child = np.arange(1, members.shape[1])
    parent = (child - 1) // 2
    up, down = tree(
        ranks,
        sim.xfer(members[:, child], members[:, parent]),
        sim.xfer(members[:, parent], members[:, child]),
        sim.p.tree_steps,
    )
    seq = sim.next_seq(comms[0].name[:2], "AllReduce")
    for conn in (up, down):
        sim.emit(comms, "AllReduce", conn, members, seq, 1)


def _pipeline(sim: _Sim, comms: list[Comm], t0: float) -> None:
    """GPipe: every micro-batch forward through the stages, then backward."""
    p = sim.p
    members = np.array([c.members for c in comms])  # (dp, pp)
    ranks = sim.ranks(members, t0, pipeline=True)
    n_stages = members.shape[1]
    compute = p.compute_us * np.where(np.isin(members, list(sim.slow)), p.slow_kernel, 1.0)
    free = ranks.ready.copy()
    arrived = {}
    for mb in range(p.microbatches):
        for s in range(n_stages):
            need = np.maximum(free[:, s], arrived.get(("f", mb, s), free[:, s]))
            free[:, s] = need + compute[:, s]
            if s + 1 < n_stages:
                conn = p2p(ranks, sim.xfer(members[:, s], members[:, s + 1]), s, s + 1, free[:, s], p.p2p_steps)
                arrived[("f", mb, s + 1)] = conn.stops()[1][:, 0]
                _emit_p2p(sim, comms, conn, members)
    for mb in range(p.microbatches):
        for s in reversed(range(n_stages)):
            need = np.maximum(free[:, s], arrived.get(("b", mb, s), free[:, s]))
            free[:, s] = need + compute[:, s]
            if s > 0:
                conn = p2p(ranks, sim.xfer(members[:, s], members[:, s - 1]), s, s - 1, free[:, s], p.p2p_steps)
                arrived[("b", mb, s - 1)] = conn.stops()[1][:, 0]
                _emit_p2p(sim, comms, conn, members)


def _emit_p2p(sim: _Sim, comms: list[Comm], conn: Connections, members: np.ndarray) -> None:
    sim.op += 1
    before = len(sim.rows)
    sim.emit(comms, "Send", conn, members, 0, 1)
    sim.rows[before + 1]["coll_func"] = "Recv"  # the receive side of a p2p op is a Recv


def simulate(job: Job, iterations: int = 6, seed: int = 0, keep_steps: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    """Every proxy-op row of ``iterations`` training iterations (probing's global columns),
    and with ``keep_steps`` each op's last 32 steps for the plugin's traces."""
    sim = _Sim(job, seed, keep_steps)
    dps = [job.comms[f"dp{s}"] for s in range(job.pp)]
    pps = [job.comms[f"pp{d}"] for d in range(job.dp)]
    for it in range(iterations):
        t0 = it * ITERATION_US
        _ring_op(sim, dps, "AllGather", t0, lambda n: n - 1)
        _pipeline(sim, pps, t0 + 10_000.0)
        _ring_op(sim, dps, "AllReduce", t0 + 30_000.0, lambda n: 2 * (n - 1))
        _tree_op(sim, dps, t0 + 42_000.0)
        _ring_op(sim, [job.comms["world"]], "AllReduce", t0 + 48_000.0, lambda n: 2 * (n - 1), chans=1)
    rows = pd.concat(sim.rows, ignore_index=True)
    stage, replica = np.divmod(rows["_rank"].to_numpy(), job.dp)
    rows["tp_rank"], rows["pp_rank"], rows["dp_rank"] = 0, stage, replica
    rows["_host"] = [f"node{r:04d}" for r in rows["_rank"]]
    rows["trans_bytes"] = rows["n_steps"] * (1 << 19)
    return rows.sort_values("ts", kind="stable").reset_index(drop=True), sim.steps
