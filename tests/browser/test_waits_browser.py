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


def test_a_receiver_named_on_credit_waits_opens_on_the_credit_matrix(serve, page, tmp_path_factory):
    """A first stage congested on its pipeline receives: only its sender's credit waits show
    it, so the matrix opens on the credit waits, and its hottest cell is that edge."""
    out = tmp_path_factory.mktemp("credits")
    congested, sender = 3, 11  # 16 ranks: 2 stages x 8 replicas; stage 1 of replica 3 sends to it
    write_job(out, 16, [Fault("credit_congestion", (congested,))], ("parquet",), iterations=4, seed=1)
    write_dump_set(out / "dumps", 16, entries=300, culprit=None, fault="none", tp=1, pp=2)
    pw = analyze_proxy_ops(out / "parquet").proxy_waits.waits
    assert pw.culprit_ranks == [congested] and pw.suspect_links == [(sender, congested)]

    server = serve(APP, "--dumps", str(out / "dumps"), "--proxy-ops", str(out / "parquet"))
    page.goto(server.url)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=90_000)
    page.get_by_role("tab", name="Waits").click()
    page.wait_for_selector(".st-key-waits_matrix .nsewdrag", timeout=60_000)
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=60_000)
    assert page.get_by_role("radio", name="send credit wait").is_checked()
    hottest = page.evaluate(
        """() => {
      const gd = document.querySelector('.st-key-waits_matrix .js-plotly-plot');
      const edges = gd._fullData.find(d => d.name === 'edges');
      let best = [-1, null];
      edges.text.forEach((t, i) => { const v = parseFloat(t.replace(/,/g, '')); if (v > best[0]) best = [v, i]; });
      const cd = edges.customdata[best[1]];
      return [best[0], Number(cd[0]), Number(cd[1])];
    }"""
    )
    assert hottest[0] > 2.0, "ms per op of credit waits"
    assert hottest[1:] == [congested, sender], "the hottest cell: the congested receiver's row, its sender's column"
    screenshot(page, "dashboard-waits-credits.png")
