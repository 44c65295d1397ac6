"""The parallel layout of a job and the process groups every rank creates, in order.

Two program shapes (``Layout.shape``): ``megatron`` (below) and ``fsdp``
(sharded data parallel with expert parallelism, see the end of this docstring).

Rank order is Megatron's default (``tp-cp-ep-dp-pp`` with cp = 1): tensor
parallel fastest, then data parallel, pipeline stage outermost, so
``rank = stage * tp * dp + dp_index * tp + tp_index``.

Groups are created in the order of Megatron-LM's
``megatron/core/parallel_state.py::initialize_model_parallel``: data parallel,
model parallel (tp x pp), tensor parallel, then per pipeline chain its
pipeline group followed by its embedding and position-embedding groups, then
(for a mixture-of-experts model) the expert-parallel groups. Every rank calls
``new_group`` for every group, member or not, so torch's global group names
(``'0'`` for the default group, then ``'1'``, ``'2'``, ...) are the creation
index and identical on every rank.

The ``fsdp`` shape (torch FSDP2 / torchtitan): ``world = replicate * shard``
ranks, shard index fastest (``rank = replicate_index * shard + shard_index``).
Groups are created as a ``DeviceMesh`` of dims (replicate, shard) creates
them, dim by dim: the replicate groups (hybrid sharding only), the shard
groups (unless the job shards over the default group itself), then the
expert-parallel groups: consecutive ``ep`` ranks of each shard group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

DEFAULT_DESC = "default_pg"
DESCS = {
    "dp": "DATA_PARALLEL_GROUP",
    "mp": "MODEL_PARALLEL_GROUP",
    "tp": "TENSOR_MODEL_PARALLEL_GROUP",
    "pp": "PIPELINE_MODEL_PARALLEL_GROUP",
    "emb": "EMBEDDING_GROUP",
    "pos_emb": "POSITION_EMBEDDING_GROUP",
    "ep": "EXPERT_MODEL_PARALLEL_GROUP",
    "default": DEFAULT_DESC,
}
FSDP_DESCS = {
    "replicate": "FSDP_REPLICATE_GROUP",
    "shard": "FSDP_SHARD_GROUP",
    "ep": "EXPERT_PARALLEL_GROUP",
    "default": DEFAULT_DESC,
}
SHAPES = ("megatron", "fsdp")


@dataclass(frozen=True)
class Layout:
    """A world of ``tp * pp * dp`` ranks; ``ep`` > 1 adds expert-parallel groups (expert TP = 1).

    ``shape`` ``fsdp``: tp = pp = 1, the ``dp`` ranks are ``replicate`` replicas of
    ``dp // replicate`` shards (``shard``); ``ep`` divides ``shard``; with
    ``shard_on_world`` (``replicate`` 1 only) the job shards over the default group.
    """

    tp: int
    pp: int
    dp: int
    ep: int = 1
    shape: str = "megatron"
    replicate: int = 1
    shard_on_world: bool = False

    def __post_init__(self) -> None:
        if min(self.tp, self.pp, self.dp, self.ep, self.replicate) < 1 or self.shape not in SHAPES:
            raise ValueError(f"bad layout {self}")
        if (self.tp * self.dp) % self.ep:
            raise ValueError(f"ep={self.ep} must divide tp*dp={self.tp * self.dp}")
        if self.shape == "fsdp" and (
            self.tp != 1
            or self.pp != 1
            or self.dp % self.replicate
            or self.shard % self.ep
            or (self.shard_on_world and self.replicate != 1)
        ):
            raise ValueError(f"bad fsdp layout {self}")

    @property
    def shard(self) -> int:
        """Ranks per FSDP shard group (fsdp shape)."""
        return self.dp // self.replicate

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(pipeline stage, data-parallel index, tensor-parallel index) of a global rank."""
        stage, rest = divmod(rank, self.tp * self.dp)
        d, t = divmod(rest, self.tp)
        return stage, d, t

    def rank_of(self, stage: int, d: int, t: int) -> int:
        return stage * self.tp * self.dp + d * self.tp + t

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "world_size": self.world_size,
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "ep": self.ep,
        }
        if self.shape != "megatron":  # a Megatron layout's dict is what it always was
            out.update(shape=self.shape, replicate=self.replicate, shard=self.shard, shard_on_world=self.shard_on_world)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Layout:
        extra = {k: d[k] for k in ("shape", "replicate", "shard_on_world") if k in d}
        return cls(tp=d["tp"], pp=d["pp"], dp=d["dp"], ep=d["ep"], **extra)


