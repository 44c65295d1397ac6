"""Mutation fuzzer for the dump loader and the analysis.

Starts from real Flight Recorder dumps (``sample_dumps/*/rank_*``, the shared NCCL
fixtures when present, or small gloo dumps written by real torch when neither is
there), mutates them and checks that ``analysis`` never crashes or hangs, that a bad
file becomes a per-file error and that the good files beside it are still analyzed.

    python fuzz/run_fuzz.py --cases 10000 --seed 1

Prints ``fuzz: N cases, C crashes, H hangs`` and exits 1 on any crash or hang.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (str(ROOT), str(ROOT / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

from fuzzing import decode_sets, fuzz, make_gloo_dumps, seed_sets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="child processes (default 2)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a case counts as a hang")
    ap.add_argument("--file-share", type=float, default=0.2, help="share of cases run through real files")
    ap.add_argument("--gloo", action="store_true", help="also seed from a fresh 4-rank gloo job (needs torch)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="fuzz-gloo-") as tmp:
        gloo_dir = None
        if args.gloo or not decode_sets(seed_sets()):
            gloo_dir = Path(tmp) / "gloo"
            if not make_gloo_dumps(gloo_dir):
                print("fuzz: could not write gloo seed dumps", file=sys.stderr)
                gloo_dir = None
        n_sets = len(decode_sets(seed_sets((gloo_dir,) if gloo_dir else ())))
        print(f"fuzz: seeds from {n_sets} dump sets, seed {args.seed}, {args.workers} workers", flush=True)
        summary = fuzz(
            args.cases,
            seed=args.seed,
            workers=args.workers,
            timeout=args.timeout,
            file_share=args.file_share,
            gloo_dir=gloo_dir,
        )
    for index, detail in summary.crashes[:20]:
        print(f"crash in case {index} (rerun: --seed {args.seed}, case {index}):\n{detail}\n", file=sys.stderr)
    for index in summary.hangs[:20]:
        print(f"hang in case {index}: over {args.timeout:.0f} s", file=sys.stderr)
    modes = ", ".join(f"{k}: {v}" for k, v in sorted(summary.modes.items()))
    print(f"{summary.line()} ({summary.seconds:.0f} s; {modes})")
    return 1 if summary.crashes or summary.hangs else 0


if __name__ == "__main__":
    sys.exit(main())
