"""A small FSDP2 / torchtitan style training step of a mixture-of-experts model, written against ``Comm``.

The second program shape of the corpus (the first is ``job.py``'s Megatron-LM
layout): sharded data parallel (ZeRO-3) with expert parallelism. Function names
follow torch's FSDP2 (``torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py``:
``pre_forward``, ``unshard``, ``pre_backward``, ``post_backward``;
``_fsdp_collectives.py``: ``foreach_all_gather``, ``foreach_reduce``) and
torchtitan (``train.py``: ``train_step``, ``forward_backward_step``;
``distributed/expert_parallel.py``: ``_token_dispatch``, ``_token_combine``;
``distributed/utils.py``: ``clip_grad_norm_``, ``dist_mean``), so recorded call
stacks read like a real job's. Compute is left out.

One step, per micro-batch:

* forward: the root module's all_gather (embedding, final norm, output), then
  per transformer block the FSDP all_gather (``all_gather_into_tensor``) of
  its flat parameter shard in the shard group; for a MoE block (every block
  after the first ``dense_layers``) the token counts all_to_all, ``.tolist()``
  of the splits, the token dispatch all_to_all (routed, uneven splits) and the
  token combine all_to_all in the expert-parallel group;
* backward, per block in reverse: the all_gather again (parameters were
  resharded after forward; not with ``reshard_after_forward`` off), the
  all_to_alls' backward, then ``foreach_reduce``: ``reduce_scatter_tensor``
  of the block's gradients in the shard group and, with hybrid sharding, an
  all_reduce of the reduced shard in the replicate group; last the root's
  ``foreach_reduce``;

then the grad-norm all_reduces (shard group; the experts' over the
expert-parallel group), the loss all_reduce over the world, an occasional
checkpoint barrier. A collective's *site* is the function that issues it,
except the all_gathers: their site is the FSDP hook they serve
(``pre_forward`` or ``pre_backward``), both issued from ``foreach_all_gather``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.corpus.comm import Comm, Spec

# Where each site sits in a step (the fault's "phase").
PHASES: dict[str, str] = {
    "get_batch": "between",
    "pre_forward": "forward",
    "_token_dispatch": "forward",
    "_token_combine": "forward",
    "pre_backward": "backward",
    "_token_combine_backward": "backward",
    "_token_dispatch_backward": "backward",
    "foreach_reduce": "backward",
    "clip_grad_norm_": "optimizer",
    "dist_mean": "optimizer",
    "save_checkpoint": "between",
    "log_debug_metric": "between",
}
P2P_SITES: tuple[str, ...] = ()
# Where an extra (debug) collective can be inserted, and on which group kind.
EXTRA_POINTS: dict[str, str] = {"after_backward": "shard", "before_grad_norm": "ep", "after_step": "default"}
# The *_branch families: the wrong gradient goes out from the neighbouring line of foreach_reduce.
BRANCH_SITE = "foreach_reduce"
BRANCH_OPS = ("reduce_scatter",)
# The token dispatch all_to_all with routed, uneven splits (its counts exchange has even splits).
DISPATCH_SITE = "_token_dispatch"


@dataclass(frozen=True)
class FsdpConfig:
    """The shape of the job: identical on every rank."""

    steps: int
    microbatches: int
    layers: int
    dense_layers: int  # the first blocks are dense, the others mixture-of-experts (as DeepSeek's)
    seq: int
    hidden: int
    vocab: int
    param_dtype: str  # MixedPrecisionPolicy: all_gather and activations
    reduce_dtype: str  # MixedPrecisionPolicy: reduce_scatter of gradients
    experts_per_rank: int
    reshard_after_forward: bool
    checkpoint_every: int  # 0: never
    routing_seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FsdpConfig:
        return cls(**d)

    def is_moe(self, layer: int) -> bool:
        return layer >= self.dense_layers

    def block_numel(self, layer: int) -> int:
        """Parameters of one transformer block FSDP gathers: attention, norms, and a dense MLP or a router
        (the experts themselves are sharded by expert parallelism)."""
        h = self.hidden
        mlp = h * self.experts_per_rank * 8 if self.is_moe(layer) else 8 * h * h
        return 4 * h * h + mlp + 2 * h

    def root_numel(self) -> int:
        """The root module's own parameters: embedding, final norm, output projection."""
        return 2 * self.vocab * self.hidden + self.hidden

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
# FSDP2: unshard (all_gather) and reduce (reduce_scatter, all_reduce)
# --------------------------------------------------------------------------- #


