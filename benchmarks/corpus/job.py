"""A small Megatron-LM style training step, written against ``Comm``.

Function names follow Megatron-LM (``megatron/core/pipeline_parallel/schedules.py``,
``p2p_communication.py``, ``tensor_parallel/mappings.py``,
``distributed/finalize_model_grads.py``, the MoE all-to-all token dispatcher),
so the recorded call stacks read like a real job's. Each collective's *site*
is the name of the function that issues it. Compute is left out: only the
order, groups, shapes and dtypes of the communication matter here.

One step:

* ``get_batch`` (data loading; a stall point) and, on the first and last
  pipeline stages, ``broadcast_data`` (TP broadcast of the batch);
* the 1F1B schedule of ``forward_backward_pipelining_without_interleaving``:
  warm-up forwards, steady one-forward-one-backward, cool-down backwards, with
  send/recv of activations and gradients between stages;
* per layer in forward: sequence-parallel all_gather and row-parallel
  all_reduce (TP), the first stage's vocab-parallel embedding all_reduce, and
  for a mixture-of-experts model the token all-to-alls (counts, dispatch with
  uneven splits, combine) in the expert-parallel group; in backward the TP
  gradient all_reduce and the reverse all-to-alls;
* ``finalize_model_grads``: data-parallel gradient buckets, then the
  embedding-group all_reduce between first and last stage;
* the optimizer's grad-norm all_reduce over the model-parallel group, the
  last stage's loss all_reduce over data parallel, an occasional checkpoint
  barrier on the default group.

Megatron skips tensor-parallel collectives when TP is 1; so does this job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.corpus.comm import Comm, Spec

# Where each site sits in a step (the fault's "phase").
PHASES: dict[str, str] = {
    "get_batch": "between",
    "broadcast_data": "forward",
    "vocab_parallel_embedding": "forward",
    "gather_along_first_dim": "forward",
    "reduce_from_tensor_model_parallel_region": "forward",
    "token_dispatch_counts": "forward",
    "token_dispatch": "forward",
    "token_combine": "forward",
    "recv_forward": "forward",
    "send_forward": "forward",
    "send_forward_recv_backward": "backward",
    "send_backward_recv_forward": "backward",
    "recv_backward": "backward",
    "send_backward": "backward",
    "token_combine_bwd": "backward",
    "token_dispatch_bwd": "backward",
    "copy_to_tensor_model_parallel_region_bwd": "backward",
    "start_grad_sync": "optimizer",
    "allreduce_word_embedding_grads": "optimizer",
    "get_grad_norm_fp32": "optimizer",
    "average_losses_across_data_parallel_group": "optimizer",
    "save_checkpoint": "between",
    "log_debug_metric": "between",
}
P2P_SITES = (
    "recv_forward",
    "send_forward",
    "send_forward_recv_backward",
    "send_backward_recv_forward",
    "recv_backward",
    "send_backward",
)
# Where an extra (debug) collective can be inserted, and on which group kind.
EXTRA_POINTS: dict[str, str] = {"after_backward": "tp", "before_grad_norm": "mp", "after_step": "default"}


@dataclass(frozen=True)
class JobConfig:
    """The shape of the job: identical on every rank."""

    steps: int
    microbatches: int
    layers: int
    seq: int
    hidden: int
    act_dtype: str
    vocab: int
    buckets: tuple[tuple[int, str], ...]  # (numel, dtype) per data-parallel gradient bucket
    checkpoint_every: int  # 0: never
    routing_seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "microbatches": self.microbatches,
            "layers": self.layers,
            "seq": self.seq,
            "hidden": self.hidden,
            "act_dtype": self.act_dtype,
            "vocab": self.vocab,
            "buckets": [list(b) for b in self.buckets],
            "checkpoint_every": self.checkpoint_every,
            "routing_seed": self.routing_seed,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobConfig:
        return cls(**{**d, "buckets": tuple((int(n), str(t)) for n, t in d["buckets"])})

    def act(self) -> Spec:
        """Activations and their gradients between stages: [seq, micro-batch size 1, hidden]."""
        return Spec((self.seq, 1, self.hidden), self.act_dtype)

    def tokens(self, step: int, mb: int, layer: int, ep_group: int, src: int, dst: int) -> int:
        """Rows routed from expert-parallel rank ``src`` to ``dst`` (1-4; deterministic, uneven)."""
        h = (
            self.routing_seed * 1_000_003
            + step * 7_919
            + mb * 104_729
            + layer * 1_299_709
            + ep_group * 15_485_863
            + src * 31
            + dst
        )
        return 1 + (h * 2_654_435_761 >> 7) % 4


# --------------------------------------------------------------------------- #
# Pipeline send/recv (p2p_communication.py)
# --------------------------------------------------------------------------- #


def _neighbours(comm: Comm) -> tuple[int | None, int | None]:
    chain = comm.topo.chain(comm.rank)
    s = comm.stage
    return (chain[s - 1] if s > 0 else None), (chain[s + 1] if s < len(chain) - 1 else None)


def _p2p_ops(comm: Comm, cfg: JobConfig, site: str, send_next: bool, recv_prev: bool, send_prev: bool, recv_next: bool):
    """Posted in Megatron's order: even stages send before they receive, odd stages the other way round."""
    prev, nxt = _neighbours(comm)
    ops: list[tuple[str, int]] = []
    even = comm.stage % 2 == 0
    order = (
        [("send", nxt, send_next), ("recv", prev, recv_prev), ("send", prev, send_prev), ("recv", nxt, recv_next)]
        if even
        else [("recv", prev, recv_prev), ("send", nxt, send_next), ("recv", nxt, recv_next), ("send", prev, send_prev)]
    )
    ops = [(kind, peer) for kind, peer, wanted in order if wanted and peer is not None]
    if ops:
        comm.p2p(site, ops, cfg.act())


