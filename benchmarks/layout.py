"""Megatron-style parallel layout: which global ranks share a TP, PP or DP group.

Rank order follows Megatron's default (tensor parallel fastest, then data
parallel, then pipeline stage), so a TP group is a run of consecutive ranks.
Group names are global strings, as torch assigns them: '0' is the default
group, then DP groups, TP groups and PP groups in creation order.
"""

from __future__ import annotations

from dataclasses import dataclass

TP_DESC = "TENSOR_MODEL_PARALLEL_GROUP"
PP_DESC = "PIPELINE_MODEL_PARALLEL_GROUP"
DP_DESC = "DATA_PARALLEL_GROUP"
DEFAULT_DESC = "default_pg"

# The group kinds every rank belongs to, in the order torch creates them.
KINDS = ("default", "dp", "tp", "pp")
DESCS = {"default": DEFAULT_DESC, "dp": DP_DESC, "tp": TP_DESC, "pp": PP_DESC}


@dataclass(frozen=True)
class Layout:
    """A world of ``tp * pp * dp`` ranks."""

    world: int
    tp: int
    pp: int
    dp: int

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(pipeline stage, data-parallel index, tensor-parallel index) of a rank."""
        stage, rest = divmod(rank, self.tp * self.dp)
        d, t = divmod(rest, self.tp)
        return stage, d, t

    def rank_of(self, stage: int, d: int, t: int) -> int:
        return stage * self.tp * self.dp + d * self.tp + t

    def members(self, kind: str, rank: int) -> list[int]:
        """Sorted global ranks of the group of ``kind`` that ``rank`` is in."""
        stage, d, t = self.coords(rank)
        if kind == "default":
            return list(range(self.world))
        if kind == "tp":
            return [self.rank_of(stage, d, x) for x in range(self.tp)]
        if kind == "dp":
            return [self.rank_of(stage, x, t) for x in range(self.dp)]
        if kind == "pp":
            return [self.rank_of(x, d, t) for x in range(self.pp)]
        raise ValueError(kind)

    def group_name(self, kind: str, rank: int) -> str:
        """Global group name (what torch puts in pg_config and process_group)."""
        stage, d, t = self.coords(rank)
        n_dp = self.pp * self.tp
        n_tp = self.pp * self.dp
        if kind == "default":
            return "0"
        if kind == "dp":
            return str(1 + stage * self.tp + t)
        if kind == "tp":
            return str(1 + n_dp + stage * self.dp + d)
        if kind == "pp":
            return str(1 + n_dp + n_tp + d * self.tp + t)
        raise ValueError(kind)


def choose_layout(world: int, tp: int = 8, pp: int = 4) -> Layout:
    """Shrink PP, then TP, until they divide the world size."""
    if world < 1:
        raise ValueError("world size must be positive")
    while world % (tp * pp):
        if pp > 1:
            pp //= 2
        elif tp > 1:
            tp //= 2
        else:  # pragma: no cover - tp = pp = 1 always divides
            break
    return Layout(world=world, tp=tp, pp=pp, dp=world // (tp * pp))
