"""Opening a 1,024-rank folder with an empty cache, in a real browser, several times over.

The load runs in a thread of its own and the page shows a bar of files read; a server
whose load hung (worker processes forked from a multi-threaded server) never left the
spinner and ignored SIGTERM. Each try here starts a fresh server on a fresh cache, waits
for the verdict, and stops the server with SIGTERM.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from harness import REPO, RUN_AHEAD_CULPRIT, Server, alive, descendants, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

APP = REPO / "dashboard" / "app.py"
PROGRESS = '[data-testid="stProgress"]'
LOADED_S = 180
EXIT_S = 10


@pytest.fixture(scope="module")
def big_dumps(run_ahead_1024) -> Path:
    """1,024 ranks x 2,000 entries (about 0.45 GB), rank 77 stuck (the session's set, shared with
    the postmortem page's test)."""
    return run_ahead_1024


def _start(dumps: Path, tmp: Path, name: str) -> Server:
    cache = tmp / f"{name}-cache"
    cache.mkdir()
    return Server(APP, ["--dumps", str(dumps)], tmp / f"{name}.log", env={"FLIGHTDECK_CACHE_DIR": str(cache)})


def _stop_within(server: Server, seconds: float) -> float:
    """SIGTERM the server; seconds until it exited (it is killed, and the test fails, past ``seconds``)."""
    children = descendants(server.proc.pid)
    t0 = time.monotonic()
    server.proc.terminate()
    try:
        server.proc.wait(seconds)
    except subprocess.TimeoutExpired:
        server.stop()
        pytest.fail(f"the server ignored SIGTERM for {seconds} s")
    took = time.monotonic() - t0
    server.stop()
    deadline = time.monotonic() + 5
    while alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(children), f"left behind: {alive(children)}"
    return took


def _suspect_shown(page) -> None:
    page.get_by_test_id("stMetricValue").get_by_text(str(RUN_AHEAD_CULPRIT), exact=True).wait_for(
        timeout=LOADED_S * 1000
    )


@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_a_thousand_ranks_load_with_progress_and_the_server_stops(browser, big_dumps, tmp_path, attempt):
    server = _start(big_dumps, tmp_path, f"try{attempt}")
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    try:
        page = context.new_page()
        t0 = time.monotonic()
        page.goto(server.url)
        page.wait_for_selector(PROGRESS, timeout=60_000)
        page.get_by_text("files read", exact=False).first.wait_for(timeout=LOADED_S * 1000)
        _suspect_shown(page)
        loaded_s = time.monotonic() - t0
        assert page.locator(PROGRESS).count() == 0
        screenshot(page, f"dashboard-load-1024-try{attempt}.png")
    finally:
        context.close()
    took = _stop_within(server, EXIT_S)
    print(f"try {attempt}: loaded in {loaded_s:.1f} s, server exited {took:.1f} s after SIGTERM")


def test_cancel_during_the_load_and_load_again(browser, big_dumps, tmp_path):
    server = _start(big_dumps, tmp_path, "cancel")
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    try:
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_selector(PROGRESS, timeout=60_000)
        page.get_by_role("button", name="Cancel").click()
        page.get_by_text("was cancelled", exact=False).wait_for(timeout=30_000)
        assert page.locator(PROGRESS).count() == 0
        assert page.get_by_test_id("stMetricValue").count() == 0
        screenshot(page, "dashboard-load-cancelled.png")
        page.get_by_role("button", name="Load again").click()
        page.wait_for_selector(PROGRESS, timeout=30_000)
    finally:
        context.close()
    _stop_within(server, EXIT_S)  # while the second load runs
