"""What ``slow`` rests on: who the others waited on between snapshots, in healthy and slow real jobs.

Runs the gloo job of the live tests (``benchmarks.live_job``) healthy and with a slow rank
(it sleeps 0.3 s every step, and still moves), takes SNAPSHOTS whole snapshots of each (dumps
every INTERVAL seconds), then compares each snapshot with the one before as ``flightdeck
watch`` does and prints, per pair, the figures of :mod:`analysis.diagnosis.lateness` for the
rank its peers waited on most (their wait on it alone as a share of the interval, whole and
recurring) and any rank's longest single wait. The thresholds in that module are read
against these figures (docs/live.md, "The word").

    python -m benchmarks.live_slow        # --snapshots 20 --interval 1 --runs 2
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from analysis.api import load
from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.compare import _interval
from analysis.diagnosis.lateness import WAIT_SHARE, lateness
from benchmarks.live_job import start_job, stop_job, whole_snapshots

JOBS = (  # (name, world, mode, culprit)
    ("healthy-8", 8, "healthy", 0),
    ("slow-8 (rank 5)", 8, "slow", 5),
    ("slow-4 (rank 1)", 4, "slow", 1),
)


def snapshots(out: Path, world: int, mode: str, culprit: int, n: int, interval: float, timeout: float) -> list[Path]:
    """Run the job until ``n`` whole snapshots follow the first whole one; those folders, oldest first."""
    job = start_job(out, world=world, interval=interval, mode=mode, culprit=culprit, after=0)
    deadline = time.monotonic() + timeout
    try:
        while whole_snapshots(out, world) < n + 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop_job(job)
    whole = sorted(f for f in out.iterdir() if f.is_dir() and all((f / f"rank_{r}").exists() for r in range(world)))
    return whole[: n + 1]


def figures(folders: list[Path]) -> list[tuple[int, int, int, float, float, float, tuple[int, ...]]]:
    """Per consecutive pair: the rank waited on most (rank, collectives, last into, its whole own
    wait and its recurring wait as shares of the interval), any rank's longest single wait as a
    share of the interval, the slow ranks."""
    out = []
    previous = None
    for f in folders:
        a = run_analysis(load(f, use_cache=False, workers=1))
        if previous is not None:
            t = lateness(a, previous, _interval(a, previous))
            top = t.table.sort_values("wait_share", ascending=False).iloc[0]
            ns = t.interval_ns
            longest = float(t.table["longest_ns"].max()) / ns  # any rank's longest single wait
            who = (int(top["rank"]), int(top["collectives"]), int(top["last"]))
            out.append((*who, float(top["wait_ns"]) / ns, float(top["wait_share"]), longest, t.slow))
        previous = a
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snapshots", type=int, default=20)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--only", help="run only the jobs whose name starts with this")
    args = p.parse_args(argv)
    print(f"slow: its peers' recurring wait on it alone >= {WAIT_SHARE:.0%} of the interval")
    for name, world, mode, culprit in JOBS:
        if args.only and not name.startswith(args.only):
            continue
        for run in range(args.runs):
            root = Path(tempfile.mkdtemp(prefix="fd-live-slow-"))
            try:
                folders = snapshots(root / "dumps", world, mode, culprit, args.snapshots, args.interval, args.timeout)
                rows = figures(folders)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            said = sum(bool(r[6]) for r in rows)
            print(f"\n{name}, run {run + 1}: {len(rows)} pairs, slow in {said}")
            print("  waited on  collectives  last  own wait  recurring (wait share)  | longest single wait  slow")
            for r, n, k, own, ws, longest, slow in rows:
                print(f"  {r:>9}  {n:>11}  {k:>4}  {own:>8.3f}  {ws:>22.3f}  | {longest:>19.3f}  {list(slow)}")
            if rows:
                ws = sorted(x[4] for x in rows)
                own = sorted(x[3] for x in rows)
                longest = sorted(x[5] for x in rows)
                print(
                    f"  the rank waited on most: wait share {ws[0]:.3f} to {ws[-1]:.3f} "
                    f"(median {ws[len(ws) // 2]:.3f}), its whole own wait up to {own[-1]:.3f}; "
                    f"longest single wait up to {longest[-1]:.3f}"
                )


if __name__ == "__main__":
    main()
