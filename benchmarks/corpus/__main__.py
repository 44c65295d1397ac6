"""Make one corpus case: ``python -m benchmarks.corpus OUT --kind gloo|nccl --family F --seed S``."""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.corpus import FAMILIES, KINDS, CaseSkipped, generate_case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.corpus", description=__doc__)
    ap.add_argument("out", help="folder for the dumps and truth.json (its dump files are replaced)")
    ap.add_argument("--kind", choices=KINDS, default="gloo")
    ap.add_argument("--family", choices=sorted(FAMILIES), required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        truth = generate_case(args.kind, args.family, args.seed, args.out)
    except CaseSkipped as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    brief = {k: truth[k] for k in ("kind", "family", "seed", "layout", "variants", "culprit_ranks", "fault")}
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
