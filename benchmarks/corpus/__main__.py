"""Make one corpus case: ``python -m benchmarks.corpus OUT --kind gloo|nccl --family F --seed S [--shape fsdp]``."""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.corpus import FAMILIES, KINDS, SHAPES, CaseSkipped, generate_case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__)
    ap.add_argument("out", help="folder for the dumps and truth.json (its dump files are replaced)")
    ap.add_argument("--kind", choices=KINDS, default="gloo")
    ap.add_argument("--family", choices=sorted(FAMILIES), required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--shape",
        choices=SHAPES,
        default=None,
        help="program shape: megatron (TP/PP/DP) or fsdp (sharded data parallel with experts); "
        "default: drawn from the seed (fsdp for about 30%% of the families that allow it)",
    )
    args = ap.parse_args(argv)
    try:
        truth = generate_case(args.kind, args.family, args.seed, args.out, shape=args.shape)
    except CaseSkipped as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    brief = {k: truth[k] for k in ("kind", "family", "seed", "shape", "layout", "variants", "culprit_ranks", "fault")}
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
