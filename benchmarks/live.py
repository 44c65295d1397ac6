"""What ``flightdeck watch`` costs per snapshot at scale.

    python -m benchmarks.live [--dir /tmp/fd-live] [--ranks 1024] [--entries 2000]

Writes three snapshot folders of a synthetic NCCL job (``benchmarks.synth``): ``s1`` the
job hung with rank 300 stuck, ``s2`` and ``s3`` the same files again (hard links, new
names: nobody moved, and each is read afresh). Then runs ``flightdeck watch DIR --all
--max-snapshots 3 --json-lines`` as a user does and prints each snapshot's line with its
``seconds`` (reading its files and analysing it against the previous snapshot, which is
never read again), and the command's wall time. The snapshots are reused when they exist.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.synth import write_dump_set


def make_snapshots(root: Path, ranks: int, entries: int) -> None:
    if not (root / "s1").is_dir():
        write_dump_set(root / "s1", ranks, entries=entries, culprit=300 % ranks, fault="stuck")
    for name in ("s2", "s3"):
        if not (root / name).is_dir():
            (root / name).mkdir()
            for f in (root / "s1").iterdir():
                os.link(f, root / name / f.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.live", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/fd-live")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--entries", type=int, default=2000)
    args = ap.parse_args(argv)
    root = Path(args.dir)
    watched = root / "watched"
    make_snapshots(watched, args.ranks, args.entries)
    shutil.rmtree(root / "report", ignore_errors=True)
    flightdeck = Path(sys.executable).parent / "flightdeck"
    cmd = [str(flightdeck), "watch", str(watched), "--all", "--max-snapshots", "3", "--json-lines"]
    cmd += ["--settle", "0.5", "--poll", "0.1", "--report-dir", str(root / "report")]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    for line in map(json.loads, done.stdout.splitlines()):
        named = f" ranks {line['ranks']}" if line["ranks"] else ""
        print(f"{line['snapshot']}: {line['state']}{named}, {line['ranks_loaded']} ranks, {line['seconds']:.2f} s")
    print(f"flightdeck watch, 3 snapshots: {wall:.1f} s wall (with 2 polls and {0.5} s settle per snapshot)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
