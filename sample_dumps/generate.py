"""Generate real PyTorch Flight Recorder dumps of small hung (or healthy) jobs.

The parent process starts a launcher that imports torch once and forks
``world_size`` rank processes; each runs a tiny "training loop" over the gloo
backend with a Megatron-like layout: a default group plus tensor-parallel (TP),
pipeline-parallel (PP) and data-parallel (DP) groups. One fault is injected on purpose (a rank stuck in compute, a skipped
collective, a size mismatch, ...), then every rank writes the bytes returned by
``torch._C._distributed_c10d._dump_fr_trace()`` to ``<out>/rank_<global rank>``
and the parent writes ``<out>/scenario.json`` describing what was injected.

Nothing may hang forever: every wait is bounded, the stuck rank's "hang" is a
sleep that ends when the run is released, and the parent kills its children
after a deadline. All ranks dump at one coordinated moment, chosen by the parent
once every rank is either finished, blocked in a wait for longer than the block
timeout, or deliberately stuck; nobody exits before all dumps are written, so a
dying process can never disturb the records of its peers.

Run ``python sample_dumps/generate.py --all`` to regenerate every committed set,
or ``python sample_dumps/generate.py --scenario stuck_compute --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

SCRIPT_PATH = Path(__file__).resolve()
SAMPLE_DIR = SCRIPT_PATH.parent
REPO_ROOT = SAMPLE_DIR.parent

# Neutral paths that replace machine-specific ones in the recorded stack frames.
NEUTRAL_SCRIPT = "/workspace/train.py"
NEUTRAL_SITE_PACKAGES = "/usr/lib/python3/site-packages/"
NEUTRAL_STDLIB = "/usr/lib/python3/"
NEUTRAL_OTHER = "/workspace/"

FR_BUFFER_SIZE = "2000"
BLOCK_TIMEOUT_S = 1.5  # a wait longer than this marks the rank as blocked
#: A slow job must go on after each wait: a gloo wait that times out breaks its
#: connection, so there the waits are given far longer than the slow rank sleeps.
SLOW_JOB_TIMEOUT_S = 30.0
#: In a slow job, a snapshot is taken once the slow rank has slept this long (its peers wait by then).
SLOW_SETTLE_S = 1.2
POLL_S = 0.05

SCENARIOS: dict[str, str] = {
    "healthy": "no fault; every step completes",
    "stuck_compute": "culprit sleeps in compute before a TP all_reduce",
    "skip_collective": "culprit skips a DP all_reduce and moves on",
    "extra_collective": "culprit issues one extra TP all_reduce",
    "size_mismatch": "culprit passes a zero-element tensor to a TP all_reduce",
    "dtype_mismatch": "culprit passes int32 where peers pass float32",
    "op_mismatch": "culprit calls broadcast where peers call all_reduce",
    "p2p_unposted": "a pipeline stage never posts its recv for activations",
    "missing_dump": "culprit is stuck before a DP all_reduce and never dumps",
    "two_culprits": "two ranks in different TP groups are stuck in compute",
    "slow_compute": "culprit is slow, not stuck: it sleeps before the TP all_reduce of every step from the fault on",
}

EXPECTED_CLASS: dict[str, str | None] = {
    "healthy": "healthy",
    "stuck_compute": "missing_participant",
    "skip_collective": "desync",
    "extra_collective": "desync",
    "size_mismatch": "size_mismatch",
    "dtype_mismatch": "dtype_mismatch",
    "op_mismatch": "desync",
    "p2p_unposted": "missing_participant",
    "missing_dump": "missing_dump",
    "two_culprits": "missing_participant",
    "slow_compute": "missing_participant",
}

# Every committed set: directory name -> generate() keyword arguments.
ALL_SETS: dict[str, dict[str, Any]] = {
    "healthy": {"scenario": "healthy"},
    "stuck_compute": {"scenario": "stuck_compute", "culprit": 5},
    "skip_collective": {"scenario": "skip_collective", "culprit": 3},
    "extra_collective": {"scenario": "extra_collective", "culprit": 6},
    "size_mismatch": {"scenario": "size_mismatch", "culprit": 2},
    "dtype_mismatch": {"scenario": "dtype_mismatch", "culprit": 7},
    "op_mismatch": {"scenario": "op_mismatch", "culprit": 1},
    "p2p_unposted": {"scenario": "p2p_unposted", "culprit": 6},
    "missing_dump": {"scenario": "missing_dump", "culprit": 4},
    "two_culprits": {"scenario": "two_culprits", "culprit": 5, "seed": 1},
    "skip_collective_pgconfig": {
        "scenario": "skip_collective",
        "culprit": 3,
        "fill_pg_config": True,
    },
    "large_32_stuck": {"scenario": "stuck_compute", "world_size": 32, "culprit": 19},
    # Two snapshots of one job each (the earlier in <name>.earlier): dead or slow?
    "stuck_twice": {"scenario": "stuck_compute", "culprit": 5, "earlier": True},
    "slow_rank": {"scenario": "slow_compute", "culprit": 5, "steps": 8, "earlier": True},
    # A ring buffer of 2 entries: some ranks' buffers start after the divergence.
    "short_buffer": {"scenario": "stuck_compute", "culprit": 5, "buffer_size": 2},
    # as NVIDIA's trace collector writes them: only active entries, no stacks, health checks
    "collector_json_health": {
        "scenario": "stuck_compute",
        "culprit": 5,
        "collector": "json",
        "health_failed": {5: ["gpu"], 2: ["nic"]},
    },
    "collector_pickle_health": {
        "scenario": "stuck_compute",
        "culprit": 5,
        "collector": "pickle",
        "health_failed": {5: ["nic"], 3: ["gpu"]},
    },
}

#: The culprit of ``slow_compute`` sleeps this long per step: longer than the block timeout,
#: so its peers are seen waiting on it, then it goes on.
SLOW_S = 2.5
#: Between the two snapshots (at least one slow step, so a slow job moves in between).
SNAPSHOT_INTERVAL_S = 3.0


# --------------------------------------------------------------------------- #
# Layout
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Layout:
    """Megatron-style rank layout: TP fastest, then DP, then PP."""

    world_size: int
    tp: int
    pp: int
    dp: int

    def coords(self, rank: int) -> tuple[int, int, int]:
        """Return (pp_stage, dp_index, tp_index) of a global rank."""
        pp_stage, rest = divmod(rank, self.dp * self.tp)
        dp_index, tp_index = divmod(rest, self.tp)
        return pp_stage, dp_index, tp_index

    def rank_of(self, pp_stage: int, dp_index: int, tp_index: int) -> int:
        return pp_stage * self.dp * self.tp + dp_index * self.tp + tp_index

    def tp_groups(self) -> list[list[int]]:
        return [[self.rank_of(p, d, t) for t in range(self.tp)] for p in range(self.pp) for d in range(self.dp)]

    def pp_groups(self) -> list[list[int]]:
        return [[self.rank_of(p, d, t) for p in range(self.pp)] for d in range(self.dp) for t in range(self.tp)]

    def dp_groups(self) -> list[list[int]]:
        return [[self.rank_of(p, d, t) for d in range(self.dp)] for p in range(self.pp) for t in range(self.tp)]

    def group_of(self, groups: list[list[int]], rank: int) -> list[int]:
        return next(g for g in groups if rank in g)


def default_layout(world_size: int, tp: int | None = None, pp: int | None = None) -> Layout:
    """Pick TP/PP/DP sizes: TP 4 from 32 ranks up, else 2; PP 2 when it divides."""
    if tp is None:
        tp = 4 if world_size >= 32 and world_size % 4 == 0 else 2
        if world_size % tp:
            tp = 1
    if world_size % tp:
        raise ValueError(f"tp={tp} does not divide world_size={world_size}")
    if pp is None:
        pp = 2 if (world_size // tp) % 2 == 0 else 1
    if (world_size // tp) % pp:
        raise ValueError(f"tp*pp={tp * pp} does not divide world_size={world_size}")
    return Layout(world_size, tp, pp, world_size // (tp * pp))


# --------------------------------------------------------------------------- #
# Fault plan (decided by the parent, executed by the children)
# --------------------------------------------------------------------------- #


def _choose_culprits(scenario: str, layout: Layout, culprit: int | None, seed: int) -> list[int]:
    """Deterministic, non-zero culprit(s) valid for the scenario."""
    if scenario == "healthy":
        return []
    rng = random.Random(seed)
    valid = list(range(1, layout.world_size)) or [0]
    if scenario == "p2p_unposted":
        if layout.pp < 2:
            raise ValueError("p2p_unposted needs a pipeline (pp >= 2)")
        valid = [r for r in valid if layout.coords(r)[0] > 0]
    if culprit is None:
        culprit = rng.choice(valid)
    elif not 0 <= culprit < layout.world_size:
        raise ValueError(f"culprit {culprit} outside world of {layout.world_size}")
    elif culprit not in valid and scenario == "p2p_unposted":
        raise ValueError("p2p_unposted culprit must be on a pipeline stage > 0")
    if scenario != "two_culprits":
        return [culprit]
    # The second rank sits in another TP group of the same pipeline stage: a TP
    # group on a later stage whose stage-0 feeder is stuck never reaches its
    # collective (its ranks wait in an unrecorded recv), hiding the second fault.
    own_tp = layout.group_of(layout.tp_groups(), culprit)
    stage = layout.coords(culprit)[0]
    others = [r for r in range(1, layout.world_size) if r not in own_tp and layout.coords(r)[0] == stage]
    if not others:
        raise ValueError("two_culprits needs two TP groups on one pipeline stage (dp >= 2)")
    return [culprit, rng.choice(others)]


def _fault_step(steps: int) -> int:
    """Inject late enough that a few steps complete first."""
    return max(0, min(steps - 1, steps // 2))


def _describe(scenario: str, culprits: list[int], layout: Layout, step: int) -> tuple[str, str | None, str | None]:
    """Plain sentence of the fault, plus the group desc and the op it targets."""
    c = culprits[0] if culprits else None
    dp = "data_parallel" if layout.dp > 1 else "tensor_parallel"
    if scenario == "skip_collective" and layout.dp > 1:
        skip = (
            f"Rank {c} skips the second gradient-bucket all_reduce in sync_gradients ({dp}) at step {step} "
            "and goes on to the default_pg all_reduce in clip_grad_norm."
        )
    else:
        skip = (
            f"Rank {c} skips the tensor_parallel gradient all_reduce in backward_tp_layer at step {step} and goes on."
        )
    sentences = {
        "healthy": "No fault injected; every step completes.",
        "stuck_compute": (
            f"Rank {c} sleeps (stuck in compute) in forward_tp_layer at step {step}, "
            "before the tensor_parallel all_reduce; its TP peers issue it and wait."
        ),
        "skip_collective": skip,
        "extra_collective": (
            f"Rank {c} issues one extra tensor_parallel all_reduce (log_tp_debug_stats) "
            f"at the end of its backward pass at step {step}; its peers do not."
        ),
        "size_mismatch": (
            f"Rank {c} passes a zero-element tensor to the tensor_parallel all_reduce "
            f"in forward_tp_layer at step {step}; its peers pass [32, 64]."
        ),
        "dtype_mismatch": (
            f"Rank {c} passes an int32 tensor to the tensor_parallel all_reduce in forward_tp_layer "
            f"at step {step} where its peers pass float32 (same width, so gloo completes it and "
            "the job does not hang)."
        ),
        "op_mismatch": (
            f"Rank {c} calls broadcast where its tensor_parallel peers call all_reduce "
            f"in forward_tp_layer at step {step} (same tensor shape)."
        ),
        "p2p_unposted": (
            f"Rank {c} (pipeline stage > 0) never posts its recv for the activations that the "
            f"previous pipeline stage sends at step {step} (pipeline_parallel send/recv, which "
            "gloo does not record)."
        ),
        "missing_dump": (
            f"Rank {c} sleeps (stuck in compute) in {'sync_gradients' if layout.dp > 1 else 'forward_tp_layer'} "
            f"at step {step}, before the {dp} all_reduce, and then exits without writing its dump."
        ),
        "two_culprits": (
            f"Ranks {culprits} sleep (stuck in compute) in forward_tp_layer at step {step}, "
            "before the tensor_parallel all_reduce of their two TP groups."
        ),
        "slow_compute": (
            f"Rank {c} is slow, not stuck: from step {step} on it sleeps {SLOW_S} s in forward_tp_layer "
            "before the tensor_parallel all_reduce of every step, and its peers wait for it each time."
        ),
    }
    group_and_op: dict[str, tuple[str | None, str | None]] = {
        "healthy": (None, None),
        "skip_collective": (dp, "all_reduce"),
        "p2p_unposted": ("pipeline_parallel", "send/recv"),
        "missing_dump": (dp, "all_reduce"),
    }
    group, op = group_and_op.get(scenario, ("tensor_parallel", "all_reduce"))
    return sentences[scenario], group, op


# --------------------------------------------------------------------------- #
# Child side: the training-like loop
# --------------------------------------------------------------------------- #


@dataclass
class RankContext:
    """Everything one rank needs during its run."""

    rank: int
    layout: Layout
    plan: dict[str, Any]
    state_dir: Path
    out_dir: Path
    deadline: float
    groups: dict[str, Any] = field(default_factory=dict)
    members: dict[str, list[int]] = field(default_factory=dict)
    step: int = 0
    waiting_on: str = ""  # what the current wait is for; written beside a "blocked" state

    @property
    def block_timeout_s(self) -> float:
        return float(self.plan.get("block_timeout_s", BLOCK_TIMEOUT_S))

    @property
    def is_culprit(self) -> bool:
        return self.rank in self.plan["culprits"]

    def fault(self, point: str) -> bool:
        """True when this rank must misbehave at ``point`` in the current step."""
        return self.is_culprit and self.step == self.plan["fault_step"] and self.plan["point"] == point

    def slow_now(self, point: str) -> bool:
        """True when this rank is the slow one and is at ``point`` in a step from the fault on."""
        plan = self.plan
        return (
            self.is_culprit
            and plan["scenario"] == "slow_compute"
            and self.step >= plan["fault_step"]
            and plan["point"] == point
        )

    def log(self, message: str) -> None:
        elapsed = time.time() - self.plan["started"]
        print(f"[{elapsed:6.2f}s rank {self.rank}] {message}", flush=True)

    def set_state(self, state: str) -> None:
        self.log(state)
        if state in ("blocked", "stuck", "dead") and self.waiting_on:
            detail = self.state_dir / f".detail_{self.rank}.tmp"
            detail.write_text(self.waiting_on)
            os.replace(detail, self.state_dir / f"detail_{self.rank}")
        tmp = self.state_dir / f".state_{self.rank}.tmp"
        tmp.write_text(state)
        os.replace(tmp, self.state_dir / f"state_{self.rank}")

    def released(self) -> bool:
        return (self.state_dir / "release").exists() or time.time() > self.deadline


def _park(ctx: RankContext) -> None:
    """Block the main thread until the parent releases the run (bounded)."""
    while not ctx.released():
        time.sleep(POLL_S)
    time.sleep(5.0)  # the dump thread normally exits the process first
    os._exit(3)


def wait_for(ctx: RankContext, work: Any) -> None:
    """Wait like a training loop would, but never forever.

    A wait that exceeds the block timeout marks this rank blocked; it keeps
    waiting (so a slow peer can still complete the op) until released.
    """
    try:
        work.wait(timeout=timedelta(seconds=ctx.block_timeout_s))
        return
    except RuntimeError as exc:
        ctx.log(f"wait raised: {str(exc).splitlines()[0][:200]}")
        ctx.set_state("blocked")
    while not work.is_completed():
        if ctx.released():
            _park(ctx)
        time.sleep(POLL_S)
    try:
        work.wait(timeout=timedelta(seconds=ctx.block_timeout_s))
    except RuntimeError:
        _park(ctx)
    ctx.set_state("running")


def stuck_in_compute(ctx: RankContext) -> None:
    """The injected hang: a sleep that only ends when the run is released."""
    ctx.set_state("stuck")
    _park(ctx)


def broadcast_batch(ctx: RankContext) -> Any:
    import torch
    import torch.distributed as dist

    tokens = torch.arange(4 * 128, dtype=torch.int64).reshape(4, 128)
    src = ctx.members["tp"][0]
    wait_for(ctx, dist.broadcast(tokens, src=src, group=ctx.groups["tp"], async_op=True))
    return tokens


def forward_tp_layer(ctx: RankContext, hidden: Any) -> Any:
    import torch
    import torch.distributed as dist

    tp = ctx.groups["tp"]
    shard = torch.ones(256, dtype=torch.bfloat16)
    gathered = torch.empty(256 * ctx.layout.tp, dtype=torch.bfloat16)
    wait_for(ctx, dist.all_gather_into_tensor(gathered, shard, group=tp, async_op=True))

    partial = hidden.clone()
    if ctx.slow_now("tp_forward_all_reduce"):
        ctx.set_state("slow")
        time.sleep(ctx.plan["slow_s"])
        ctx.set_state("running")
    if ctx.fault("tp_forward_all_reduce"):
        scenario = ctx.plan["scenario"]
        if scenario in ("stuck_compute", "two_culprits", "missing_dump"):
            stuck_in_compute(ctx)
        elif scenario == "size_mismatch":
            partial = torch.empty(0, dtype=torch.float32)
        elif scenario == "dtype_mismatch":
            partial = torch.ones(32, 64, dtype=torch.int32)
        elif scenario == "op_mismatch":
            src = ctx.members["tp"][0]
            wait_for(ctx, dist.broadcast(partial, src=src, group=tp, async_op=True))
            return hidden
    wait_for(ctx, dist.all_reduce(partial, group=tp, async_op=True))
    return hidden


def backward_tp_layer(ctx: RankContext) -> Any:
    """Reduce the sequence-parallel gradient shards across the TP group.

    Written as an all_reduce of the full buffer: gloo records
    reduce_scatter_tensor as exactly this all_reduce anyway, and its gloo work
    ignores wait(timeout=...), which would let a hung rank block forever.
    """
    import torch
    import torch.distributed as dist

    grads = torch.ones(512 * ctx.layout.tp, dtype=torch.float32)
    if not ctx.fault("tp_backward_all_reduce"):
        wait_for(ctx, dist.all_reduce(grads, group=ctx.groups["tp"], async_op=True))
    return grads[:512]


def log_tp_debug_stats(ctx: RankContext) -> None:
    import torch
    import torch.distributed as dist

    stats = torch.zeros(3, dtype=torch.float32)
    wait_for(ctx, dist.all_reduce(stats, group=ctx.groups["tp"], async_op=True))


def pipeline_send_activations(ctx: RankContext, activations: Any, dst: int) -> None:
    import torch.distributed as dist

    wait_for(ctx, dist.isend(activations, dst=dst, group=ctx.groups["pp"]))


def pipeline_recv_activations(ctx: RankContext, src: int) -> Any:
    import torch
    import torch.distributed as dist

    buf = torch.empty(32, 64, dtype=torch.float32)
    if ctx.fault("recv_activations"):
        return buf  # the injected bug: the matching recv is never posted
    wait_for(ctx, dist.irecv(buf, src=src, group=ctx.groups["pp"]))
    return buf


def pipeline_send_grads(ctx: RankContext, grads: Any, dst: int) -> None:
    import torch.distributed as dist

    wait_for(ctx, dist.isend(grads, dst=dst, group=ctx.groups["pp"]))


def pipeline_recv_grads(ctx: RankContext, src: int) -> Any:
    import torch
    import torch.distributed as dist

    buf = torch.empty(32, 64, dtype=torch.float32)
    wait_for(ctx, dist.irecv(buf, src=src, group=ctx.groups["pp"]))
    return buf


def forward_pipeline_stage(ctx: RankContext) -> Any:
    import torch

    pp_ranks = ctx.members["pp"]
    stage = pp_ranks.index(ctx.rank)
    broadcast_batch(ctx)
    if stage > 0:
        hidden = pipeline_recv_activations(ctx, pp_ranks[stage - 1])
    else:
        hidden = torch.randn(32, 64)
    hidden = forward_tp_layer(ctx, hidden)
    if stage < len(pp_ranks) - 1:
        pipeline_send_activations(ctx, hidden.float().reshape(32, 64), pp_ranks[stage + 1])
    return hidden


def backward_pipeline_stage(ctx: RankContext) -> None:
    import torch

    pp_ranks = ctx.members["pp"]
    stage = pp_ranks.index(ctx.rank)
    if stage < len(pp_ranks) - 1:
        pipeline_recv_grads(ctx, pp_ranks[stage + 1])
    backward_tp_layer(ctx)
    if stage > 0:
        pipeline_send_grads(ctx, torch.ones(32, 64), pp_ranks[stage - 1])
    if ctx.fault("after_backward"):
        log_tp_debug_stats(ctx)


def sync_gradients(ctx: RankContext) -> None:
    import torch
    import torch.distributed as dist

    dp = ctx.groups["dp"]
    bucket0 = torch.ones(4096, dtype=torch.float32)
    bucket1 = torch.ones(1024, dtype=torch.bfloat16)
    if ctx.fault("dp_bucket0"):
        stuck_in_compute(ctx)
    wait_for(ctx, dist.all_reduce(bucket0, group=dp, async_op=True))
    if not ctx.fault("dp_bucket1"):
        wait_for(ctx, dist.all_reduce(bucket1, group=dp, async_op=True))


def clip_grad_norm(ctx: RankContext) -> None:
    import torch
    import torch.distributed as dist

    norm = torch.tensor([1.0])
    wait_for(ctx, dist.all_reduce(norm, async_op=True))


def checkpoint_barrier(ctx: RankContext) -> None:
    import torch.distributed as dist

    wait_for(ctx, dist.barrier(async_op=True))


def train_step(ctx: RankContext) -> None:
    forward_pipeline_stage(ctx)
    backward_pipeline_stage(ctx)
    sync_gradients(ctx)
    clip_grad_norm(ctx)
    if ctx.step % 2 == 1:
        checkpoint_barrier(ctx)


def build_parallel_groups(ctx: RankContext) -> None:
    """Every rank creates every group, in the same order (c10d requires it)."""
    import torch.distributed as dist

    layout = ctx.layout
    for kind, desc, groups in (
        ("tp", "tensor_parallel", layout.tp_groups()),
        ("pp", "pipeline_parallel", layout.pp_groups()),
        ("dp", "data_parallel", layout.dp_groups()),
    ):
        for ranks in groups:
            pg = dist.new_group(ranks, group_desc=desc)
            if ctx.rank in ranks:
                ctx.groups[kind] = pg
                ctx.members[kind] = ranks


def _install_named_gloo(world_size: int) -> None:
    """Make gloo record group name and ranks in the Flight Recorder pg_config.

    Stock c10d builds ProcessGroupGloo from (store, rank, size, timeout) and only
    then sets options.group_name / global_ranks_in_group, so the recorder sees an
    empty name and ``[]``. Building it from an Options object that already holds
    both (the constructor overload that takes options) fills pg_config.
    """
    import inspect

    import torch.distributed.distributed_c10d as c10d
    from torch._C._distributed_c10d import ProcessGroupGloo

    pending: dict[str, Any] = {}
    original_helper = c10d._new_process_group_helper
    signature = inspect.signature(original_helper)

    def helper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        ranks = list(bound.arguments["global_ranks_in_group"])
        pending["ranks"] = ranks or list(range(world_size))
        pending["name"] = bound.arguments["group_name"]
        return original_helper(*args, **kwargs)

    class NamedProcessGroupGloo(ProcessGroupGloo):
        def __init__(self, store: Any, rank: int, size: int, timeout: timedelta = timedelta(minutes=30)) -> None:
            options = ProcessGroupGloo._Options()
            options._timeout = timeout
            options._devices = [ProcessGroupGloo.create_default_device()]
            options.global_ranks_in_group = pending["ranks"]
            options.group_name = pending["name"]
            super().__init__(store, rank, size, options)

    c10d._new_process_group_helper = helper
    c10d.ProcessGroupGloo = NamedProcessGroupGloo


def _path_rewriter(neutral_files: dict[str, str] | None = None) -> Any:
    """Map this machine's paths in stack frames to neutral ones.

    ``neutral_files`` maps more absolute script paths to the neutral name each
    one gets (the generator script itself always becomes ``NEUTRAL_SCRIPT``).
    """
    stdlib = sysconfig.get_paths()["stdlib"].rstrip("/") + "/"
    scripts = {str(SCRIPT_PATH): NEUTRAL_SCRIPT}
    scripts.update({str(Path(k).resolve()): v for k, v in (neutral_files or {}).items()})
    prefixes = [
        (str(REPO_ROOT) + "/", NEUTRAL_OTHER),
        (sys.prefix.rstrip("/") + "/", NEUTRAL_OTHER),
        (str(Path.home()).rstrip("/") + "/", NEUTRAL_OTHER),
    ]

    def rewrite(filename: str) -> str:
        if not filename.startswith("/"):
            return filename  # e.g. "<frozen runpy>"
        resolved = str(Path(filename).resolve())
        if resolved in scripts:
            return scripts[resolved]
        if "/site-packages/" in filename:
            return NEUTRAL_SITE_PACKAGES + filename.split("/site-packages/", 1)[1]
        if "/dist-packages/" in filename:
            return NEUTRAL_SITE_PACKAGES + filename.split("/dist-packages/", 1)[1]
        if filename.startswith(stdlib):
            return NEUTRAL_STDLIB + filename[len(stdlib) :]
        for prefix, neutral in prefixes:
            if filename.startswith(prefix):
                return neutral + filename[len(prefix) :]
        return NEUTRAL_OTHER + Path(filename).name

    return rewrite


def _scrub_dump(raw: bytes, neutral_files: dict[str, str] | None = None) -> tuple[bytes, dict[str, Any]]:
    """Rewrite frame paths in this rank's own fresh dump, keeping its structure."""
    protocol = raw[1] if raw[:1] == b"\x80" else 2
    dump = pickle.loads(raw)  # our own bytes, produced a moment ago in this process
    rewrite = _path_rewriter(neutral_files)
    for entry in dump.get("entries", []):
        for frame in entry.get("frames", []) or []:
            frame["filename"] = rewrite(frame["filename"])
    return pickle.dumps(dump, protocol=protocol), dump


