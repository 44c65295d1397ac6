"""NCCL-shaped dumps of a planned case, written from its simulated run.

Field semantics follow torch's NCCL Flight Recorder writer as
``benchmarks/synth.py`` writes them (version 2.10, ``pg_config`` keyed by group
name with ``ranks`` as a string, ``pg_status`` keyed by the process-local pg
id): send/recv are recorded (``nccl:send 0->1`` with group ranks, their own
``p2p_seq_id``, ``collective_seq_id`` left at the group's current value);
states are ``scheduled`` / ``started`` / ``completed`` as the simulation left
them; a completed entry is retired and has a duration. The ring buffer keeps
the last ``buffer_size`` entries, and ``onlyActive`` then drops entries whose
completion was discovered, as torch does.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from benchmarks.corpus import fsdp, job
from benchmarks.corpus.comm import DTYPES
from benchmarks.corpus.plan import CasePlan
from benchmarks.corpus.program import Coll, P2POp
from benchmarks.corpus.sim import Entry
from benchmarks.synth import COMM_LIB_VERSION, FILE_PREFIX, TIMEOUT_MS, to_json_dump

PROFILING = {
    "all_reduce": "nccl:all_reduce",
    "broadcast": "nccl:broadcast",
    "all_gather": "nccl:_all_gather_base",
    "barrier": "nccl:all_reduce",  # ProcessGroupNCCL's barrier is an all_reduce of one element
    "all_to_all": "nccl:all_to_all",
    "reduce_scatter": "nccl:_reduce_scatter_base",
}
# Collectives autograd issues (its thread): a site's phase is the same in every shape that has it.
BACKWARD_SITES = {
    s
    for module in (job, fsdp)
    for s, phase in module.PHASES.items()
    if phase == "backward" and s not in module.P2P_SITES
}


def _fr_dtype(dtype: str) -> str:
    return DTYPES[dtype][0]


def _sizes(op: Coll) -> tuple[list, list, list]:
    if op.op == "barrier":
        return [[1]], [[1]], ["Float"]
    return [list(op.in_spec.shape)], [list(op.out_spec.shape)], [_fr_dtype(op.in_spec.dtype)]


def build_dumps(plan: CasePlan) -> dict[int, dict[str, Any]]:
    """Every dumped rank's dump dict."""
    topo = plan.topo
    out: dict[int, dict[str, Any]] = {}
    for rank in range(topo.layout.world_size):
        if rank in plan.no_dump:
            continue
        members = topo.member_groups(rank)
        local = {g.name: i for i, g in enumerate(members)}
        frames_cache: dict[tuple[str, str, int], dict[str, Any]] = {}
        base_tid = 139_800_000_000_000 + rank * 8192
        threads = {"main": (str(base_tid), "pt_main_thread"), "autograd": (str(base_tid + 4096), "pt_autograd_0")}
        coll_seq: dict[str, int] = {}
        p2p_seq: dict[str, int] = {}
        op_id: dict[str, int] = {}
        status: dict[str, list[int]] = {g.name: [-1, -1, -1] for g in members}
        entries: list[dict[str, Any]] = []
        for e in plan.outcome.entries[rank]:
            entries.append(_entry(e, local, coll_seq, p2p_seq, op_id, status, frames_cache, threads))
        kept = entries[-plan.variants.buffer_size :]
        if plan.variants.only_active:
            kept = [e for e in kept if e["time_discovered_completed_ns"] is None]
        pg_config = {g.name: {"name": g.name, "desc": g.desc, "ranks": str(list(g.ranks))} for g in members}
        out[rank] = {
            "version": "2.10",
            "pg_config": dict(sorted(pg_config.items())),
            "comm_lib_version": COMM_LIB_VERSION,
            "pg_status": {
                str(local[name]): {
                    "last_enqueued_collective": s[0],
                    "last_started_collective": s[1],
                    "last_completed_collective": s[2],
                }
                for name, s in sorted(status.items(), key=lambda kv: local[kv[0]])
            },
            "entries": kept,
        }
    return out


def _entry(
    e: Entry,
    local: dict[str, int],
    coll_seq: dict[str, int],
    p2p_seq: dict[str, int],
    op_id: dict[str, int],
    status: dict[str, list[int]],
    frames_cache: dict[tuple[str, str, int], dict[str, Any]],
    threads: dict[str, tuple[str, str]],
) -> dict[str, Any]:
    op = e.op
    name = op.group.name
    op_id[name] = op_id.get(name, 0) + 1
    if isinstance(op, P2POp):
        p2p_seq[name] = p2p_seq.get(name, 0) + 1
        me, peer = op.group.group_rank(e.rank), op.group.group_rank(op.peer)
        profiling = f"nccl:send {me}->{peer}" if op.kind == "send" else f"nccl:recv {me}<-{peer}"
        sizes_in = sizes_out = [list(op.spec.shape)]
        dtypes = [_fr_dtype(op.spec.dtype)]
        site_thread = "main"
    else:
        assert isinstance(op, Coll)
        coll_seq[name] = op.seq
        profiling = PROFILING[op.op]
        sizes_in, sizes_out, dtypes = _sizes(op)
        site_thread = "autograd" if op.site in BACKWARD_SITES else "main"
        s = status[name]
        s[0] = op.seq
        if e.state in ("started", "completed"):
            s[1] = op.seq
        if e.state == "completed":
            s[2] = op.seq
    done = e.state == "completed"
    out: dict[str, Any] = {
        "record_id": e.record_id,
        "pg_id": local[name],
        "process_group": (name, op.group.desc),
        "collective_seq_id": coll_seq.get(name, 0),
        "p2p_seq_id": p2p_seq.get(name, 0),
        "op_id": op_id[name],
        "profiling_name": profiling,
        "time_created_ns": e.t_created,
    }
    if done and e.t_started is not None and e.t_completed is not None:
        out["duration_ms"] = round((e.t_completed - e.t_started) / 1e6, 4)
    tid, tname = threads[site_thread]
    out.update(
        {
            "input_sizes": sizes_in,
            "input_dtypes": dtypes,
            "output_sizes": sizes_out,
            "output_dtypes": list(dtypes),
            "state": e.state,
            "time_discovered_started_ns": e.t_started if e.state != "scheduled" else None,
            "time_discovered_completed_ns": e.t_completed if done else None,
            "retired": done,
            "timeout_ms": TIMEOUT_MS,
            "is_p2p": isinstance(op, P2POp),
            "thread_id": tid,
            "thread_name": tname,
            "frames": [_frame(frames_cache, f) for f in op.stack],
        }
    )
    return out


def _frame(cache: dict[tuple[str, str, int], dict[str, Any]], f: tuple[str, str, int]) -> dict[str, Any]:
    found = cache.get(f)
    if found is None:
        found = cache[f] = {"name": f[0], "filename": f[1], "line": f[2]}
    return found


def file_name(plan: CasePlan, rank: int) -> str:
    return f"{FILE_PREFIX}{rank}" + (".json" if plan.variants.dump_format == "json" else "")


def write_dumps(plan: CasePlan, out_dir: Path) -> list[Path]:
    """Write one dump per dumped rank; returns the files."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{FILE_PREFIX}*"):
        old.unlink()
    written = []
    for rank, dump in build_dumps(plan).items():
        path = out_dir / file_name(plan, rank)
        if plan.variants.dump_format == "json":
            path.write_text(json.dumps(to_json_dump(dump), separators=(",", ":")))
        else:
            path.write_bytes(pickle.dumps(dump, protocol=2))
        written.append(path)
    return written