def _shard_numel(comm: Comm, numel: int) -> int:
    """Elements of this rank's flat shard: ``numel`` padded to a multiple of the shard group."""
    n = len(comm.group("shard").ranks)
    return -(-numel // n)


def foreach_all_gather(comm: Comm, cfg: FsdpConfig, numel: int, site: str) -> None:
    comm.all_gather(site, "shard", Spec((_shard_numel(comm, numel),), cfg.param_dtype))


def unshard(comm: Comm, cfg: FsdpConfig, numel: int, site: str) -> None:
    foreach_all_gather(comm, cfg, numel, site)


def pre_forward(comm: Comm, cfg: FsdpConfig, numel: int) -> None:
    unshard(comm, cfg, numel, "pre_forward")


def pre_backward(comm: Comm, cfg: FsdpConfig, numel: int) -> None:
    unshard(comm, cfg, numel, "pre_backward")


def foreach_reduce(comm: Comm, cfg: FsdpConfig, numel: int) -> None:
    """Reduce-scatter one module's gradients; a faulty rank takes the other branch (``*_mismatch_branch``).

    The two calls sit on neighbouring lines on purpose: the wrong gradient buffer
    (empty, reshaped or cast) goes out from this function at another line than its
    peers' buffer. With hybrid sharding the reduced shard is then all-reduced
    across replicas.
    """
    shard = _shard_numel(comm, numel)
    grads = Spec((shard * len(comm.group("shard").ranks),), cfg.reduce_dtype)
    wrong = comm.branch_spec("foreach_reduce", grads)
    if wrong is not None:
        comm.reduce_scatter("foreach_reduce", "shard", wrong)
    else:
        comm.reduce_scatter("foreach_reduce", "shard", grads)
    if comm.has_group("replicate"):
        comm.all_reduce("foreach_reduce", "replicate", Spec((shard,), cfg.reduce_dtype))


def post_backward(comm: Comm, cfg: FsdpConfig, numel: int) -> None:
    foreach_reduce(comm, cfg, numel)


# --------------------------------------------------------------------------- #
# Expert parallel (torchtitan's ExpertParallel)
# --------------------------------------------------------------------------- #


def _splits(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> tuple[list[int], list[int]]:
    """(rows this rank sends to each EP peer, rows it receives from each) for one dispatch."""
    group = comm.group("ep")
    index = int(group.name)
    me = group.group_rank(comm.rank)
    n = len(group.ranks)
    send = [cfg.tokens(comm.step, mb, layer, index, me, j) for j in range(n)]
    recv = [cfg.tokens(comm.step, mb, layer, index, j, me) for j in range(n)]
    return send, recv


def _token_dispatch(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    """Exchange tokens-per-expert counts, ``.tolist()`` them into splits, dispatch the routed tokens."""
    n = len(comm.group("ep").ranks)
    counts = [cfg.experts_per_rank] * n
    comm.all_to_all("_token_dispatch", "ep", counts, counts, Spec((), "int64"))
    comm.sync("_token_dispatch")
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("_token_dispatch", "ep", send, recv, Spec((cfg.hidden,), cfg.param_dtype))


def _token_combine(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("_token_combine", "ep", recv, send, Spec((cfg.hidden,), cfg.param_dtype))


def _token_combine_backward(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("_token_combine_backward", "ep", send, recv, Spec((cfg.hidden,), cfg.param_dtype))


def _token_dispatch_backward(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    send, recv = _splits(comm, cfg, mb, layer)
    comm.all_to_all("_token_dispatch_backward", "ep", recv, send, Spec((cfg.hidden,), cfg.param_dtype))


# --------------------------------------------------------------------------- #
# The model, the step
# --------------------------------------------------------------------------- #


def transformer_block_forward(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    pre_forward(comm, cfg, cfg.block_numel(layer))
    if cfg.is_moe(layer):
        _token_dispatch(comm, cfg, mb, layer)
        _token_combine(comm, cfg, mb, layer)


def transformer_block_backward(comm: Comm, cfg: FsdpConfig, mb: int, layer: int) -> None:
    if cfg.reshard_after_forward:
        pre_backward(comm, cfg, cfg.block_numel(layer))
    if cfg.is_moe(layer):
        _token_combine_backward(comm, cfg, mb, layer)
        _token_dispatch_backward(comm, cfg, mb, layer)
    post_backward(comm, cfg, cfg.block_numel(layer))


def forward_backward_step(comm: Comm, cfg: FsdpConfig, mb: int) -> None:
    """The root module is not resharded after forward: it gathers once, reduces last."""
    pre_forward(comm, cfg, cfg.root_numel())
    for layer in range(cfg.layers):
        transformer_block_forward(comm, cfg, mb, layer)
    for layer in reversed(range(cfg.layers)):
        transformer_block_backward(comm, cfg, mb, layer)
    post_backward(comm, cfg, cfg.root_numel())


def clip_grad_norm_(comm: Comm) -> None:
    """The total norm of DTensor gradients: non-expert ones over the shard group, experts' over EP."""
    comm.all_reduce("clip_grad_norm_", "shard", Spec((1,), "float32"))
    comm.all_reduce("clip_grad_norm_", "ep", Spec((1,), "float32"))
    comm.sync("clip_grad_norm_")  # grad_norm.item() for the log


def dist_mean(comm: Comm) -> None:
    comm.all_reduce("dist_mean", "default", Spec((1,), "float32"))
    comm.sync("dist_mean")  # loss.item() for the log


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


def train_step(comm: Comm, cfg: FsdpConfig, step: int) -> None:
    comm.stall_point("get_batch")
    for mb in range(cfg.microbatches):
        forward_backward_step(comm, cfg, mb)
    maybe_log_debug_metric(comm, "after_backward")
    maybe_log_debug_metric(comm, "before_grad_norm")
    clip_grad_norm_(comm)
    dist_mean(comm)
    maybe_log_debug_metric(comm, "after_step")
    if cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0:
        save_checkpoint(comm)


def train(comm: Comm, cfg: FsdpConfig) -> None:
    for step in range(cfg.steps):
        comm.begin_step(step)
        train_step(comm, cfg, step)
