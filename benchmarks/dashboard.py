"""Time the dashboard on a real dump set in headless Chromium and print the figures.

    python -m benchmarks.dashboard DIR [--chromium /usr/bin/chromium] [--group-ranks 1024] [--clicks 4]

Starts the real app (``dashboard/app.py --dumps DIR``) and measures, from the browser:
the first heatmap painted (the wavefront's group, analysis included); a click on the
suspect's cell until its call stack shows (when that group is drawn aggregated, the
suspect's block is clicked open first), then clicks on neighbouring ranks' cells; the
group of ``--group-ranks`` ranks with the most sequence numbers opened by URL, then all
its seqs shown (the page's "Show all" button, and by URL); and the largest group (every
rank) opened by URL until its heatmap is painted.

Each step's server time comes from the app itself: the server runs with
``FLIGHTDECK_TIMINGS`` set (``dashboard/timings.py``), so every script run appends its
wall time to a JSON-lines file, and the run a step triggered is read back from it. Run a
``python -m analysis DIR`` first to time the dashboard with a warm tables cache, as a
second open would be.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from harness import CELL_PIXEL_JS, CHART_READY, CHROMIUM, CHROMIUM_ARGS, HEATMAP_PAINTED, SCRIPT_IDLE, Server

import analysis
from analysis.views.grid import group_grid
from dashboard.timings import ENV as TIMINGS_ENV

WAIT_MS = 600_000
#: True once the first chart's heatmap is painted with an x axis at least ``n`` seqs wide.
X_SPAN_JS = """(n) => {
  const gd = document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.querySelector('.heatmaplayer image')) return false;
  const r = gd._fullLayout.xaxis.range;
  return Math.abs(r[1] - r[0]) >= n;
}"""
HEATMAP_CAPTION = '[data-testid="stCaptionContainer"]'


def _idle(page) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=WAIT_MS)


def _painted(page) -> None:
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=WAIT_MS)


def _caption(page) -> str:
    """The heatmap's caption: how many ranks x seqs, and whether they are aggregated."""
    return page.locator(HEATMAP_CAPTION, has_text="sequence numbers").first.inner_text(timeout=WAIT_MS)


def _runs(log: Path, since: float) -> list[dict]:
    """Script runs the server logged that started at or after ``since`` (time.time())."""
    if not log.exists():
        return []
    runs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in runs if r["start"] >= since]


def _run(log: Path, since: float, cell: tuple[int, int] | None = None) -> tuple[dict, int]:
    """(the script run a step triggered, how many runs started since ``since``): the first
    completed run, or with ``cell`` the completed run that selected that cell."""
    runs = _runs(log, since)
    for r in runs:
        if r["ended"] != "done":
            continue
        if cell is None or (tuple(r["cell"] or ()) == cell and tuple(r["before"]["cell"] or ()) != cell):
            return r, len(runs)
    raise RuntimeError(f"no completed script run found in {log} since {since} (cell {cell}): {runs}")


def _goto(page, url: str, log: Path) -> tuple[float, float, str]:
    """Navigate and wait for the heatmap: (browser s to painted, server ms of the run, caption)."""
    since = time.time()
    t0 = time.perf_counter()
    page.goto(url)
    _painted(page)
    took = time.perf_counter() - t0
    _idle(page)
    return took, _run(log, since)[0]["ms"], _caption(page)


def _click(page, log: Path, seq: int, y: int, rank: int) -> tuple[float, float, float, float, int]:
    """Click cell (seq, row y) of the chart: (browser s to the stack, browser s to idle,
    server ms of the run it triggered, ms from the click to that run starting, runs since)."""
    x_px, y_px = page.evaluate(CELL_PIXEL_JS, [seq, y])
    since = time.time()
    t0 = time.perf_counter()
    page.mouse.click(x_px, y_px)
    page.get_by_text(f"Call stack of rank {rank}").wait_for(timeout=120_000)
    stack = time.perf_counter() - t0
    _idle(page)
    idle = time.perf_counter() - t0
    page.wait_for_selector(CHART_READY, timeout=60_000)
    run, n_runs = _run(log, since, (rank, seq))
    return stack, idle, float(run["ms"]), (run["start"] - since) * 1000, n_runs