@dataclass(frozen=True)
class Group:
    """One process group as torch names it."""

    name: str
    desc: str
    kind: str
    ranks: tuple[int, ...]

    def group_rank(self, rank: int) -> int:
        return self.ranks.index(rank)


class Topology:
    """Every process group of a layout, in creation order, and each rank's group of each kind."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        fsdp = layout.shape == "fsdp"
        made = _fsdp_groups(layout) if fsdp else _megatron_groups(layout)
        descs = FSDP_DESCS if fsdp else DESCS
        self.default = Group("0", DEFAULT_DESC, "default", tuple(range(layout.world_size)))
        self.groups: list[Group] = [self.default] + [
            Group(str(i + 1), descs[kind], kind, tuple(ranks)) for i, (kind, ranks) in enumerate(made)
        ]
        self.by_name = {g.name: g for g in self.groups}
        self._of: dict[tuple[str, int], Group] = {}
        for g in self.groups:
            for r in g.ranks:
                self._of.setdefault((g.kind, r), g)
        if fsdp and layout.shard_on_world:
            for r in range(layout.world_size):
                self._of[("shard", r)] = self.default

    def group(self, kind: str, rank: int) -> Group | None:
        """The group of ``kind`` that ``rank`` belongs to (None: it is in none, e.g. a middle stage's embedding)."""
        return self._of.get((kind, rank))

    def member_groups(self, rank: int) -> list[Group]:
        """The groups ``rank`` belongs to, in creation order (default first)."""
        return [g for g in self.groups if rank in g.ranks]

    @cached_property
    def stage_of(self) -> list[int]:
        return [self.layout.coords(r)[0] for r in range(self.layout.world_size)]

    def chain(self, rank: int) -> tuple[int, ...]:
        """The pipeline chain (one rank per stage) of ``rank``."""
        group = self.group("pp", rank)
        assert group is not None
        return group.ranks


def _megatron_groups(lay: Layout) -> list[tuple[str, list[int]]]:
    """(kind, ranks) of every group after the default one, in Megatron's creation order."""
    made: list[tuple[str, list[int]]] = []
    made += [("dp", [lay.rank_of(s, d, t) for d in range(lay.dp)]) for s in range(lay.pp) for t in range(lay.tp)]
    made += [("mp", sorted(lay.rank_of(s, d, t) for s in range(lay.pp) for t in range(lay.tp))) for d in range(lay.dp)]
    made += [("tp", [lay.rank_of(s, d, t) for t in range(lay.tp)]) for s in range(lay.pp) for d in range(lay.dp)]
    for d in range(lay.dp):
        for t in range(lay.tp):
            chain = [lay.rank_of(s, d, t) for s in range(lay.pp)]
            made.append(("pp", chain))
            made.append(("emb", [chain[0], chain[-1]] if len(chain) > 1 else [chain[0]]))
            made.append(("pos_emb", [chain[0]]))
    if lay.ep > 1:
        for s in range(lay.pp):
            stage_ranks = [lay.rank_of(s, d, t) for d in range(lay.dp) for t in range(lay.tp)]
            made += [("ep", stage_ranks[i : i + lay.ep]) for i in range(0, len(stage_ranks), lay.ep)]
    return made


def _fsdp_groups(lay: Layout) -> list[tuple[str, list[int]]]:
    """(kind, ranks) of every group after the default one, as a (replicate, shard) DeviceMesh creates them."""
    n = lay.shard
    made: list[tuple[str, list[int]]] = []
    if lay.replicate > 1:
        made += [("replicate", [i * n + s for i in range(lay.replicate)]) for s in range(n)]
    shards = [list(range(i * n, (i + 1) * n)) for i in range(lay.replicate)]
    if not lay.shard_on_world:
        made += [("shard", ranks) for ranks in shards]
    made += [("ep", ranks[j : j + lay.ep]) for ranks in shards for j in range(0, n, lay.ep)]
    return made