def _summarize(dump: dict[str, Any]) -> dict[str, Any]:
    """Small per-rank summary the parent puts into scenario.json ("observed")."""
    last: dict[str, int] = {}
    pending = []
    for e in dump.get("entries", []):
        name, desc = e["process_group"]
        key = f"{desc}:{name}"
        last[key] = max(last.get(key, 0), e["collective_seq_id"])
        if not e["retired"]:
            pending.append(
                f"{desc} pg={name} seq={e['collective_seq_id']} {e['profiling_name']} "
                f"in={e['input_sizes']} {e['input_dtypes']}"
            )
    return {"entries": len(dump.get("entries", [])), "last_seq": last, "pending": pending}


# NVIDIA's trace collector (nvidia-resiliency-ext, attribution/trace_analyzer/
# trace_collector.py, TorchFRTraceCollector.collect) dumps with these arguments, adds the
# node health checks under this key and writes ``_dump_<rank>`` (pickle.dump of the dict)
# or ``_dump_<rank>.json`` (json.dump, indent=4). Its outputs are the log lines the checks
# print (shared_utils/health_check.py); a CPU machine has no GPU or NIC to check, so the
# status is injected and the output is the line that check prints for it.
COLLECTOR_FORMATS = ("pickle", "json")
HEALTH_KEY = "health_check_results"


