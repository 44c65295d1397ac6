"""The fault families of the corpus: what each injects and how a diagnosis of it is graded."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    accepted: tuple[str, ...]  # failure classes a correct diagnosis may give
    kinds: tuple[str, ...]  # "gloo" (real torch runs), "nccl" (NCCL-shaped synthetic dumps)
    grading: str  # "exact_ranks" or "class_and_group"
    what: str
    shapes: tuple[str, ...] = ("megatron", "fsdp")  # program shapes it is drawn for (``shapes.py``)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("healthy", ("healthy",), ("gloo", "nccl"), "exact_ranks", "no fault; every step completes"),
        Family(
            "stuck_compute",
            ("missing_participant",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank sleeps (stuck on the CPU side) before one of its ops",
        ),
        Family(
            "skip_collective",
            ("desync",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank does not issue one collective and goes on",
        ),
        Family(
            "extra_collective",
            ("desync",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank issues one extra all_reduce of a [1] float debug metric from its own call site",
        ),
        Family(
            "op_mismatch",
            ("desync",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank calls broadcast where its peers all_reduce (or the other way round)",
        ),
        Family(
            "size_mismatch",
            ("size_mismatch",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank passes a zero-element or differently shaped tensor to an all_reduce",
        ),
        Family(
            "dtype_mismatch",
            ("dtype_mismatch",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank passes a same-width other dtype to an all_reduce (completes)",
        ),
        Family(
            "size_mismatch_branch",
            ("size_mismatch",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank passes a zero-element or differently shaped gradient bucket to start_grad_sync's "
            "all_reduce (fsdp: its gradients to foreach_reduce's reduce_scatter) from the neighbouring "
            "line of that function (another branch)",
        ),
        Family(
            "dtype_mismatch_branch",
            ("dtype_mismatch",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank passes its gradient bucket cast to a same-width other dtype to start_grad_sync's "
            "all_reduce (fsdp: foreach_reduce's reduce_scatter) from the neighbouring line of that "
            "function (completes)",
        ),
        Family(
            "alltoall_splits",
            ("size_mismatch",),
            ("gloo",),
            "class_and_group",
            "expert-parallel all_to_all_single with uneven splits; at the fault step one rank's output "
            "splits expect one row more than a peer sends",
        ),
        Family(
            "p2p_unposted",
            ("p2p_unmatched", "missing_participant"),
            ("gloo", "nccl"),
            "exact_ranks",
            "a pipeline send or recv is never posted",
            shapes=("megatron",),  # the fsdp shape has no pipeline
        ),
        Family(
            "crash_no_dump",
            ("missing_dump",),
            ("gloo", "nccl"),
            "exact_ranks",
            "a rank hangs or dies and writes no dump",
        ),
        Family(
            "two_culprits",
            ("missing_participant",),
            ("gloo", "nccl"),
            "exact_ranks",
            "two ranks, independently, get stuck before an op; both faults show",
        ),
    )
}

KINDS = ("gloo", "nccl")


def cases_of(kind: str) -> list[str]:
    """The families a kind of case can be made for."""
    return [name for name, f in FAMILIES.items() if kind in f.kinds]
