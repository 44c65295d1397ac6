"""The op sequence one pipeline stage issues, and where a hang cuts it.

Every rank of a stage issues the same ops in the same order, so the sequence
is simulated once per stage. A fault then decides, per role, where a rank's
sequence stops and which of its last ops are still started or scheduled.

One training step of stage ``s`` (GPipe-like, consistent per-pair ordering):
  * every ``BARRIER_EVERY`` steps a default_pg barrier (an all_reduce of 1 float);
  * forward, per microbatch: recv from s-1, TP all_gather/reduce_scatter pairs,
    send to s+1;
  * backward, per microbatch: recv from s+1, TP pairs, send to s-1;
  * DP gradient all_reduce buckets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BARRIER_EVERY = 20
STEP_NS = 950_000_000
OP_NS = 4_000_000
T0_NS = 1_717_000_000_000_000_000
DP_BUCKETS = 2

SEQ = 4096
HIDDEN = 5120
DP_BUCKET_NUMEL = 41_943_040

# Duration of a completed op, by what it is (milliseconds).
DURATION_MS = {"tp": 0.42, "pp": 0.91, "dp": 36.5, "default": 0.05}


@dataclass(frozen=True)
class Op:
    """One op as every rank of a stage issues it (rank-independent fields)."""

    record_id: int
    kind: str  # group kind: default / dp / tp / pp
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str
    time_created_ns: int
    input_sizes: tuple
    dtype: str
    output_sizes: tuple
    is_p2p: bool
    thread: str  # "main" or "autograd"
    stack: str  # which call stack issued it
    tag: tuple  # (phase, microbatch, what, index) for locating fault points


@dataclass(frozen=True)
class Shape:
    """Workload shape of the simulated training loop."""

    pp: int
    tp: int
    microbatches: int = 4
    layers: int = 2  # TP all_gather/reduce_scatter pairs per microbatch and phase


def _step_plan(shape: Shape, stage: int, step: int) -> list[tuple]:
    """(kind, name, in_sizes, out_sizes, dtype, thread, stack, is_p2p, tag) per op."""
    act = ((SEQ, 1, HIDDEN),)
    full = ((SEQ * shape.tp, 1, HIDDEN),)
    last = shape.pp - 1
    plan: list[tuple] = []
    if step % BARRIER_EVERY == 0:
        plan.append(
            (
                "default",
                "nccl:all_reduce",
                ((1,),),
                ((1,),),
                "Float",
                "main",
                "barrier",
                False,
                ("barrier", 0, "ar", 0),
            )
        )
    for phase, prev, nxt, thread in (
        ("fwd", stage - 1, stage + 1, "main"),
        ("bwd", stage + 1, stage - 1, "autograd"),
    ):
        for mb in range(shape.microbatches):
            if 0 <= prev <= last:
                name = f"nccl:recv {stage}<-{prev}"
                plan.append(
                    (
                        "pp",
                        name,
                        act,
                        act,
                        "BFloat16",
                        thread,
                        f"{phase}_recv",
                        True,
                        (phase, mb, "recv", 0),
                    )
                )
            for j in range(2 * shape.layers):
                if j % 2 == 0:
                    name, ins, outs, stack = (
                        "nccl:_all_gather_base",
                        act,
                        full,
                        f"{phase}_ag",
                    )
                else:
                    name, ins, outs, stack = (
                        "nccl:_reduce_scatter_base",
                        full,
                        act,
                        f"{phase}_rs",
                    )
                plan.append(
                    (
                        "tp",
                        name,
                        ins,
                        outs,
                        "BFloat16",
                        thread,
                        stack,
                        False,
                        (phase, mb, "tp", j),
                    )
                )
            if 0 <= nxt <= last:
                name = f"nccl:send {stage}->{nxt}"
                plan.append(
                    (
                        "pp",
                        name,
                        act,
                        act,
                        "BFloat16",
                        thread,
                        f"{phase}_send",
                        True,
                        (phase, mb, "send", 0),
                    )
                )
    bucket = ((DP_BUCKET_NUMEL,),)
    for b in range(DP_BUCKETS):
        plan.append(
            (
                "dp",
                "nccl:all_reduce",
                bucket,
                bucket,
                "Float",
                "autograd",
                "dp_ar",
                False,
                ("dp", 0, "ar", b),
            )
        )
    return plan


def stage_ops(shape: Shape, stage: int, entries: int) -> tuple[list[Op], int]:
    """All ops of ``stage`` up to and including the last step, and where that step starts.

    The job is simulated from step 0 so counters (record ids, sequence ids) have
    realistic magnitudes; enough steps run that the ring buffer is full.
    """
    per_step = len(_step_plan(shape, stage, 1))
    steps = math.ceil(entries / per_step) + 2 + 300
    seq = {k: 0 for k in ("default", "dp", "tp", "pp")}
    p2p = dict(seq)
    op_ids = dict(seq)
    ops: list[Op] = []
    last_step_start = 0
    for step in range(steps):
        if step == steps - 1:
            last_step_start = len(ops)
        for pos, (
            kind,
            name,
            ins,
            outs,
            dtype,
            thread,
            stack,
            is_p2p,
            tag,
        ) in enumerate(_step_plan(shape, stage, step)):
            if is_p2p:
                p2p[kind] += 1
            else:
                seq[kind] += 1
            op_ids[kind] += 1
            ops.append(
                Op(
                    record_id=len(ops),
                    kind=kind,
                    collective_seq_id=seq[kind],
                    p2p_seq_id=p2p[kind],
                    op_id=op_ids[kind],
                    profiling_name=name,
                    time_created_ns=T0_NS + step * STEP_NS + pos * OP_NS,
                    input_sizes=ins,
                    dtype=dtype,
                    output_sizes=outs,
                    is_p2p=is_p2p,
                    thread=thread,
                    stack=stack,
                    tag=tag,
                )
            )
    return ops, last_step_start


@dataclass(frozen=True)
class HangPoint:
    """Where the culprit stops: before TP op ``tp_index`` of forward microbatch ``mb``."""

    culprit_coords: tuple[int, int, int]  # (stage, dp index, tp index)
    mb: int
    tp_index: int
    stalled: bool = False
    """Instead: every rank issues the step's first DP all_reduce and none completes it."""


