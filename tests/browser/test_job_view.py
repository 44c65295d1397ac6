"""The whole job in one picture, in a real browser: the wait-for graph folded by rank class
in the dashboard's Job view (a click on a class opens it, and from there the heatmap), and
the same picture in the offline HTML report written by ``python -m analysis --html``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from harness import CHART_READY, REPO, SCRIPT_IDLE, screenshot

import analysis
from analysis.types import HostMap
from analysis.views.classes import fold

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
#: Data coordinates of the points of the first trace (the classes) of the first plotly chart.
NODES_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  const t = gd.data[0];
  return {x: Array.from(t.x), y: Array.from(t.y), ids: Array.from(t.customdata), drawn: gd.querySelectorAll('.scatterlayer .trace:first-child .point').length};
}"""
#: Pixel position of data point (x, y) in the first plotly chart (in the app or a plain page).
PIXEL_JS = """([x, y]) => {
  const gd = document.querySelector('.js-plotly-plot');
  const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const L = gd._fullLayout;
  return [r.left + L.xaxis.d2p(x), r.top + L.yaxis.d2p(y)];
}"""


def _wait_idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=timeout)


def _culprit_class(report) -> dict:
    (culprit,) = [c for c in report.rank_classes if c["ranks"] == report.suspect_ranks]
    return culprit


def test_job_view_opens_a_class_and_then_the_heatmap(serve, page, stuck_dumps):
    report = analysis.analyze(stuck_dumps, hosts=HostMap(source="test", ranks_per_node=2))
    culprit = _culprit_class(report)
    rank = culprit["ranks"][0]
    host = f"node{rank // 2}"
    server = serve(APP, "--dumps", str(stuck_dumps), "--ranks-per-node", "2")
    page.goto(server.url)
    _wait_idle(page)
    page.get_by_role("tab", name="Job").click()
    page.wait_for_selector(CHART_READY, timeout=60_000)
    _wait_idle(page)
    nodes = page.evaluate(NODES_JS)
    graph = fold(report.rank_classes)
    assert sorted(nodes["ids"]) == sorted(graph.nodes) and nodes["drawn"] == len(graph.nodes)
    screenshot(page, "dashboard-job-view.png")

    # A click on the culprit's node opens its class.
    k = nodes["ids"].index(culprit["id"])
    px, py = page.evaluate(PIXEL_JS, [nodes["x"][k], nodes["y"][k]])
    page.mouse.click(px, py)
    page.get_by_role("heading", name=f"Class {culprit['id']}: 1 rank · suspect").wait_for(timeout=30_000)
    _wait_idle(page)
    page.get_by_text(f"On 1 host: {host}").wait_for(timeout=10_000)
    screenshot(page, "dashboard-job-class.png")

    # From the class into the heatmap, at the rank's place, with its host beside it.
    page.get_by_role("button", name=f"Open rank {rank} in the heatmap").click()
    last = culprit["last_entry"]
    page.get_by_text(f"rank {rank} · seq {last['seq']} · {host}").wait_for(timeout=30_000)
    page.wait_for_selector(CHART_READY, timeout=30_000)
    _wait_idle(page)
    ticks = page.locator(".js-plotly-plot .ytick text").all_text_contents()
    assert any(t.startswith(f"rank {rank} · {host}") for t in ticks), ticks
    assert f"rank={rank}" in page.url
    screenshot(page, "dashboard-job-to-heatmap.png")


def test_html_report_draws_the_job_picture_offline(page, stuck_dumps, tmp_path):
    out = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", str(stuck_dumps), "--html", str(out), "--ranks-per-node", "2", "--quiet"],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    text = out.read_text()
    assert "<script src=" not in text, "plotly.js is inlined: the page needs no network"
    report = analysis.analyze(stuck_dumps, hosts=HostMap(source="test", ranks_per_node=2))
    culprit = _culprit_class(report)
    page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
    page.goto(out.as_uri())
    page.wait_for_selector(".js-plotly-plot .scatterlayer .point", timeout=60_000)
    assert page.locator(".js-plotly-plot").count() == 2, "the class picture and the wavefront heatmap"
    nodes = page.evaluate(NODES_JS)
    assert nodes["drawn"] == len(fold(report.rank_classes).nodes)
    page.get_by_text("Drain, in order of evidence: node2").wait_for()
    page.get_by_text("confidence: high").wait_for()
    k = nodes["ids"].index(culprit["id"])
    px, py = page.evaluate(PIXEL_JS, [nodes["x"][k], nodes["y"][k]])
    page.mouse.click(px, py)
    page.wait_for_function(f"location.hash === '#class-{culprit['id']}'", timeout=10_000)
    screenshot(page, "html-report-job.png")
