"""From the stop to the verdict: ``flightdeck watch`` on real hung gloo jobs.

    python -m benchmarks.live_stop [--runs 20] [--dir /tmp/fd-live-stop] [--timeout 120]

Each run starts the 8-rank gloo job of ``benchmarks.live_job`` (torch, CPU; tensor-parallel
pairs and two data-parallel groups; ``dump_every`` each INTERVAL seconds) with one fault
(``stall``: a rank stops in compute; ``skip``: a rank skips a barrier the others issue;
``freeze``: a rank's process stops, its dumps with it), the culprit and the dump interval
(1, 2, 3 s) varied from run to run, and ``flightdeck watch DIR --until-hang --json-lines``
beside it as a user runs it. The culprit stamps the moment it goes wrong; a run's figure is
the time from that stamp to the watch's first ``hung`` line (the full report is on disk
by then; its own time is kept too), and whether that line names the culprit alone. Each
run ends by killing its ranks and the watch, or after ``--timeout`` seconds without a
verdict (counted as a miss). Prints a table, the median and 90th percentile, the share
named right, and the load average; ``--json FILE`` keeps the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.live_job import HANGS, fault_time, start_job, stop_job

INTERVALS = (1.0, 2.0, 3.0)
WATCH_ARGS = ("--settle", "0.3", "--wait-missing", "3", "--poll", "0.1")


@dataclass
class Run:
    n: int
    fault: str
    interval: float
    culprit: int
    seconds: float | None = None
    """From the culprit's stamp to the first ``hung`` line (None: no verdict in time)."""
    report_s: float | None = None
    """From the stamp to the full report's modification time."""
    named: list[int] = field(default_factory=list)
    right: bool = False
    group: str = ""
    seq: int | None = None
    states: list[str] = field(default_factory=list)
    note: str = ""


def plan(runs: int) -> list[tuple[str, float, int]]:
    """(fault, interval, culprit) per run: every fault with every interval within 9 runs."""
    out = []
    for n in range(runs):
        fault, interval = HANGS[n % len(HANGS)], INTERVALS[(n // len(HANGS)) % len(INTERVALS)]
        out.append((fault, interval, (5 + 3 * n) % 8))
    return out


def one_run(n: int, fault: str, interval: float, culprit: int, root: Path, timeout: float) -> Run:
    run = Run(n, fault, interval, culprit)
    where = root / f"run{n:02d}"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    dumps = where / "dumps"
    # Three healthy snapshots by the culprit first: it goes wrong between 3 and 4 intervals in.
    job = start_job(dumps, world=8, interval=interval, mode=fault, culprit=culprit, after=3)
    flightdeck = Path(sys.executable).parent / "flightdeck"
    cmd = [str(flightdeck), "watch", str(dumps), "--until-hang", "--json-lines", *WATCH_ARGS]
    cmd += ["--report-dir", str(where / "report")]
    watch = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, dict]] = []

    def read() -> None:
        for text in watch.stdout:
            lines.append((time.time(), json.loads(text)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        reader.join(timeout)
        if reader.is_alive():
            run.note = f"no verdict in {timeout:.0f} s"
    finally:
        watch.kill()
        stop_job(job)
        watch.wait()
        reader.join(5)
        err = watch.stderr.read() if watch.stderr else ""
    stamp = fault_time(dumps)
    run.states = [x["state"] for _, x in lines]
    hung = next(((t, x) for t, x in lines if x["state"] == "hung"), None)
    if stamp is None:
        run.note = run.note or "the culprit never went wrong"
    elif hung is not None:
        t, x = hung
        run.seconds = t - stamp
        if x.get("report"):
            run.report_s = Path(x["report"]).stat().st_mtime - stamp
        run.named = x["ranks"]
        run.right = x["ranks"] == [culprit]
        g = x.get("group") or {}
        run.group, run.seq = f"{g.get('pg_name')} ({g.get('pg_desc')})", x.get("seq")
    elif not run.note:
        run.note = f"the watch ended without a verdict: {err.strip()[-200:]}"
    shutil.rmtree(dumps, ignore_errors=True)  # the report stays
    return run


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.live_stop", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--dir", default="/tmp/fd-live-stop")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it counts as a miss")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    root = Path(args.dir)
    print(f"flightdeck watch DIR --until-hang --json-lines {' '.join(WATCH_ARGS)}; 8 ranks, gloo, CPU")
    print(
        f"{'run':>3}  {'fault':<6} {'every':>5}  {'culprit':>7}  {'to hung line':>12}  {'to report':>9}  named    lines"
    )
    rows: list[Run] = []
    loads = [os.getloadavg()[0]]
    t0 = time.time()
    for n, (fault, interval, culprit) in enumerate(plan(args.runs)):
        r = one_run(n, fault, interval, culprit, root, args.timeout)
        loads.append(os.getloadavg()[0])
        rows.append(r)
        took = "-" if r.seconds is None else f"{r.seconds:.2f} s"
        rep = "-" if r.report_s is None else f"{r.report_s:.2f} s"
        named = f"{r.named}{'' if r.right else ' WRONG'}" if r.seconds is not None else r.note
        print(
            f"{n:>3}  {fault:<6} {interval:>4.0f}s  {culprit:>7}  {took:>12}  {rep:>9}  {named:<8} {' '.join(r.states)}",
            flush=True,
        )
    times = [r.seconds for r in rows if r.seconds is not None]
    right = sum(r.right for r in rows)
    print()
    if times:
        print(
            f"stop to hung line, {len(times)} of {len(rows)} runs with a verdict: "
            f"median {statistics.median(times):.2f} s, 90th percentile {percentile(times, 0.9):.2f} s, "
            f"min {min(times):.2f} s, max {max(times):.2f} s"
        )
        for interval in INTERVALS:
            some = [r.seconds for r in rows if r.seconds is not None and r.interval == interval]
            if some:
                print(f"  dumps every {interval:.0f} s: median {statistics.median(some):.2f} s over {len(some)} runs")
    print(f"named right (the culprit alone): {right} of {len(rows)} ({100 * right / max(1, len(rows)):.0f}%)")
    print(
        f"load average (1 min) {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores; "
        f"{len(rows)} runs in {time.time() - t0:.0f} s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0 if rows and right == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
