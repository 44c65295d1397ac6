"""Time the dashboard on a real dump set in headless Chromium and print the figures.

    python -m benchmarks.dashboard DIR [--chromium /usr/bin/chromium]

Starts the real app (``dashboard/app.py --dumps DIR``) and measures, from the browser:
the first heatmap painted (the wavefront's group, analysis included), a click on the
suspect's cell until its call stack shows, and the largest group (the default group,
every rank) opened by URL until its heatmap is painted. Run a ``python -m analysis DIR``
first to time the dashboard with a warm tables cache, as a second open would be.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from harness import CELL_PIXEL_JS, CHART_READY, CHROMIUM, CHROMIUM_ARGS, HEATMAP_PAINTED, SCRIPT_IDLE, Server

import analysis


def _idle(page) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=600_000)


def measure(dump_dir: str, chromium: str = CHROMIUM) -> dict[str, float | str]:
    report = analysis.analyze(dump_dir)
    w = report.wavefront
    if w is None or not report.suspect_ranks:
        raise SystemExit(f"{dump_dir}: no wavefront to click (verdict {report.verdict})")
    groups = report.analysis.groups.groups
    rank = next((r for r in report.suspect_ranks if r in w.pg_ranks), w.pg_ranks[0])
    row = list(groups[w.pg_key].ranks).index(rank)
    seq = int(w.collective_seq_id)
    largest = max(groups.values(), key=lambda g: len(g.ranks))

    from playwright.sync_api import sync_playwright

    out: dict[str, float | str] = {
        "ranks": report.ranks_loaded,
        "largest_group": f"{largest.key} ({len(largest.ranks)} ranks)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(REPO / "dashboard" / "app.py", ["--dumps", dump_dir], Path(tmp) / "server.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
                t0 = time.perf_counter()
                page.goto(server.url)
                page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=600_000)
                out["first_heatmap_s"] = time.perf_counter() - t0
                page.wait_for_selector(CHART_READY, timeout=60_000)
                _idle(page)

                x, y = page.evaluate(CELL_PIXEL_JS, [seq, row])
                t0 = time.perf_counter()
                page.mouse.click(x, y)
                page.get_by_text(f"Call stack of rank {rank}").wait_for(timeout=120_000)
                out["click_to_stack_s"] = time.perf_counter() - t0
                _idle(page)

                query = urllib.parse.urlencode({"pg": largest.key})
                t0 = time.perf_counter()
                page.goto(f"{server.url}/?{query}")
                page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=600_000)
                _idle(page)
                out["largest_group_heatmap_s"] = time.perf_counter() - t0
                browser.close()
        finally:
            server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dashboard", description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--chromium", default=CHROMIUM)
    args = ap.parse_args(argv)
    for name, value in measure(args.dir, args.chromium).items():
        print(f"{name:26} {value:.2f}" if isinstance(value, float) else f"{name:26} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