def collector_health(rank: int, failed: list[str], gpus_per_node: int = 8) -> dict[str, dict[str, str]]:
    """``health_check_results`` as the collector builds it; ``failed`` names devices ("gpu", "nic")."""
    local = rank % gpus_per_node
    outputs = {
        "gpu": f"GPU {local}: Requires a reset to recover. Terminate GPU processes and reset the GPU.\n",
        "nic": f"GPU {local} NIC/IB mlx5_{local} link down counter has been incremented: 0 -> 1 \n",
    }
    return {
        device: {"status": "Failed", "output": outputs[device]}
        if device in failed
        else {"status": "Healthy", "output": ""}
        for device in ("gpu", "nic")
    }


def collector_file_name(rank: int, fmt: str) -> str:
    return f"_dump_{rank}.json" if fmt == "json" else f"_dump_{rank}"


def collector_bytes(dump: dict[str, Any], health: dict[str, dict[str, str]], fmt: str) -> bytes:
    """The file the collector writes for an unpickled dump: the key added, then pickle or JSON."""
    dumped = dict(dump)
    dumped[HEALTH_KEY] = health
    if fmt == "json":
        return json.dumps(dumped, indent=4).encode()
    return pickle.dumps(dumped)  # pickle.dump(dumped_dict, f): the interpreter's default protocol