def role_of(coords: tuple[int, int, int], hang: HangPoint | None) -> str:
    """How a rank at ``coords`` ends its trace under the fault."""
    if hang is None:
        return "healthy"
    if hang.stalled:
        return "stalled"
    stage, d, t = coords
    c_stage, c_d, c_t = hang.culprit_coords
    if (stage, d, t) == (c_stage, c_d, c_t):
        return "culprit"
    if d == c_d and stage == c_stage:
        return "tp_peer"
    if d == c_d:
        return "pp_victim"
    return "dp_victim"


def cut(
    ops: list[Op],
    last_step_start: int,
    role: str,
    stage: int,
    shape: Shape,
    hang: HangPoint | None,
) -> tuple[list[Op], list[str]]:
    """Truncate a stage's ops for ``role``; return the kept ops and their states."""

    def find(tag: tuple) -> int:
        for i in range(last_step_start, len(ops)):
            if ops[i].tag == tag:
                return i
        raise LookupError(tag)

    if role == "healthy" or hang is None:
        return ops, ["completed"] * len(ops)
    if role == "culprit":
        stop = find(("fwd", hang.mb, "tp", hang.tp_index))
        return ops[:stop], ["completed"] * stop
    if role == "tp_peer":
        block = find(("fwd", hang.mb, "tp", hang.tp_index))
        tail = ["started"]
    elif role == "pp_victim":
        c_stage = hang.culprit_coords[0]
        if stage < c_stage:  # upstream: blocks sending into the stuck stage, or waiting for its grads
            k = c_stage - stage
            tag = ("fwd", hang.mb + k, "send", 0) if hang.mb + k < shape.microbatches else ("bwd", 0, "recv", 0)
        else:  # downstream: waits for an activation that never comes
            tag = ("fwd", hang.mb, "recv", 0)
        block = find(tag)
        tail = ["started"]
    elif role == "dp_victim":
        block = find(("dp", 0, "ar", 0))
        tail = ["started"] + ["scheduled"] * (DP_BUCKETS - 1)
    elif role == "stalled":
        block = find(("dp", 0, "ar", 0))
        tail = ["started"]
    else:
        raise ValueError(role)
    end = block + len(tail)
    return ops[:end], ["completed"] * block + tail
