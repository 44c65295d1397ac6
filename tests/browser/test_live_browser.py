"""The dashboard's live mode in a real browser: ``flightdeck-dashboard --watch DIR`` while
snapshots arrive in DIR. The page polls on a fragment timer: each new snapshot's line,
state and heatmap appear without a reload, and at the first hung snapshot the page
becomes the full report of it, still the same page; "Watch again" starts afresh.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from harness import CHART_READY, REPO, screenshot

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
SAMPLES = REPO / "sample_dumps"
MARK = "window.__flightdeck_live_mark"
WAIT_MS = 30_000
CHARTS_DRAWN = "n => document.querySelectorAll('[data-testid=stPlotlyChart] .nsewdrag').length >= n"


def add_snapshot(job: Path, name: str, sample: str) -> None:
    """``sample``'s rank files as the snapshot subfolder ``name``, renamed into place whole."""
    hidden = job / f".{name}"
    shutil.copytree(SAMPLES / sample, hidden, ignore=shutil.ignore_patterns("*.json"))
    hidden.rename(job / name)


def shows(page, text: str) -> None:
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=WAIT_MS)


def test_live_mode_follows_the_snapshots_then_shows_the_hang(serve, page, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    add_snapshot(job, "snap-00", "slow_rank.earlier")
    server = serve(APP, "--watch", str(job), "--watch-every", "0.5", "--watch-settle", "0.3")
    loads: list[str] = []  # documents loaded; the URL's query changing in place (?pg=..) loads none
    page.on("load", lambda p: loads.append(p.url))
    page.goto(server.url)
    shows(page, "snap-00  baseline")
    page.evaluate(f"{MARK} = 'not reloaded'")
    loaded = len(loads)

    t0 = time.monotonic()
    add_snapshot(job, "snap-01", "slow_rank")
    shows(page, "snap-01  slow")
    shows(page, "on rank 5 alone: slow, not stuck")
    page.wait_for_selector(CHART_READY, timeout=WAIT_MS)
    shows(page, "Progress per rank class")
    page.wait_for_function(CHARTS_DRAWN, arg=2, timeout=WAIT_MS)  # the timeline and the newest snapshot's heatmap
    seconds_to_line = time.monotonic() - t0
    screenshot(page, "dashboard-live.png")

    add_snapshot(job, "snap-02", "stuck_twice.earlier")
    add_snapshot(job, "snap-03", "stuck_twice")
    shows(page, "Hung at snapshot snap-03")
    shows(page, "rank 5 stuck")
    page.get_by_role("tab", name="Wavefront").wait_for(timeout=WAIT_MS)  # the full report's tabs
    shows(page, "HANG")
    screenshot(page, "dashboard-live-hung.png")

    assert page.evaluate(MARK) == "not reloaded"
    assert len(loads) == loaded == 1, loads

    page.get_by_role("button", name="Watch again").click()  # a restarted job: the newest snapshot is the baseline
    shows(page, "snap-03  baseline")
    assert len(loads) == 1
    assert seconds_to_line < 15