def _collector_dump(plan: dict[str, Any], rank: int) -> tuple[bytes, dict[str, Any]]:
    import torch

    raw = torch._C._distributed_c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=False, onlyActive=True)
    dump = pickle.loads(raw)  # our own bytes, produced a moment ago in this process
    health = collector_health(rank, plan.get("health", {}).get(str(rank), []))
    return collector_bytes(dump, health, plan["collector"]), dump


def dump_file_name(plan: dict[str, Any], rank: int) -> str:
    """``rank_<r>`` (pickle) or ``rank_<r>.json``; the prefix can be set by ``plan['file_prefix']``.
    With ``plan['collector']``, the collector's ``_dump_<r>`` or ``_dump_<r>.json``."""
    if plan.get("collector"):
        return collector_file_name(rank, plan["collector"])
    suffix = ".json" if plan.get("dump_format", "pickle") == "json" else ""
    return f"{plan.get('file_prefix', 'rank_')}{rank}{suffix}"


def _take_dump(plan: dict[str, Any], rank: int) -> tuple[bytes, dict[str, Any]]:
    """This rank's Flight Recorder dump as written to disk, and its decoded content.

    ``plan['dump_format']`` picks torch's pickle (frame paths rewritten) or JSON
    writer (which writes no frames); ``plan['only_active']`` passes
    ``onlyActive=True``, which leaves out entries whose completion was discovered.
    ``plan['collector']`` ("pickle" or "json") dumps as NVIDIA's trace collector does,
    with ``plan['health']`` (rank -> failed devices) as the node health checks.
    """
    if plan.get("collector"):
        return _collector_dump(plan, rank)
    import torch

    kwargs = {"onlyActive": True} if plan.get("only_active") else {}
    if plan.get("dump_format", "pickle") == "json":
        raw = torch._C._distributed_c10d._dump_fr_trace_json(**kwargs)
        return raw, json.loads(raw)
    raw = torch._C._distributed_c10d._dump_fr_trace(**kwargs)
    return _scrub_dump(raw, plan.get("neutral_files"))