def recv_forward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.first_stage:
        _p2p_ops(comm, cfg, "recv_forward", False, True, False, False)


def send_forward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.last_stage:
        _p2p_ops(comm, cfg, "send_forward", True, False, False, False)


def send_forward_recv_backward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.last_stage:
        _p2p_ops(comm, cfg, "send_forward_recv_backward", True, False, False, True)


def send_backward_recv_forward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.first_stage:
        _p2p_ops(comm, cfg, "send_backward_recv_forward", False, True, True, False)


def recv_backward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.last_stage:
        _p2p_ops(comm, cfg, "recv_backward", False, False, False, True)


def send_backward(comm: Comm, cfg: JobConfig) -> None:
    if not comm.first_stage:
        _p2p_ops(comm, cfg, "send_backward", False, False, True, False)


# --------------------------------------------------------------------------- #
# Tensor parallel (mappings.py) and the model
# --------------------------------------------------------------------------- #


def broadcast_data(comm: Comm, cfg: JobConfig) -> None:
    """get_batch on the first/last stage: TP rank 0 broadcasts tokens, labels, loss mask, positions."""
    comm.broadcast("broadcast_data", "tp", Spec((4 * cfg.seq,), "int64"))


def vocab_parallel_embedding(comm: Comm, cfg: JobConfig) -> None:
    if comm.layout.tp > 1:
        comm.all_reduce("vocab_parallel_embedding", "tp", cfg.act())


