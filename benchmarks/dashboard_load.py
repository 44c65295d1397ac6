"""Open a large dump set in the dashboard many times in a row, on a busy machine.

    python -m benchmarks.dashboard_load [DIR] [--tries 10] [--burn N] [--timeout 300]

Each try starts a fresh server (``dashboard/app.py --dumps DIR``) on an empty tables
cache, opens the page in headless Chromium, and counts the seconds until the verdict
shows, or calls the try "hung" after ``--timeout``; then it stops the server with
SIGTERM and counts the seconds until it exits (killed, and reported, after 10 s).
Meanwhile ``--burn`` processes (default: one per core) spin on the CPU, as a training
job's data loaders or another benchmark would. Without DIR, a 1,024-rank set (2,000
entries per rank, rank 77 stuck: about 0.45 GB) is written to a temporary folder.

Prints one line per try and a summary; the exit status is 1 when any try hung or any
server ignored SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from harness import CHROMIUM, CHROMIUM_ARGS, Server, alive, descendants, screenshot

APP = REPO / "dashboard" / "app.py"
LOADED = '[data-testid="stMetricValue"]'
PROGRESS = '[data-testid="stProgress"]'
EXIT_S = 10.0


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _make_dumps(out: Path) -> Path:
    cmd = [sys.executable, "-m", "benchmarks.synth", str(out), "--ranks", "1024", "--entries", "2000"]
    subprocess.run([*cmd, "--fault", "stuck", "--culprit", "77"], check=True, cwd=REPO, timeout=1800)
    return out


def _stop(server: Server) -> tuple[float, bool, int]:
    """SIGTERM; (seconds to exit, whether it exited by itself, processes left behind)."""
    below = descendants(server.proc.pid)
    t0 = time.monotonic()
    server.proc.terminate()
    try:
        server.proc.wait(EXIT_S)
        exited = True
    except subprocess.TimeoutExpired:
        exited = False
    took = time.monotonic() - t0
    server.stop()
    deadline = time.monotonic() + 5
    while alive(below) and time.monotonic() < deadline:
        time.sleep(0.1)
    return took, exited, len(alive(below))


def one_try(browser, dumps: Path, work: Path, index: int, timeout_s: float) -> dict:
    cache = work / f"cache{index}"
    cache.mkdir()
    log = work / f"server{index}.log"
    t0 = time.monotonic()
    server = Server(APP, ["--dumps", str(dumps)], log, env={"FLIGHTDECK_CACHE_DIR": str(cache)})
    row: dict = {"try": index, "started_s": time.monotonic() - t0}
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    try:
        page = context.new_page()
        t1 = time.monotonic()
        page.goto(server.url)
        try:
            page.wait_for_selector(LOADED, timeout=timeout_s * 1000)
            row["loaded_s"] = time.monotonic() - t1
            suspects = page.locator('[data-testid="stMetric"]', has_text="Suspect ranks").locator(LOADED)
            row["suspects"] = suspects.inner_text(timeout=30_000)
        except Exception:  # noqa: BLE001  (playwright's TimeoutError: the try hung)
            row["loaded_s"] = None
            row["bar"] = page.locator(PROGRESS).count() > 0
            row["screenshot"] = str(screenshot(page, f"dashboard-load-hung-{index}.png"))
    finally:
        context.close()
        row["exit_s"], row["exited"], row["left"] = _stop(server)
    row["log"] = str(log)
    return row


def _line(row: dict) -> str:
    if row["loaded_s"] is None:
        what = f"HUNG (no verdict after the timeout; progress bar {'shown' if row['bar'] else 'absent'})"
    else:
        what = f"loaded in {row['loaded_s']:6.1f} s (suspect ranks {row['suspects']})"
    stop = f"exited {row['exit_s']:.1f} s after SIGTERM" if row["exited"] else "IGNORED SIGTERM (killed)"
    left = f", {row['left']} process(es) left behind" if row["left"] else ""
    return f"try {row['try']:2d}: server up in {row['started_s']:4.1f} s, {what}; {stop}{left}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dashboard_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps", nargs="?", help="dump folder (default: a 1,024-rank set made in a temporary folder)")
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--burn", type=int, default=None, help="CPU-burning processes (default: one per core)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a try is called hung")
    parser.add_argument("--chromium", default=CHROMIUM)
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    burn = _cores() if args.burn is None else max(0, args.burn)
    with tempfile.TemporaryDirectory(prefix="flightdeck-dashboard-load-") as tmp:
        work = Path(tmp)
        dumps = Path(args.dumps) if args.dumps else _make_dumps(work / "dumps")
        files = sum(1 for f in dumps.iterdir() if f.is_file())
        size = sum(f.stat().st_size for f in dumps.iterdir() if f.is_file())
        print(
            f"{dumps}: {files} files, {size / 1e9:.2f} GB; {args.tries} tries, {burn} CPU burner(s) on {_cores()} cores"
        )
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burn)]
        rows = []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
                try:
                    for index in range(1, args.tries + 1):
                        row = one_try(browser, dumps, work, index, args.timeout)
                        rows.append(row)
                        print(_line(row), flush=True)
                finally:
                    browser.close()
        finally:
            for proc in burners:
                proc.kill()
                proc.wait()
    loaded = [r["loaded_s"] for r in rows if r["loaded_s"] is not None]
    hung = len(rows) - len(loaded)
    ignored = sum(not r["exited"] for r in rows)
    left = sum(r["left"] for r in rows)
    summary = f"{len(rows)} tries: {len(loaded)} loaded, {hung} hung"
    if loaded:
        summary += (
            f"; seconds to the verdict min {min(loaded):.1f} / median {statistics.median(loaded):.1f}"
            f" / max {max(loaded):.1f}"
        )
    summary += f"; SIGTERM ignored {ignored}x, slowest exit {max(r['exit_s'] for r in rows):.1f} s"
    summary += f"; processes left behind {left}"
    print(summary)
    return 1 if hung or ignored or left else 0


if __name__ == "__main__":
    raise SystemExit(main())