def _dump_thread(ctx: RankContext, skip_dump: bool) -> None:
    """Wait for the parent's signal, write the dump (once per snapshot), wait for release, exit."""
    for k, out_dir in enumerate(snapshot_dirs(ctx.plan)):
        while not (ctx.state_dir / f"dump_now_{k}").exists():
            if time.time() > ctx.deadline:
                os._exit(4)
            time.sleep(POLL_S)
        if skip_dump:
            continue
        t0 = time.time()
        data, dump = _take_dump(ctx.plan, ctx.rank)
        ctx.log(f"dump {k} in {time.time() - t0:.2f}s")
        summary = ctx.state_dir / f"summary_{k}_{ctx.rank}.json"
        extra = getattr(ctx, "extra_summary", None)  # a rank body may add its own facts
        summary.write_text(json.dumps({**_summarize(dump), **(extra() if extra else {})}))
        name = dump_file_name(ctx.plan, ctx.rank)
        tmp = out_dir / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, out_dir / name)
    while not ctx.released():
        time.sleep(POLL_S)
    sys.stdout.flush()
    os._exit(1 if skip_dump else 0)


def snapshot_dirs(plan: dict[str, Any]) -> list[Path]:
    """The folders the ranks dump into, in order: ``plan['dump_dirs']``, or just ``plan['out_dir']``."""
    return [Path(d) for d in plan.get("dump_dirs") or [plan["out_dir"]]]


def _warm_up_symbolizer() -> None:
    """Pay the one-time cost of stack symbolization before forking.

    The first Flight Recorder dump with stack traces spends seconds setting up
    the symbolizer; done once here, every forked rank inherits it.
    """
    try:
        from torch._C._profiler import gather_traceback, symbolize_tracebacks

        symbolize_tracebacks([gather_traceback(True, True, False)])
    except (ImportError, RuntimeError):
        pass