def _window(url: str) -> tuple[int, int, int, int] | None:
    """The open region (row0, row1, seq0, seq1) from the page's URL, if any."""
    text = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("window")
    return tuple(int(x) for x in text[0].split(":")) if text else None  # type: ignore[return-value]


def _drawn(caption: str) -> str:
    """'R ranks x S seqs', and how they are drawn, from a heatmap caption."""
    m = re.search(r"(\d+) ranks x (\d+) sequence numbers(, aggregated: each cell = (\d+) ranks? x (\d+) seq)?", caption)
    if m is None:
        return caption
    shown = f"{m[1]} ranks x {m[2]} seqs"
    return f"{shown}, aggregated in blocks of {m[4]}x{m[5]}" if m[3] else f"{shown}, one cell per (rank, seq)"


def _targets(dump_dir: str, group_ranks: int) -> dict:
    """What to click and open, from the library's own analysis of the set."""
    report = analysis.analyze(dump_dir)
    w = report.wavefront
    if w is None or not report.suspect_ranks:
        raise SystemExit(f"{dump_dir}: no wavefront to click (verdict {report.verdict})")
    a = report.analysis
    groups = a.groups.groups
    members = [int(r) for r in groups[w.pg_key].ranks]
    rank = next((r for r in report.suspect_ranks if r in w.pg_ranks), w.pg_ranks[0])
    largest = max(groups.values(), key=lambda g: len(g.ranks))
    sized = {g.key: group_grid(a, g.key) for g in groups.values() if len(g.ranks) == group_ranks}
    big = max(sized, key=lambda k: len(sized[k].seqs), default=None)
    seqs = sized[big].seqs if big is not None else []
    return {
        "ranks": report.ranks_loaded,
        "rank": int(rank),
        "row": members.index(rank),
        "seq": int(w.collective_seq_id),
        "members": members,
        "wavefront_group": f"{w.pg_key} ({len(members)} ranks)",
        "largest": largest.key,
        "largest_ranks": len(largest.ranks),
        "big": big,
        "big_seqs": len(seqs),
        # The whole grid, as the page's "Show all N seqs" button opens it.
        "big_window": f"0:{group_ranks}:{int(seqs[0])}:{int(seqs[-1])}" if len(seqs) else None,
    }


