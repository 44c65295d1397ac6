"""``python -m benchmarks.proxysim OUT``: simulated NCCL proxy-op waits of a job, in every format.

    python -m benchmarks.proxysim /tmp/waits --world 64 --fault slow_gpu:33
    python -m benchmarks.proxysim /tmp/waits --world 8 --fault slow_link:5,6 --formats csv,chrome
    python -m benchmarks.proxysim /tmp/waits --world 16 --fault congestion:10 --dumps

writes ``OUT/<format>/`` (``global.nccl.proxy_ops.<fmt>``; with ``--per-process`` also each
process's ``nccl.proxy_ops`` without global ranks), ``OUT/chrome/`` (NCCL's example plugin
traces), ``OUT/truth.json`` (the faults and each communicator's members) and with
``--dumps`` matching synthetic Flight Recorder dumps (``OUT/dumps``: TP 1, the same
pipeline x data-parallel layout, the first slow GPU stuck).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .formats import FORMATS, write_global, write_per_process, write_plugin_traces
from .job import KINDS, Fault, make_job, simulate


def _fault(text: str) -> Fault:
    kind, _, ranks = text.partition(":")
    if kind not in KINDS or not ranks:
        raise argparse.ArgumentTypeError(f"expected KIND:RANKS with KIND one of {', '.join(KINDS)}")
    return Fault(kind, tuple(int(r) for r in ranks.split(",")))


def write_job(
    out: Path,
    world: int,
    faults: list[Fault],
    formats: tuple[str, ...] = (*FORMATS, "chrome"),
    iterations: int = 6,
    seed: int = 0,
    per_process: bool = False,
) -> dict:
    """Simulate and write; returns the truth record (also ``truth.json``)."""
    job = make_job(world, faults, seed=seed)
    rows, steps = simulate(job, iterations=iterations, seed=seed, keep_steps="chrome" in formats)
    out.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        if fmt == "chrome":
            write_plugin_traces(job, steps, out / "chrome")
            continue
        write_global(rows, out / fmt, fmt)
        if per_process:
            write_per_process(rows, out / f"{fmt}-per-process", fmt)
    truth = {
        "world": world,
        "layout": {"pp": job.pp, "dp": job.dp, "rank": "stage * dp + replica"},
        "faults": [{"kind": f.kind, "ranks": list(f.ranks)} for f in faults],
        "communicators": {c.name: {"hash": f"0x{c.hash:016x}", "members": list(c.members)} for c in job.comms.values()},
        "rows": len(rows),
        "iterations": iterations,
        "seed": seed,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.proxysim", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--world", type=int, default=16)
    ap.add_argument(
        "--fault",
        type=_fault,
        action="append",
        default=[],
        help="slow_gpu:R, slow_link:S,R, congestion:R, credit_congestion:R, credit_noise:R",
    )
    ap.add_argument("--formats", default=",".join((*FORMATS, "chrome")))
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-process", action="store_true", help="also each process's nccl.proxy_ops (no _rank)")
    ap.add_argument("--dumps", action="store_true", help="also synthetic FR dumps of the same job")
    args = ap.parse_args(argv)
    formats = tuple(f for f in args.formats.split(",") if f)
    truth = write_job(args.out, args.world, args.fault, formats, args.iterations, args.seed, args.per_process)
    if args.dumps:
        from benchmarks.synth import write_dump_set

        slow = [f.ranks[0] for f in args.fault if f.kind == "slow_gpu"]
        pp = truth["layout"]["pp"]
        write_dump_set(
            args.out / "dumps",
            args.world,
            entries=400,
            culprit=slow[0] if slow else None,
            fault="stuck" if slow else "none",
            tp=1,
            pp=pp,
        )
    print(f"wrote {truth['rows']} proxy-op rows of {args.world} ranks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