def launch_ranks(plan_path: str, run_rank_fn: Any = None) -> None:
    """Import torch once, then fork one process per rank.

    Importing torch costs about two CPU seconds; forking after the import (and
    before any thread, gloo context or OpenMP pool exists) saves that per rank,
    which keeps an 8-rank scenario fast on a two-core machine. ``run_rank_fn``
    (default ``run_rank``) is the body of one rank: ``fn(plan, rank)``.
    """
    import torch.distributed  # noqa: F401

    plan = json.loads(Path(plan_path).read_text())
    # Python frames only: a C++ symbolizer started here would be one helper process
    # whose pipes every forked rank shares (their dumps then hang reading it).
    _warm_up_symbolizer()
    body = run_rank_fn or run_rank
    pids = []
    for rank in range(plan["layout"]["world_size"]):
        pid = os.fork()
        if pid == 0:
            try:
                body(plan, rank)
            except BaseException:  # noqa: BLE001  (report, then leave the forked child)
                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(5)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)


def run_rank(plan: dict[str, Any], rank: int) -> None:
    """Body of one rank's process."""
    layout = Layout(**plan["layout"])
    ctx = RankContext(
        rank=rank,
        layout=layout,
        plan=plan,
        state_dir=Path(plan["state_dir"]),
        out_dir=Path(plan["out_dir"]),
        deadline=plan["deadline"],
    )
    skip_dump = plan["scenario"] == "missing_dump" and ctx.is_culprit
    threading.Thread(target=_dump_thread, args=(ctx, skip_dump), daemon=True).start()

    import torch
    import torch.distributed as dist

    torch.manual_seed(plan["seed"] * 1000 + ctx.rank)
    if plan["fill_pg_config"]:
        _install_named_gloo(layout.world_size)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{plan['port']}",
        rank=ctx.rank,
        world_size=layout.world_size,
    )
    ctx.log("initialized")
    build_parallel_groups(ctx)
    ctx.set_state("running")
    for step in range(plan["steps"]):
        ctx.step = step
        ctx.log(f"step {step}")
        train_step(ctx)
    ctx.set_state("done")
    _park(ctx)


# --------------------------------------------------------------------------- #
# Parent side
# --------------------------------------------------------------------------- #


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TORCH_FR_BUFFER_SIZE", FR_BUFFER_SIZE)
    env.setdefault("OMP_NUM_THREADS", "1")
    if "GLOO_SOCKET_IFNAME" not in env and Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _fault_point(scenario: str, layout: Layout) -> str | None:
    return {
        "healthy": None,
        "stuck_compute": "tp_forward_all_reduce",
        "skip_collective": "dp_bucket1" if layout.dp > 1 else "tp_backward_all_reduce",
        "extra_collective": "after_backward",
        "size_mismatch": "tp_forward_all_reduce",
        "dtype_mismatch": "tp_forward_all_reduce",
        "op_mismatch": "tp_forward_all_reduce",
        "p2p_unposted": "recv_activations",
        "missing_dump": "dp_bucket0" if layout.dp > 1 else "tp_forward_all_reduce",
        "two_culprits": "tp_forward_all_reduce",
        "slow_compute": "tp_forward_all_reduce",
    }[scenario]


def _wait_until(predicate: Any, deadline: float, launcher: subprocess.Popen) -> bool:
    while time.time() < deadline:
        if predicate():
            return True
        if launcher.poll() is not None:
            return predicate()
        time.sleep(POLL_S)
    return False


def _group_alive(pgid: int) -> bool:
    """Whether any process of the launcher's process group is still running."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def generate(
    scenario: str,
    out_dir: Path,
    world_size: int = 8,
    culprit: int | None = None,
    seed: int = 0,
    fill_pg_config: bool = False,
    steps: int = 4,
    *,
    tp: int | None = None,
    pp: int | None = None,
    buffer_size: int | None = None,
    earlier_dir: Path | None = None,
    earlier_when: str = "settled",
    interval_s: float = SNAPSHOT_INTERVAL_S,
    collector: str | None = None,
    health_failed: dict[int, list[str]] | None = None,
) -> dict:
    """Run one scenario with real processes; write the dumps and scenario.json.

    ``buffer_size`` sets the Flight Recorder's ring buffer (default 2000 entries).
    With ``earlier_dir`` the job is dumped twice: first into ``earlier_dir`` (when every
    rank has settled, or with ``earlier_when="fault"`` as soon as the culprit stops or
    slows), then, at least ``interval_s`` later and once every rank has settled again,
    into ``out_dir``.

    With ``collector`` ("pickle" or "json") each rank dumps as NVIDIA's trace collector
    does (only active entries, no stacks, ``_dump_<rank>[.json]``) with its node health
    checks added; ``health_failed`` maps a rank to the devices ("gpu", "nic") whose
    check failed (every other check is healthy).

    Returns the content of ``out_dir``'s scenario.json. Raises RuntimeError if the run
    did not produce the expected dump files before its deadline.
    """
    if collector not in (None, *COLLECTOR_FORMATS):
        raise ValueError(f"unknown collector format {collector!r}; choose from {COLLECTOR_FORMATS}")
    health_failed = {int(r): sorted(set(devices)) for r, devices in (health_failed or {}).items()}
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {sorted(SCENARIOS)}")
    if steps < 2:
        raise ValueError("steps must be >= 2")
    if earlier_when not in ("settled", "fault"):
        raise ValueError(f"earlier_when must be 'settled' or 'fault', not {earlier_when!r}")
    import torch

    layout = default_layout(world_size, tp, pp)
    culprits = _choose_culprits(scenario, layout, culprit, seed)
    dirs = [Path(d) for d in ([earlier_dir] if earlier_dir is not None else []) + [out_dir]]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        for old in [*d.glob("rank_*"), *d.glob("_dump_*"), d / "scenario.json"]:
            old.unlink(missing_ok=True)

    work = Path(tempfile.mkdtemp(prefix="fr_generate_"))
    started = time.time()
    budget = 40.0 + 2.0 * world_size + 2.0 * steps + (interval_s + SLOW_S * steps if earlier_dir else 0.0)
    plan = {
        "scenario": scenario,
        "layout": {"world_size": world_size, "tp": layout.tp, "pp": layout.pp, "dp": layout.dp},
        "culprits": culprits,
        "fault_step": _fault_step(steps),
        "point": _fault_point(scenario, layout),
        "steps": steps,
        "seed": seed,
        "fill_pg_config": fill_pg_config,
        "collector": collector,
        "health": {str(r): devices for r, devices in health_failed.items()},
        "port": _free_port(),
        "state_dir": str(work),
        "out_dir": str(dirs[-1].resolve()),
        "dump_dirs": [str(d.resolve()) for d in dirs],
        "slow_s": SLOW_S,
        "block_timeout_s": SLOW_JOB_TIMEOUT_S if scenario == "slow_compute" else BLOCK_TIMEOUT_S,
        "started": started,
        "deadline": started + budget,
    }
    missing = set(culprits) if scenario == "missing_dump" else set()
    env = {"TORCH_FR_BUFFER_SIZE": str(buffer_size)} if buffer_size is not None else None

    def moment(k: int, work: Path, deadline: float, launcher: subprocess.Popen) -> None:
        if k > 0:
            time.sleep(interval_s)
        first_at_fault = k == 0 and len(dirs) > 1 and earlier_when == "fault"
        if scenario == "slow_compute" and not first_at_fault:
            _await_slow_window(work, culprits[0], deadline, launcher)
        elif first_at_fault:
            _await_fault(work, world_size, culprits, deadline, launcher)
        else:
            _await_settled(work, world_size, ("done", "blocked", "stuck", "slow"), 0.3, deadline, launcher)

    result = run_plan(plan, [sys.executable, str(SCRIPT_PATH), "--_launch"], missing=missing, env=env, moment=moment)
    info = _scenario_info(scenario, culprits, layout, plan, fill_pg_config, buffer_size)
    tail = {"torch_version": torch.__version__, "generation_seconds": round(time.time() - started, 1)}
    for k, d in enumerate(dirs):
        head, rest = _split_after(info, "expected")
        snapshot = {
            **head,
            "observed": _observed(result.snapshots[k], world_size),
            "torch_version": tail["torch_version"],
        }
        snapshot.update(rest)
        snapshot["generation_seconds"] = tail["generation_seconds"]
        if collector:
            snapshot["collector"] = {
                "format": collector,
                "health_failed": {str(r): d for r, d in health_failed.items()},
            }
        if len(dirs) > 1:
            snapshot["snapshot"] = {"taken": "earlier" if k == 0 else "later", "other": dirs[1 - k].name}
            if k == 0:
                snapshot["snapshot"]["when"] = earlier_when
            else:
                snapshot["snapshot"]["interval_s"] = interval_s
        (d / "scenario.json").write_text(json.dumps(snapshot, indent=2) + "\n")
    return snapshot


def _split_after(d: dict, key: str) -> tuple[dict, dict]:
    keys = list(d)
    cut = keys.index(key) + 1
    return {k: d[k] for k in keys[:cut]}, {k: d[k] for k in keys[cut:]}


def _scenario_info(
    scenario: str, culprits: list[int], layout: Layout, plan: dict, fill_pg_config: bool, buffer_size: int | None
) -> dict:
    """What was injected and what an analyser should conclude (the scenario.json fields)."""
    fault_step = plan["fault_step"]
    fault, group_desc, op = _describe(scenario, culprits, layout, fault_step)
    suspects = sorted(culprits)
    if scenario == "p2p_unposted":
        pp_ranks = layout.group_of(layout.pp_groups(), culprits[0])
        suspects = sorted([culprits[0], pp_ranks[pp_ranks.index(culprits[0]) - 1]])
    info = {
        "scenario": scenario,
        "world_size": layout.world_size,
        "layout": {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp},
        "injected_ranks": culprits,
        "fault": fault,
        "fault_step": None if scenario == "healthy" else fault_step,
        "fault_group_desc": group_desc,
        "fault_op": op,
        "steps": plan["steps"],
        "expected": {"failure_class": EXPECTED_CLASS[scenario], "suspect_ranks": suspects},
        "seed": plan["seed"],
        "fill_pg_config": fill_pg_config,
    }
    if buffer_size is not None:
        info["buffer_size"] = buffer_size
    if scenario == "p2p_unposted":
        info["expected"]["note"] = P2P_NOTE
    return info


@dataclass
class RunResult:
    """What the parent saw of one run: per-rank summaries, final states and what blocked ranks waited on."""

    summaries: dict[str, Any]
    """Each rank's summary of its last dump."""
    states: dict[int, str]
    details: dict[int, str]
    seconds: float
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    """Each rank's summary, per snapshot (one per dump folder, in order)."""


