"""Step-level timing of NCCL network proxy ops: when each step's data is ready, credited,
sent, received and consumed, and so how long each proxy step waits in each state.

The model follows NCCL's net transport as its profiler reports it (``ncclProfilerProxyStep``
states, which probing's ``events.rs`` sums per op):

- send side, per step: **GpuWait** from when the step is posted (its slot free: the send
  ``NCCL_STEPS`` earlier completed) until the GPU has written its data; **PeerWait** until
  the receiver's clear-to-send (a free receive slot) arrives; **SendWait** until the
  network send completes (steps queue on the link);
- receive side, per step: the receive is posted once its slot is free (the receiving GPU
  consumed the step ``NCCL_STEPS`` earlier); **RecvWait** from posting until the data
  arrived, **RecvFlushWait** until flushed, **RecvGpuWait** until the GPU consumed it.

Times are microseconds (floats). A :class:`Connections` holds ``m`` directed connections
(sender -> receiver) of ``C`` independent instances (communicators x channels), as
``(C, m)`` arrays, and is stepped in time order by the pattern (ring, tree, pipeline) that
knows what each step's data depends on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NCCL_STEPS = 8
"""Receive slots per connection (NCCL's ``NCCL_STEPS``)."""
FLUSH_US = 2.0
SEND_TIMES = ("posted", "gpu_ready", "cleared", "done")
RECV_TIMES = ("posted", "arrived", "flushed", "consumed")


@dataclass
class Ranks:
    """Per-instance, per-rank parameters of one op, ``(C, n)`` arrays in microseconds."""

    post: np.ndarray
    """When the host posts the proxy ops (hosts run ahead of their GPUs)."""
    ready: np.ndarray
    """When the rank's GPU reaches the collective (a slow GPU arrives late)."""
    kernel: np.ndarray
    """GPU time per step (a slow GPU takes longer)."""
    ctl: np.ndarray
    """Latency of this rank's clear-to-send to its senders (a congested receiver is slow)."""
    repost: np.ndarray | None = None
    """A receive path congested on this rank's host: its proxy posts the next receive only
    this long after the data of the one before arrived (one at a time, slowly), so its
    senders wait for credits, while each receive, once posted, gets its data at once.
    None or 0: receives are posted as soon as their slots are free."""
    recv_late: np.ndarray | None = None
    """How much later than its sends this rank's proxy posts an op's first receives."""


class Connections:
    """``m`` directed connections; ``src``/``dst`` are rank positions, ``xfer`` ``(C, m)`` the
    network time of one step on each. ``send``/``recv`` hold each step's state times
    ``(C, m, S)``: when it was posted, its data ready, cleared to send, sent; posted,
    arrived, flushed, consumed."""

    def __init__(self, ranks: Ranks, src: np.ndarray, dst: np.ndarray, xfer: np.ndarray, n_steps: int) -> None:
        self.src, self.dst, self.n_steps = src, dst, n_steps
        self.xfer = xfer
        shape = (ranks.post.shape[0], len(src), n_steps)
        self.send = {k: np.zeros(shape) for k in SEND_TIMES}
        self.recv = {k: np.zeros(shape) for k in RECV_TIMES}
        self.post_s, self.post_r = ranks.post[:, src], ranks.post[:, dst]
        if ranks.recv_late is not None:
            self.post_r = self.post_r + ranks.recv_late[:, dst]
        self.kernel_r, self.ctl_r = ranks.kernel[:, dst], ranks.ctl[:, dst]
        self.repost_r = np.zeros_like(self.post_r) if ranks.repost is None else ranks.repost[:, dst]
        self.next_post = np.where(self.repost_r > 0, self.post_r, -np.inf)
        self.rp_prev = self.post_r.copy()
        self.cons_prev = ranks.ready[:, dst].copy()
        self.link_free = self.post_s.copy()

    @property
    def recv_done(self) -> np.ndarray:
        return self.recv["flushed"]

    def step(self, t: int, gpu: np.ndarray, idx: np.ndarray | slice = slice(None)) -> None:
        """Step ``t`` of connections ``idx``, whose senders' data is ready at ``gpu``."""
        rp = np.maximum(np.maximum(self.rp_prev[:, idx], self.next_post[:, idx]), self.post_r[:, idx])
        g0 = self.post_s[:, idx]
        if t >= NCCL_STEPS:
            rp = np.maximum(rp, self.recv["consumed"][:, idx, t - NCCL_STEPS])
            g0 = np.maximum(g0, self.send["done"][:, idx, t - NCCL_STEPS])
        gr = np.maximum(g0, gpu)
        cleared = np.maximum(gr, rp + self.ctl_r[:, idx])
        arrive = np.maximum(cleared, self.link_free[:, idx]) + self.xfer[:, idx]  # steps share the link
        flushed = np.maximum(arrive, rp) + FLUSH_US
        consumed = np.maximum(flushed, self.cons_prev[:, idx]) + self.kernel_r[:, idx]
        for key, value in zip(SEND_TIMES, (g0, gr, cleared, arrive)):
            self.send[key][:, idx, t] = value
        for key, value in zip(RECV_TIMES, (rp, np.maximum(arrive, rp), flushed, consumed)):
            self.recv[key][:, idx, t] = value
        self.link_free[:, idx] = arrive
        self.next_post[:, idx] = np.where(self.repost_r[:, idx] > 0, arrive + self.repost_r[:, idx], -np.inf)
        self.cons_prev[:, idx] = consumed
        self.rp_prev[:, idx] = rp

    def waits(self) -> dict[str, np.ndarray]:
        """Each connection's waits summed over its steps, ``(C, m)`` in microseconds (probing's sums)."""
        s, r = self.send, self.recv
        return {
            "send_gpu_wait": (s["gpu_ready"] - s["posted"]).sum(-1),
            "send_peer_wait": (s["cleared"] - s["gpu_ready"]).sum(-1),
            "send_wait": (s["done"] - s["cleared"]).sum(-1),
            "recv_wait": (r["arrived"] - r["posted"]).sum(-1),
            "recv_flush_wait": (r["flushed"] - r["arrived"]).sum(-1),
        }

    def stops(self) -> tuple[np.ndarray, np.ndarray]:
        """When each connection's send op and receive op finished, ``(C, m)``."""
        return self.send["done"].max(-1), self.recv["consumed"].max(-1)


def ring(ranks: Ranks, xfer: np.ndarray, ring_steps: int, slices: int) -> Connections:
    """A ring collective over positions 0..n-1: i sends to i+1 for ``ring_steps`` ring steps of
    ``slices`` NCCL steps each; a slice needs the same slice of the previous ring step
    received (reduce and forward), the first ring step only the rank's own data.
    ``xfer[:, i]`` is the link i -> i+1."""
    n = ranks.post.shape[1]
    pos = np.arange(n)
    conn = Connections(ranks, pos, (pos + 1) % n, xfer, ring_steps * slices)
    gpu = ranks.ready.copy()
    for t in range(conn.n_steps):
        need = ranks.ready
        if t >= slices:  # rank i receives on connection i-1
            need = np.maximum(need, np.roll(conn.recv_done[..., t - slices], 1, axis=1))
        gpu = np.maximum(gpu, need) + ranks.kernel
        conn.step(t, gpu)
    return conn


def tree(ranks: Ranks, xfer_up: np.ndarray, xfer_down: np.ndarray, n_steps: int) -> tuple[Connections, Connections]:
    """A binary-tree all-reduce (heap order, root 0): chunks reduce up, then broadcast down.

    Up connection k is child k+1 -> its parent; down connection k is that parent -> child k+1.
    ``xfer_up``/``xfer_down`` are ``(C, n-1)`` by connection."""
    n = ranks.post.shape[1]
    child = np.arange(1, n)
    parent = (child - 1) // 2
    up = Connections(ranks, child, parent, xfer_up, n_steps)
    down = Connections(ranks, parent, child, xfer_down, n_steps)
    depth = np.floor(np.log2(np.arange(n) + 1)).astype(int)
    levels = [np.nonzero(depth == d)[0] for d in range(int(depth.max()) + 1)]
    gpu_up = ranks.ready.copy()
    gpu_down = ranks.ready.copy()
    for t in range(n_steps):
        for nodes in reversed(levels):  # leaves first: a node reduces what its children sent
            need = np.maximum(gpu_up[:, nodes], ranks.ready[:, nodes])
            for side in (1, 2):
                kids = 2 * nodes + side
                has = kids < n
                if has.any():
                    need[:, has] = np.maximum(need[:, has], up.recv_done[:, kids[has] - 1, t])
            gpu_up[:, nodes] = need + ranks.kernel[:, nodes]
            senders = nodes[nodes > 0]
            if senders.size:
                up.step(t, gpu_up[:, senders], senders - 1)
        for d, nodes in enumerate(levels):  # root first: a node forwards what its parent sent
            got = gpu_up[:, nodes] if d == 0 else down.recv_done[:, nodes - 1, t]
            gpu_down[:, nodes] = np.maximum(gpu_down[:, nodes], got) + ranks.kernel[:, nodes]
            kids = np.concatenate([2 * nodes + 1, 2 * nodes + 2])
            kids = np.sort(kids[kids < n])
            if kids.size:
                down.step(t, gpu_down[:, (kids - 1) // 2], kids - 1)
    return up, down


def p2p(ranks: Ranks, xfer: np.ndarray, src: int, dst: int, data_at: np.ndarray, n_steps: int) -> Connections:
    """One point-to-point transfer ``src -> dst`` (positions) whose data the sender's GPU has
    written at ``data_at`` ``(C,)``; ``xfer`` ``(C,)`` is the link's time per step."""
    conn = Connections(ranks, np.array([src]), np.array([dst]), xfer[:, None], n_steps)
    for t in range(n_steps):
        conn.step(t, (data_at + t * ranks.kernel[:, src])[:, None])
    return conn