def gather_along_first_dim(comm: Comm, cfg: JobConfig) -> None:
    if comm.layout.tp > 1:
        shard = Spec((cfg.seq // comm.layout.tp, 1, cfg.hidden), cfg.act_dtype)
        comm.all_gather("gather_along_first_dim", "tp", shard)


def reduce_from_tensor_model_parallel_region(comm: Comm, cfg: JobConfig) -> None:
    if comm.layout.tp > 1:
        comm.all_reduce("reduce_from_tensor_model_parallel_region", "tp", cfg.act())


def copy_to_tensor_model_parallel_region_bwd(comm: Comm, cfg: JobConfig) -> None:
    if comm.layout.tp > 1:
        comm.all_reduce("copy_to_tensor_model_parallel_region_bwd", "tp", cfg.act())


def _splits(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> tuple[list[int], list[int]]:
    """(rows this rank sends to each EP peer, rows it receives from each) for one dispatch."""
    group = comm.group("ep")
    index = int(group.name)
    me = group.group_rank(comm.rank)
    n = len(group.ranks)
    send = [cfg.tokens(comm.step, mb, layer, index, me, j) for j in range(n)]
    recv = [cfg.tokens(comm.step, mb, layer, index, j, me) for j in range(n)]
    return send, recv


def token_dispatch(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    """MoEAlltoAllTokenDispatcher: exchange counts (then .cpu() for the splits), dispatch tokens."""
    n = comm.layout.ep
    comm.all_to_all("token_dispatch_counts", "ep", [1] * n, [1] * n, Spec((), "int64"))
    comm.sync("token_dispatch_counts")
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("token_dispatch", "ep", send, recv, Spec((cfg.hidden,), cfg.act_dtype))


def token_combine(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("token_combine", "ep", recv, send, Spec((cfg.hidden,), cfg.act_dtype))


def token_combine_bwd(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("token_combine_bwd", "ep", send, recv, Spec((cfg.hidden,), cfg.act_dtype))


def token_dispatch_bwd(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("token_dispatch_bwd", "ep", recv, send, Spec((cfg.hidden,), cfg.act_dtype))


def transformer_layer_forward(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    gather_along_first_dim(comm, cfg)
    reduce_from_tensor_model_parallel_region(comm, cfg)
    if comm.layout.ep > 1:
        token_dispatch(comm, cfg, mb, layer)
        token_combine(comm, cfg, mb, layer)


def transformer_layer_backward(comm: Comm, cfg: JobConfig, mb: int, layer: int) -> None:
    if comm.layout.ep > 1:
        token_combine_bwd(comm, cfg, mb, layer)
        token_dispatch_bwd(comm, cfg, mb, layer)
    copy_to_tensor_model_parallel_region_bwd(comm, cfg)


def forward_step(comm: Comm, cfg: JobConfig, mb: int) -> None:
    if comm.first_stage or comm.last_stage:
        broadcast_data(comm, cfg)
    if comm.first_stage:
        vocab_parallel_embedding(comm, cfg)
    for layer in range(cfg.layers):
        transformer_layer_forward(comm, cfg, mb, layer)


def backward_step(comm: Comm, cfg: JobConfig, mb: int) -> None:
    for layer in reversed(range(cfg.layers)):
        transformer_layer_backward(comm, cfg, mb, layer)


# --------------------------------------------------------------------------- #
# Schedule, gradients, optimizer
# --------------------------------------------------------------------------- #


def forward_backward_pipelining_without_interleaving(comm: Comm, cfg: JobConfig) -> None:
    """1F1B: warm-up forwards, steady one-forward-one-backward, cool-down backwards."""
    m = cfg.microbatches
    warmup = min(comm.layout.pp - comm.stage - 1, m)
    remaining = m - warmup
    for i in range(warmup):
        recv_forward(comm, cfg)
        forward_step(comm, cfg, i)
        send_forward(comm, cfg)
    if remaining > 0:
        recv_forward(comm, cfg)
    for i in range(remaining):
        forward_step(comm, cfg, warmup + i)
        send_forward_recv_backward(comm, cfg)
        backward_step(comm, cfg, i)
        if i == remaining - 1:
            send_backward(comm, cfg)
        else:
            send_backward_recv_forward(comm, cfg)
    for i in range(warmup):
        recv_backward(comm, cfg)
        backward_step(comm, cfg, remaining + i)
        send_backward(comm, cfg)
    maybe_log_debug_metric(comm, "after_backward")


def start_grad_sync(comm: Comm, numel: int, dtype: str) -> None:
    """Reduce one gradient bucket; a faulty rank takes the other branch (``*_mismatch_branch``).

    The two calls sit on neighbouring lines on purpose: the wrong bucket (empty,
    reshaped or cast) goes out from this function at another line than its
    peers' bucket, as in ``if bad: all_reduce(empty_bucket) else: all_reduce(bucket)``.
    """
    bucket = Spec((numel,), dtype)
    wrong = comm.branch_spec("start_grad_sync", bucket)
    if wrong is not None:
        comm.all_reduce("start_grad_sync", "dp", wrong)
    else:
        comm.all_reduce("start_grad_sync", "dp", bucket)


def allreduce_word_embedding_grads(comm: Comm, cfg: JobConfig) -> None:
    if comm.layout.pp > 1 and comm.has_group("emb") and (comm.first_stage or comm.last_stage):
        comm.all_reduce(
            "allreduce_word_embedding_grads", "emb", Spec((cfg.vocab // comm.layout.tp, cfg.hidden), "float32")
        )


def finalize_model_grads(comm: Comm, cfg: JobConfig) -> None:
    for numel, dtype in cfg.buckets:
        start_grad_sync(comm, numel, dtype)
    allreduce_word_embedding_grads(comm, cfg)


def get_grad_norm_fp32(comm: Comm) -> None:
    comm.all_reduce("get_grad_norm_fp32", "mp", Spec((1,), "float32"))
    comm.sync("get_grad_norm_fp32")  # total_norm.item()


def optimizer_step(comm: Comm) -> None:
    maybe_log_debug_metric(comm, "before_grad_norm")
    get_grad_norm_fp32(comm)


def average_losses_across_data_parallel_group(comm: Comm) -> None:
    if comm.last_stage:
        comm.all_reduce("average_losses_across_data_parallel_group", "dp", Spec((1,), "float32"))
        comm.sync("average_losses_across_data_parallel_group")  # loss.item() for the log


def save_checkpoint(comm: Comm) -> None:
    comm.barrier("save_checkpoint")
    comm.sync("save_checkpoint")


def log_debug_metric(comm: Comm, kind: str) -> None:
    """A debugging statistic one rank reduces on its own: the injected extra collective."""
    comm.all_reduce("log_debug_metric", kind, Spec((1,), "float32"))


def maybe_log_debug_metric(comm: Comm, where: str) -> None:
    kind = comm.extra_point(where)
    if kind is not None:
        log_debug_metric(comm, kind)


def train_step(comm: Comm, cfg: JobConfig, step: int) -> None:
    comm.stall_point("get_batch")
    forward_backward_pipelining_without_interleaving(comm, cfg)
    finalize_model_grads(comm, cfg)
    optimizer_step(comm)
    average_losses_across_data_parallel_group(comm)
    maybe_log_debug_metric(comm, "after_step")
    if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0:
        save_checkpoint(comm)


def train(comm: Comm, cfg: JobConfig) -> None:
    for step in range(cfg.steps):
        comm.begin_step(step)
        train_step(comm, cfg, step)