def _read_states(work: Path, world_size: int) -> dict[int, tuple[str, int]] | None:
    """Each rank's (state, file mtime), or None while some rank has written none yet."""
    out = {}
    for r in range(world_size):
        path = work / f"state_{r}"
        try:
            out[r] = (path.read_text(), path.stat().st_mtime_ns)
        except FileNotFoundError:
            return None
    return out


Moment = Callable[[int, Path, float, subprocess.Popen], None]
"""Waits (until a deadline) for the moment of snapshot k: (k, work folder, deadline, launcher)."""


def run_plan(
    plan: dict[str, Any],
    launch_argv: list[str],
    *,
    missing: set[int] | frozenset[int] = frozenset(),
    env: dict[str, str] | None = None,
    terminal_states: tuple[str, ...] = ("done", "blocked", "stuck"),
    settle_s: float = 0.3,
    keep_work_on_error: bool = True,
    moment: Moment | None = None,
) -> RunResult:
    """Run the ranks of ``plan`` to their coordinated dumps; the parent side of every generator.

    ``plan`` needs ``layout.world_size``, ``state_dir`` (an empty work folder),
    ``out_dir`` (or ``dump_dirs``, one folder per snapshot), ``started`` and
    ``deadline``; it is written to ``state_dir/plan.json`` and the launcher is started
    as ``launch_argv + [plan path]`` in its own process group. For each snapshot the
    parent waits for its moment (by default: every rank's state is one of
    ``terminal_states`` and no state changed for ``settle_s`` seconds), then every rank
    dumps at once; ranks in ``missing`` write no dump. After the dumps (or on any
    error, or at the deadline) the whole process group is killed. Raises
    RuntimeError, with the tail of the ranks' log, when the ranks never settle or
    a dump is not written.
    """
    work = Path(plan["state_dir"])
    dirs = snapshot_dirs(plan)
    world_size = plan["layout"]["world_size"]
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps(plan))
    child_env = _child_env()
    child_env.update(env or {})

    def settled(k: int, work: Path, deadline: float, launcher: subprocess.Popen) -> None:
        _await_settled(work, world_size, terminal_states, settle_s, deadline, launcher)

    wait_for_moment = moment or settled
    log = open(work / "log.txt", "wb")  # noqa: SIM115
    launcher = subprocess.Popen(
        [*launch_argv, str(plan_path)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env,
        cwd=str(work),
        start_new_session=True,  # one process group: the launcher and its ranks
    )
    failed = True
    try:
        deadline = plan["deadline"] - 5.0
        final: dict[int, tuple[str, int]] = {}
        for k, out_dir in enumerate(dirs):
            wait_for_moment(k, work, deadline, launcher)
            final = _read_states(work, world_size) or {}
            (work / f"dump_now_{k}").touch()
            expected = [out_dir / dump_file_name(plan, r) for r in range(world_size) if r not in missing]
            if not _wait_until(lambda expected=expected: all(p.exists() for p in expected), deadline, launcher):
                raise RuntimeError(f"dumps not written\n{_log_tail(work)}")
        (work / "release").touch()
        try:
            launcher.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            pass
        snapshots = [_summaries(work, k, world_size) for k in range(len(dirs))]
        details = {}
        for r in range(world_size):
            detail = work / f"detail_{r}"
            if detail.exists() and final.get(r, ("", 0))[0] != "done":
                details[r] = detail.read_text()
        failed = False
    finally:
        if launcher.poll() is None or _group_alive(launcher.pid):
            try:
                os.killpg(launcher.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            launcher.wait()
        log.close()
        if not (failed and keep_work_on_error):
            shutil.rmtree(work, ignore_errors=True)
    return RunResult(
        summaries=snapshots[-1],
        states={r: s for r, (s, _) in final.items()},
        details=details,
        seconds=time.time() - plan["started"],
        snapshots=snapshots,
    )


def _await_settled(
    work: Path,
    world_size: int,
    terminal_states: tuple[str, ...],
    settle_s: float,
    deadline: float,
    launcher: subprocess.Popen,
) -> None:
    """Wait until every rank's state is terminal and no state changed for ``settle_s`` (a wait
    that finishes right now shows up as a new state)."""

    def quiescent() -> bool:
        states = _read_states(work, world_size)
        return states is not None and all(s in terminal_states for s, _ in states.values())

    while True:
        if not _wait_until(quiescent, deadline, launcher):
            raise RuntimeError(f"ranks never settled\n{_log_tail(work)}")
        before = _read_states(work, world_size)
        time.sleep(settle_s)
        if quiescent() and _read_states(work, world_size) == before:
            return


def _await_fault(work: Path, world_size: int, culprits: list[int], deadline: float, launcher: subprocess.Popen) -> None:
    """Wait until a culprit has stopped or slowed down."""

    def faulted() -> bool:
        states = _read_states(work, world_size)
        return states is not None and any(states[c][0] in ("stuck", "slow") for c in culprits)

    if not _wait_until(faulted, deadline, launcher):
        raise RuntimeError(f"the fault never happened\n{_log_tail(work)}")


def _await_slow_window(work: Path, culprit: int, deadline: float, launcher: subprocess.Popen) -> None:
    """Wait until the slow rank has been in its sleep for SLOW_SETTLE_S without a break."""
    since = None
    while time.time() < deadline and launcher.poll() is None:
        try:
            slow = (work / f"state_{culprit}").read_text() == "slow"
        except FileNotFoundError:
            slow = False
        now = time.time()
        since = (since or now) if slow else None
        if since is not None and now - since >= SLOW_SETTLE_S:
            return
        time.sleep(POLL_S)
    raise RuntimeError(f"the slow rank never slept long enough\n{_log_tail(work)}")


def _summaries(work: Path, k: int, world_size: int) -> dict[str, Any]:
    out = {}
    for r in range(world_size):
        path = work / f"summary_{k}_{r}.json"
        if path.exists():
            out[str(r)] = json.loads(path.read_text())
    return out


P2P_NOTE = (
    "gloo records no send/recv entries, so the unposted recv is invisible. The "
    "sender (previous pipeline stage) blocks in its send and the culprit later "
    "blocks in its own send of gradients back to it; neither has a pending entry, "
    "and each is missing from a collective its TP or DP peers are waiting in. "
    "Both are therefore the visible suspects (missing participants)."
)


def _observed(summaries: dict[str, Any], world_size: int) -> dict[str, Any]:
    """What the written dumps actually show: pending entries per rank."""
    return {
        "dumps_missing": [r for r in range(world_size) if str(r) not in summaries],
        "ranks_without_pending_entries": [int(r) for r, s in summaries.items() if not s["pending"]],
        "pending": {r: s["pending"] for r, s in summaries.items() if s["pending"]},
        "last_seq": {r: s["last_seq"] for r, s in summaries.items()},
    }


def _log_tail(work: Path, lines: int = 30) -> str:
    text = (work / "log.txt").read_text(errors="replace").strip().splitlines()
    return f"(logs in {work})\n" + "\n".join(text[-lines:])


def generate_all(root: Path = SAMPLE_DIR) -> None:
    """Regenerate every committed set under ``root``."""
    for name, kwargs in ALL_SETS.items():
        t0 = time.time()
        kwargs = dict(kwargs)
        if kwargs.pop("earlier", False):
            kwargs["earlier_dir"] = root / f"{name}.earlier"
        info = generate(out_dir=root / name, **kwargs)
        print(f"{name:28s} W={info['world_size']:<3d} culprits={info['injected_ranks']} ({time.time() - t0:.1f}s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--culprit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tp", type=int, default=None)
    parser.add_argument("--pp", type=int, default=None)
    parser.add_argument("--fill-pg-config", action="store_true")
    parser.add_argument("--buffer-size", type=int, default=None, help="Flight Recorder ring buffer entries (2000)")
    parser.add_argument("--earlier", type=Path, default=None, help="dump twice: the first snapshot into this folder")
    parser.add_argument("--earlier-when", choices=("settled", "fault"), default="settled")
    parser.add_argument("--interval", type=float, default=SNAPSHOT_INTERVAL_S, help="seconds between the snapshots")
    parser.add_argument(
        "--collector",
        choices=COLLECTOR_FORMATS,
        help="dump as NVIDIA's trace collector does (only active entries, no stacks, health checks added)",
    )
    parser.add_argument(
        "--health-failed",
        action="append",
        default=[],
        metavar="DEVICE:RANK",
        help="with --collector: the check of DEVICE (gpu or nic) on RANK failed (repeatable)",
    )
    parser.add_argument("--all", action="store_true", help="regenerate every committed set")
    parser.add_argument("--_launch", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._launch is not None:
        launch_ranks(args._launch)
        return
    if args.all:
        generate_all()
        return
    if not args.scenario or not args.out:
        parser.error("--scenario and --out are required (or use --all)")
    info = generate(
        args.scenario,
        args.out,
        world_size=args.world_size,
        culprit=args.culprit,
        seed=args.seed,
        fill_pg_config=args.fill_pg_config,
        steps=args.steps,
        tp=args.tp,
        pp=args.pp,
        buffer_size=args.buffer_size,
        earlier_dir=args.earlier,
        earlier_when=args.earlier_when,
        interval_s=args.interval,
        collector=args.collector,
        health_failed=_parse_failed(args.health_failed),
    )
    print(json.dumps(info, indent=2))


def _parse_failed(items: list[str]) -> dict[int, list[str]]:
    failed: dict[int, list[str]] = {}
    for item in items:
        device, _, rank = item.partition(":")
        if device not in ("gpu", "nic") or not rank.isdigit():
            raise SystemExit(f"--health-failed takes DEVICE:RANK with DEVICE gpu or nic, not {item!r}")
        failed.setdefault(int(rank), []).append(device)
    return failed


if __name__ == "__main__":
    main()
