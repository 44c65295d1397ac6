"""The "Waits" tab in a real browser: load dumps with their proxy-op waits, click an edge of
the rank x peer matrix, see that edge's class, root and rows."""

from __future__ import annotations

import pytest
from harness import CHART_READY, REPO, SCRIPT_IDLE, screenshot

from analysis.api import analyze_proxy_ops
from analysis.views.waits import wait_matrix
from benchmarks.proxysim.__main__ import write_job
from benchmarks.proxysim.job import Fault
from benchmarks.synth import write_dump_set

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
SLOW = 9

#: Pixel position of data point (x, y) in the matrix chart (found by its widget key).
MATRIX_PIXEL_JS = """([x, y]) => {
  const gd = document.querySelector('.st-key-waits_matrix .js-plotly-plot');
  const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const L = gd._fullLayout;
  return [r.left + L.xaxis.d2p(x), r.top + L.yaxis.d2p(y)];
}"""


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("waits")
    write_job(out, 16, [Fault("slow_gpu", (SLOW,))], ("parquet",), iterations=4, seed=1)
    write_dump_set(out / "dumps", 16, entries=300, culprit=SLOW, fault="stuck", tp=1, pp=2)
    return out


def test_click_an_edge_of_the_waits_matrix_shows_it(serve, page, job):
    pw = analyze_proxy_ops(job / "parquet").proxy_waits.waits
    assert pw.culprit_ranks == [SLOW]
    edge = pw.edges.loc[pw.edges["waiting"] & (pw.edges["sender"] == SLOW)].iloc[0]
    sender, receiver = int(edge["sender"]), int(edge["receiver"])
    matrix = wait_matrix(pw, "receive wait")
    cell = matrix.cells.loc[(matrix.cells["sender"] == sender) & (matrix.cells["receiver"] == receiver)].iloc[0]

    server = serve(APP, "--dumps", str(job / "dumps"), "--proxy-ops", str(job / "parquet"))
    page.goto(server.url)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=90_000)
    page.wait_for_selector(CHART_READY, timeout=60_000)
    assert page.locator("text", has_text="waits: slow_gpu").count() >= 1, "the heatmap marks the proxy-wait culprit"

    page.get_by_role("tab", name="Waits").click()
    page.get_by_text("Finding: slow GPU").wait_for(timeout=60_000)
    page.wait_for_selector(".st-key-waits_matrix .nsewdrag", timeout=60_000)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=60_000)
    page.locator(".st-key-waits_matrix").scroll_into_view_if_needed()
    px, py = page.evaluate(MATRIX_PIXEL_JS, [float(cell["col"]), float(cell["row"])])
    page.mouse.click(px, py)
    page.get_by_text(f"edge {sender} → {receiver}").wait_for(timeout=30_000)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=60_000)
    page.locator('[data-testid="stDataFrame"]').first.wait_for(timeout=30_000)
    page.get_by_text(f"propagated, wait began at slow_gpu {SLOW}").first.wait_for(timeout=10_000)
    screenshot(page, "dashboard-waits-edge.png")
