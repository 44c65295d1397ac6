"""The dashboard in a real browser: a real Streamlit server driven by headless Chromium.

Plotly clicks only reach Python through the transparent scatter overlay, and only a
real browser proves that, so these tests click real pixels computed from the chart's
own axes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import raw_dumps
from harness import ARTIFACTS, CELL_PIXEL_JS, CHART_READY, HEATMAP_PAINTED, REPO, SCRIPT_IDLE, screenshot

import analysis

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
SYNTHETIC_APP = Path(__file__).with_name("synthetic_grid_app.py")


def _wait_idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=timeout)


def _click_cell(page, x: float, y: float) -> None:
    px, py = page.evaluate(CELL_PIXEL_JS, [x, y])
    page.mouse.click(px, py)


def _record(name: str, **timings: float) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "browser-timings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = {k: round(v, 3) for k, v in timings.items()}
    path.write_text(json.dumps(data, indent=2) + "\n")


def _function_name(frame: str) -> str:
    return frame.rsplit(" in ", 1)[-1]


def test_click_suspect_cell_shows_its_call_stack(serve, page, stuck_dumps):
    report = analysis.analyze(stuck_dumps)
    w = report.wavefront
    assert w is not None and report.suspect_ranks, "the sample is a hang with a suspect"
    rank = next((r for r in report.suspect_ranks if r in w.pg_ranks), w.pg_ranks[0])
    seq = int(w.collective_seq_id)
    row = list(report.analysis.groups.groups[w.pg_key].ranks).index(rank)
    # What the page must show, read from the file: the rank's entry at the seq, else its newest in the group.
    entry = raw_dumps.entry_at(stuck_dumps, rank, w.pg_name, seq) or raw_dumps.newest_in_group(
        stuck_dumps, rank, w.pg_name
    )
    frames = raw_dumps.frame_lines(entry)
    assert frames, "gloo sample dumps record call stacks"
    own = [f for f in frames if "/torch/" not in f] or frames
    function = _function_name(own[0])

    server = serve(APP, "--dumps", str(stuck_dumps))
    t0 = time.perf_counter()
    page.goto(server.url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=60_000)
    visible = time.perf_counter() - t0
    page.wait_for_selector(CHART_READY, timeout=30_000)
    _wait_idle(page)
    page.get_by_text(f"seq {seq}").first.wait_for()

    t0 = time.perf_counter()
    _click_cell(page, seq, row)
    page.get_by_text(f"Call stack of rank {rank}").wait_for(timeout=30_000)
    click = time.perf_counter() - t0
    _wait_idle(page)
    code = page.locator('[data-testid="stCode"]', has_text=f"in {function}").first
    code.wait_for(timeout=10_000)
    assert own[0].split(" in ")[0] in code.text_content()
    assert f"rank={rank}" in page.url and f"seq={seq}" in page.url
    screenshot(page, "dashboard-click-stack.png")

    # The URL alone restores the selection.
    t0 = time.perf_counter()
    page.goto(page.url)
    page.get_by_text(f"Call stack of rank {rank}").wait_for(timeout=60_000)
    reload = time.perf_counter() - t0
    _record("stuck_compute", first_visible_s=visible, click_to_stack_s=click, deep_link_s=reload)

    # The postmortem export is built on click and opens without a network.
    page.get_by_role("tab", name="Export").click()
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="HTML report (opens offline)").click()
    html = Path(download.value.path()).read_text()
    assert "Verdict:" in html and "<script src=" not in html and f"Rank {rank}" in html


def test_large_grid_aggregates_and_block_click_opens_region(serve, page):
    server = serve(SYNTHETIC_APP)
    t0 = time.perf_counter()
    page.goto(server.url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=90_000)
    visible = time.perf_counter() - t0
    page.wait_for_selector(CHART_READY, timeout=30_000)
    _wait_idle(page)
    page.get_by_text("each cell = 11 ranks x 16 seqs, showing the most severe state", exact=False).wait_for()
    screenshot(page, "dashboard-large-aggregated.png")

    # Block (rank 700, seq 1500) holds the stuck cell; its region opens at full resolution.
    t0 = time.perf_counter()
    _click_cell(page, 1500, 700)
    page.get_by_text("window: 693:704:1488:1503").wait_for(timeout=60_000)
    _wait_idle(page)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached")
    block = time.perf_counter() - t0
    page.get_by_text("Region: ranks 693-703, seqs 1488-1503").wait_for()

    # In the region, row 7 is rank 700: its wavefront cell.
    page.wait_for_timeout(200)
    _click_cell(page, 1500, 7)
    page.get_by_text("cell: 700 1500").wait_for(timeout=30_000)
    screenshot(page, "dashboard-large-region.png")

    page.get_by_role("button", name="Back to overview").click()
    page.get_by_text("window: none").wait_for(timeout=30_000)
    _record("synthetic_1024x2000", first_visible_s=visible, block_click_to_region_s=block)


def test_uploaded_files_are_analysed(serve, page, stuck_dumps, tmp_path):
    server = serve(APP, "--dumps", str(tmp_path / "nothing-here"))
    page.goto(server.url)
    _wait_idle(page)
    page.get_by_text("Upload files").click()
    page.wait_for_selector('[data-testid="stFileUploaderDropzoneInput"]', state="attached", timeout=30_000)
    files = sorted(str(p) for p in stuck_dumps.glob("rank_*"))
    page.set_input_files('[data-testid="stFileUploaderDropzoneInput"]', files)
    page.get_by_text(f"{len(files)} uploaded files").wait_for(timeout=60_000)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=60_000)
    verdict = analysis.analyze(stuck_dumps).verdict.upper()
    page.get_by_test_id("stMetricValue").get_by_text(verdict, exact=True).wait_for()