def measure(
    dump_dir: str, chromium: str = CHROMIUM, group_ranks: int = 1024, clicks: int = 4
) -> dict[str, float | str]:
    # In a child process, so the report's memory is returned before the server loads its own.
    with ProcessPoolExecutor(max_workers=1) as pool:
        tg = pool.submit(_targets, dump_dir, group_ranks).result()
    rank, row, seq = tg["rank"], tg["row"], tg["seq"]
    big = tg["big"]

    from playwright.sync_api import sync_playwright

    out: dict[str, float | str] = {
        "ranks": tg["ranks"],
        "wavefront_group": tg["wavefront_group"],
        "largest_group": f"{tg['largest']} ({tg['largest_ranks']} ranks)",
    }
    if big is not None:
        out[f"group_{group_ranks}"] = f"{big} ({group_ranks} ranks x {tg['big_seqs']} seqs)"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "runs.jsonl"
        server = Server(
            REPO / "dashboard" / "app.py",
            ["--dumps", dump_dir],
            Path(tmp) / "server.log",
            env={TIMINGS_ENV: str(log)},
        )
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
                took, ms, caption = _goto(page, server.url, log)
                out["first_heatmap_s"] = took
                out["first_heatmap_server_s"] = ms / 1000
                out["first_heatmap_drawn"] = _drawn(caption)
                page.wait_for_selector(CHART_READY, timeout=60_000)

                # An aggregated view opens a block on a click; open the suspect's, then click its cell.
                y, region = row, None
                for _ in range(3):
                    if "aggregated" not in _caption(page):
                        break
                    x_px, y_px = page.evaluate(CELL_PIXEL_JS, [seq, y])
                    since = time.time()
                    page.mouse.click(x_px, y_px)
                    page.get_by_role("button", name="Back to overview").wait_for(timeout=WAIT_MS)
                    _idle(page)
                    page.wait_for_selector(CHART_READY, timeout=60_000)
                    out["block_click_server_ms"] = _run(log, since)[0]["ms"]
                    region = _window(page.url)
                    y = row - region[0] if region else row
                if "aggregated" in _caption(page):
                    raise RuntimeError(f"the suspect's cell is still aggregated: {_caption(page)}")

                first = _click(page, log, seq, y, rank)
                out["click_to_stack_s"], out["click_to_idle_s"] = first[0], first[1]
                out["click_server_ms"], out["click_to_run_start_ms"] = first[2], first[3]
                if first[4] != 1:
                    out["click_server_runs"] = str(first[4])
                # Then other ranks' cells at the same seq, the way one compares neighbours.
                offset = region[0] if region else 0
                n_rows = int(re.search(r"(\d+) ranks x", _caption(page))[1])
                members = tg["members"]
                others = [k for k in (y + 1, y - 1, y + 2, y - 2, y + 3, y - 3) if 0 <= k < n_rows][: clicks - 1]
                more = [_click(page, log, seq, k, int(members[offset + k])) for k in others]
                if more:
                    out["next_clicks_to_stack_s"] = statistics.median(c[0] for c in more)
                    out["next_clicks_server_ms"] = statistics.median(c[2] for c in more)
                    out["next_clicks"] = str(len(more))

                if big is not None:
                    took, ms, caption = _goto(page, f"{server.url}/?{urllib.parse.urlencode({'pg': big})}", log)
                    out[f"group_{group_ranks}_s"] = took
                    out[f"group_{group_ranks}_server_s"] = ms / 1000
                    out[f"group_{group_ranks}_drawn"] = _drawn(caption)
                    button = page.get_by_role("button", name=re.compile(r"^Show all \d+ seqs$"))
                    if tg["big_window"] and button.count():
                        # In the page, as a user does: the button, until every seq is painted.
                        since = time.time()
                        t0 = time.perf_counter()
                        button.click()
                        page.wait_for_function(X_SPAN_JS, arg=0.9 * tg["big_seqs"], timeout=WAIT_MS)
                        out[f"group_{group_ranks}_show_all_s"] = time.perf_counter() - t0
                        _idle(page)
                        out[f"group_{group_ranks}_show_all_server_s"] = _run(log, since)[0]["ms"] / 1000
                    if tg["big_window"]:
                        query = urllib.parse.urlencode({"pg": big, "window": tg["big_window"]})
                        took, ms, caption = _goto(page, f"{server.url}/?{query}", log)
                        out[f"group_{group_ranks}_all_seqs_s"] = took
                        out[f"group_{group_ranks}_all_seqs_server_s"] = ms / 1000
                        out[f"group_{group_ranks}_all_seqs_drawn"] = _drawn(caption)

                took, ms, caption = _goto(page, f"{server.url}/?{urllib.parse.urlencode({'pg': tg['largest']})}", log)
                out["largest_group_heatmap_s"] = took
                out["largest_group_server_s"] = ms / 1000
                out["largest_group_drawn"] = _drawn(caption)
                browser.close()
        finally:
            server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dashboard", description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--chromium", default=CHROMIUM)
    ap.add_argument("--group-ranks", type=int, default=1024, help="time the group of this many ranks (default 1024)")
    ap.add_argument("--clicks", type=int, default=4, help="cells clicked: the suspect's, then its neighbours'")
    args = ap.parse_args(argv)
    for name, value in measure(args.dir, args.chromium, args.group_ranks, args.clicks).items():
        if name.endswith("_ms"):
            print(f"{name:32} {value:.1f}")
        else:
            print(f"{name:32} {value:.2f}" if isinstance(value, float) else f"{name:32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
