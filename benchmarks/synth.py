"""Fast synthetic NCCL Flight Recorder dumps with a known root cause.

Writes one file per rank (``nccl_trace_rank_<r>``) shaped like torch's NCCL
Flight Recorder pickle dumps, plus ``truth.json`` naming the culprit. Speed
comes from simulating each pipeline stage once (every rank of a stage issues
the same ops), turning that into a per-role template of entry fields, and
only patching the rank-specific values (process-local pg ids, group names,
timestamps, thread ids) per rank in a process pool.

Usage:
    python -m benchmarks.synth OUT --ranks N --entries E [--fault stuck --culprit R]
    python -m benchmarks.synth OUT --family FAMILY [--seed S]

The second form writes a small (8-64 ranks) NCCL-shaped set of one of the
corpus's fault families with a random layout (``benchmarks.corpus``), with the
corpus's ``truth.json``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import pickle
import random
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.frames import build_stacks
from benchmarks.layout import DESCS, KINDS, Layout, choose_layout
from benchmarks.schedule import DURATION_MS, HangPoint, Shape, cut, role_of, stage_ops

FILE_PREFIX = "nccl_trace_rank_"
TRUTH_FILE = "truth.json"
TIMEOUT_MS = 600000
COMM_LIB_VERSION = "2.21.5"
START_DELAY_NS = 7_000


@dataclass
class _Plan:
    """Everything a worker needs; built once in the parent and inherited on fork."""

    layout: Layout
    fmt: str
    version: str
    out_dir: str
    hang: HangPoint | None
    templates: dict[tuple[str, int], list[tuple]]
    pg_status: dict[tuple[str, int], dict[str, tuple[int, int, int]]]
    default_ranks: str


_PLAN: _Plan | None = None
_SHARED: dict[str, object] = {}


def _shared(value: object) -> object:
    """Return one canonical object per equal value so the pickle memo writes it once."""
    key = repr(value)
    found = _SHARED.get(key)
    if found is None:
        _SHARED[key] = found = value
    return found


def _template(ops: list, states: list[str], entries: int, stacks: dict[str, list[dict]]) -> list[tuple]:
    """Rank-independent entry fields for the last ``entries`` ops (the ring buffer)."""
    rows = []
    start = max(0, len(ops) - entries)
    for op, state in zip(ops[start:], states[start:]):
        tc = op.time_created_ns
        dur = DURATION_MS[op.kind]
        if state == "completed":
            ts, td, ret, dur_ms = (
                tc + START_DELAY_NS,
                tc + START_DELAY_NS + int(dur * 1e6),
                True,
                dur,
            )
        elif state == "started":
            ts, td, ret, dur_ms = tc + START_DELAY_NS, None, False, None
        else:
            ts, td, ret, dur_ms = None, None, False, None
        sizes_in = _shared([list(s) for s in op.input_sizes])
        sizes_out = _shared([list(s) for s in op.output_sizes])
        dtypes = _shared([op.dtype])
        rows.append(
            (
                op.record_id,
                op.kind,
                op.collective_seq_id,
                op.p2p_seq_id,
                op.op_id,
                _shared(op.profiling_name),
                tc,
                dur_ms,
                sizes_in,
                dtypes,
                sizes_out,
                _shared(state),
                ts,
                td,
                ret,
                op.is_p2p,
                op.thread,
                stacks[op.stack],
            )
        )
    return rows


def _status(ops: list, states: list[str]) -> dict[str, tuple[int, int, int]]:
    """(last enqueued, started, completed) collective seq per group kind, -1 if none."""
    out = {}
    for kind in KINDS:
        enq = sta = com = -1
        for op, state in zip(reversed(ops), reversed(states)):
            if op.kind != kind:
                continue
            if enq < 0:
                enq = op.collective_seq_id
            if sta < 0 and state != "scheduled":
                sta = op.collective_seq_id
            if state == "completed":
                com = op.collective_seq_id
                break
        out[kind] = (enq, sta, com)
    return out


def _local_pg_ids(rank: int) -> dict[str, int]:
    """Process-local pg ids: differ between ranks for the same group, as in real jobs."""
    offset = rank % 5
    order = ["dp", "tp", "pp"]
    shift = rank % 3
    order = order[shift:] + order[:shift]
    ids = {"default": 0}
    for i, kind in enumerate(order):
        ids[kind] = 1 + offset + i
    return ids


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def build_dump(rank: int) -> dict:
    """The dump dict of one rank (the structure torch's dump pickles)."""
    plan = _PLAN
    assert plan is not None, "plan not initialised"
    lay = plan.layout
    coords = lay.coords(rank)
    role = role_of(coords, plan.hang)
    key = (role, coords[0])
    local = _local_pg_ids(rank)
    groups = {}
    pg_config_items = []
    for kind in KINDS:
        name = lay.group_name(kind, rank)
        groups[kind] = (local[kind], (name, DESCS[kind]))
        ranks = plan.default_ranks if kind == "default" else str(lay.members(kind, rank))
        pg_config_items.append((name, {"name": name, "desc": DESCS[kind], "ranks": ranks}))
    # torch keeps pg_config in a map ordered by (name, desc) strings.
    pg_config = dict(sorted(pg_config_items))
    status = plan.pg_status[key]
    pg_status = {}
    for kind in sorted(KINDS, key=lambda k: local[k]):
        enq, sta, com = status[kind]
        pg_status[str(local[kind])] = {
            "last_enqueued_collective": enq,
            "last_started_collective": sta,
            "last_completed_collective": com,
        }
    base_tid = 139_800_000_000_000 + rank * 8192
    threads = {
        "main": (str(base_tid), "pt_main_thread"),
        "autograd": (str(base_tid + 4096), "pt_autograd_0"),
    }
    jit = (rank * 2_654_435_761) % 40_000
    entries = []
    append = entries.append
    for (
        rid,
        kind,
        cs,
        ps,
        oid,
        name,
        tc,
        dur,
        isz,
        idt,
        osz,
        state,
        ts,
        td,
        ret,
        p2p,
        thr,
        frames,
    ) in plan.templates[key]:
        pg_id, pg = groups[kind]
        tid, tname = threads[thr]
        e = {
            "record_id": rid,
            "pg_id": pg_id,
            "process_group": pg,
            "collective_seq_id": cs,
            "p2p_seq_id": ps,
            "op_id": oid,
            "profiling_name": name,
            "time_created_ns": tc + jit,
        }
        if dur is not None:
            e["duration_ms"] = dur
        e["input_sizes"] = [d[:] for d in isz]
        e["input_dtypes"] = idt
        e["output_sizes"] = [d[:] for d in osz]
        e["output_dtypes"] = idt
        e["state"] = state
        e["time_discovered_started_ns"] = None if ts is None else ts + jit
        e["time_discovered_completed_ns"] = None if td is None else td + jit
        e["retired"] = ret
        e["timeout_ms"] = TIMEOUT_MS
        e["is_p2p"] = p2p
        e["thread_id"] = tid
        e["thread_name"] = tname
        e["frames"] = frames[:]
        append(e)
    lib_key = "comm_lib_version" if _version_tuple(plan.version) >= (2, 10) else "nccl_version"
    return {
        "version": plan.version,
        "pg_config": pg_config,
        lib_key: COMM_LIB_VERSION,
        "pg_status": pg_status,
        "entries": entries,
    }


def to_json_dump(dump: dict) -> dict:
    """What torch's JSON dump holds: no frames, missing times as 0, status values as strings."""
    entries = []
    for e in dump["entries"]:
        j = {k: v for k, v in e.items() if k != "frames"}
        j["process_group"] = list(e["process_group"])
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            if j[k] is None:
                j[k] = 0
        entries.append(j)
    out = {k: v for k, v in dump.items() if k != "entries"}
    out["pg_status"] = {pg: {k: str(v) for k, v in s.items()} for pg, s in dump["pg_status"].items()}
    out["entries"] = entries
    return out


def _write_rank(rank: int) -> int:
    plan = _PLAN
    assert plan is not None
    dump = build_dump(rank)
    path = os.path.join(plan.out_dir, f"{FILE_PREFIX}{rank}")
    if plan.fmt == "json":
        data = json.dumps(to_json_dump(dump), separators=(",", ":")).encode()
        with open(path, "wb") as f:
            f.write(data)
        return len(data)
    with open(path, "wb", buffering=1 << 20) as f:
        pickle.dump(dump, f, protocol=2)
        return f.tell()


def _run_ahead(ops: list, states: list[str], n: int) -> tuple[list, list[str]]:
    """The TP peers enqueue ``n`` more TP collectives past the one they hang in (NCCL
    launches asynchronously, so a rank's buffer runs ahead of the collective it waits in)."""
    last = next(op for op in reversed(ops) if op.kind == "tp")
    top = ops[-1]
    more = [
        replace(
            last,
            record_id=top.record_id + k,
            collective_seq_id=last.collective_seq_id + k,
            op_id=top.op_id + k,
            time_created_ns=top.time_created_ns + k * 1_000_000,
        )
        for k in range(1, n + 1)
    ]
    return ops + more, states + ["scheduled"] * n


def _make_plan(
    out_dir: str,
    layout: Layout,
    entries: int,
    hang: HangPoint | None,
    fmt: str,
    version: str,
    shape: Shape,
    run_ahead: int = 0,
) -> _Plan:
    stacks = build_stacks()
    templates: dict[tuple[str, int], list[tuple]] = {}
    status: dict[tuple[str, int], dict[str, tuple[int, int, int]]] = {}
    roles = (
        ["healthy"]
        if hang is None
        else ["stalled"]
        if hang.stalled
        else ["culprit", "tp_peer", "pp_victim", "dp_victim"]
    )
    for stage in range(layout.pp):
        ops, last_start = stage_ops(shape, stage, entries)
        for role in roles:
            if role == "pp_victim" and hang is not None and stage == hang.culprit_coords[0]:
                continue
            kept, states = cut(ops, last_start, role, stage, shape, hang)
            if role == "tp_peer" and run_ahead:
                kept, states = _run_ahead(kept, states, run_ahead)
            templates[(role, stage)] = _template(kept, states, entries, stacks)
            status[(role, stage)] = _status(kept, states)
    return _Plan(
        layout=layout,
        fmt=fmt,
        version=version,
        out_dir=out_dir,
        hang=hang,
        templates=templates,
        pg_status=status,
        default_ranks=str(list(range(layout.world))),
    )


def write_dump_set(
    out_dir: str | Path,
    ranks: int,
    entries: int = 2000,
    culprit: int | None = None,
    fault: str = "stuck",
    fmt: str = "pickle",
    seed: int = 0,
    tp: int = 8,
    pp: int = 4,
    version: str = "2.10",
    processes: int | None = None,
    run_ahead: int = 0,
) -> dict:
    """Write a dump set for ``ranks`` ranks and return its truth record (also in truth.json).

    ``fault='stuck'``: ``culprit`` stops issuing inside its TP group; its TP peers
    hang in the collective it never joins; pipeline neighbours block in P2P and
    the rest of the world blocks in the DP gradient all_reduce.
    ``fault='none'``: a healthy job, every entry completed.
    ``fault='stalled'``: every rank issues the last step's first DP all_reduce and none
    completes it (stuck in flight everywhere: the dumps alone single out no rank).
    ``run_ahead``: with ``fault='stuck'``, the culprit's TP peers have enqueued that many
    more TP collectives past the one they hang in.
    """
    if fault not in ("stuck", "none", "stalled"):
        raise ValueError(f"unknown fault {fault!r}")
    if fmt not in ("pickle", "json"):
        raise ValueError(f"unknown format {fmt!r}")
    global _PLAN
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{FILE_PREFIX}*"):
        old.unlink()
    (out / TRUTH_FILE).unlink(missing_ok=True)

    layout = choose_layout(ranks, tp=tp, pp=pp)
    shape = Shape(pp=layout.pp, tp=layout.tp)
    rng = random.Random(seed)
    hang = None
    if fault == "stalled":
        hang = HangPoint(culprit_coords=(-1, -1, -1), mb=0, tp_index=0, stalled=True)
    if fault == "stuck":
        if culprit is None:
            culprit = rng.randrange(ranks)
        if not 0 <= culprit < ranks:
            raise ValueError(f"culprit {culprit} outside 0..{ranks - 1}")
        hang = HangPoint(
            culprit_coords=layout.coords(culprit),
            mb=rng.randrange(shape.microbatches),
            tp_index=rng.randrange(2 * shape.layers),
        )
    t0 = time.perf_counter()
    _PLAN = _make_plan(str(out), layout, entries, hang, fmt, version, shape, run_ahead)
    procs = processes or os.cpu_count() or 1
    if procs == 1 or ranks < 64:
        total = sum(_write_rank(r) for r in range(ranks))
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            total = sum(pool.imap_unordered(_write_rank, range(ranks), chunksize=16))
    _PLAN = None
    truth = {
        "culprit": [culprit] if hang is not None and not hang.stalled else [],
        "fault": fault,
        "world_size": ranks,
        "entries": entries,
        "format": fmt,
        "seed": seed,
        "version": version,
        "layout": {"tp": layout.tp, "pp": layout.pp, "dp": layout.dp},
        "hang": None
        if hang is None or hang.stalled
        else {
            "stage": hang.culprit_coords[0],
            "mb": hang.mb,
            "tp_index": hang.tp_index,
        },
        "file_prefix": FILE_PREFIX,
        "bytes": total,
        "generate_s": round(time.perf_counter() - t0, 3),
    }
    (out / TRUTH_FILE).write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def write_family_set(out_dir: str | Path, family: str, seed: int = 0) -> dict:
    """A small NCCL-shaped set of a corpus fault family (random layout from ``seed``); returns its truth.

    The job, the fault and the truth are ``benchmarks.corpus``'s (see
    ``benchmarks/README.md``); the dumps are written from a simulated run of
    the job with NCCL's semantics. Raises ``benchmarks.corpus.CaseSkipped`` if
    the seed gives no gradable case.
    """
    from benchmarks.corpus import generate_case

    return generate_case("nccl", family, seed, out_dir)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.corpus import cases_of

    ap = argparse.ArgumentParser(prog="python -m benchmarks.synth", description=__doc__.splitlines()[0])
    ap.add_argument("out", help="output directory (existing dump files in it are replaced)")
    ap.add_argument("--ranks", type=int, default=None, help="world size (required without --family)")
    ap.add_argument(
        "--family",
        choices=cases_of("nccl"),
        default=None,
        help="write a small set of this corpus fault family instead (layout and fault from --seed)",
    )
    ap.add_argument("--entries", type=int, default=2000, help="ring buffer size per rank")
    ap.add_argument("--fault", choices=("stuck", "none", "stalled"), default="stuck")
    ap.add_argument(
        "--culprit",
        type=int,
        default=None,
        help="rank that stops (default: chosen by --seed)",
    )
    ap.add_argument("--format", dest="fmt", choices=("pickle", "json"), default="pickle")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--pp", type=int, default=4)
    ap.add_argument(
        "--version",
        default="2.10",
        help="dump format version ('2.9' writes nccl_version)",
    )
    ap.add_argument("--processes", type=int, default=None)
    ap.add_argument(
        "--run-ahead",
        type=int,
        default=0,
        help="with --fault stuck: the culprit's TP peers enqueued this many more collectives past the hang",
    )
    args = ap.parse_args(argv)
    if args.family:
        truth = write_family_set(args.out, args.family, seed=args.seed)
        print(
            f"wrote {truth['family']} ({truth['layout']['world_size']} ranks, tp {truth['layout']['tp']} "
            f"pp {truth['layout']['pp']} dp {truth['layout']['dp']}) to {args.out}; culprits {truth['culprit_ranks']}",
            file=sys.stderr,
        )
        return 0
    if args.ranks is None:
        ap.error("--ranks is required (or give --family)")
    truth = write_dump_set(
        args.out,
        args.ranks,
        entries=args.entries,
        culprit=args.culprit,
        fault=args.fault,
        fmt=args.fmt,
        seed=args.seed,
        tp=args.tp,
        pp=args.pp,
        version=args.version,
        run_ahead=args.run_ahead,
        processes=args.processes,
    )
    print(
        f"wrote {truth['world_size']} ranks x {truth['entries']} entries "
        f"({truth['bytes'] / 1e9:.2f} GB) to {args.out} in {truth['generate_s']:.1f}s; "
        f"culprit {truth['culprit']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
