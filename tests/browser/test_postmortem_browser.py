"""The page as a team reads it in a postmortem, in a real browser at 1280 and 1920 px: no value
cut, the never-issued rank drawn as a mark (not a bar), each stack named by its seq and op, and
a long group opening on its wavefront however far the peers' buffers ran past it; and on 1,024
ranks whose peers ran ahead, every tab rendering whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import CELL_PIXEL_JS, CHART_READY, HEATMAP_PAINTED, REPO, RUN_AHEAD_CULPRIT, RUN_AHEAD_SEQS, SCRIPT_IDLE
from layout_checks import check_layered_picture
from playwright.sync_api import Error as PlaywrightError

import analysis
from analysis.views.html import build_html
from benchmarks.synth import write_dump_set

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"
LARGE = REPO / "sample_dumps" / "large_32_stuck"
WIDTHS = (1280, 1920)

#: Every element whose text must be whole: its content fits its box (or it wraps).
OVERFLOWS_JS = """(selector) => [...document.querySelectorAll(selector)].map(el => ({
  text: el.value ?? el.innerText, scroll: el.scrollWidth, client: el.clientWidth}))"""
#: The first plotly chart's x range and traces (type, name, x).
CHART_JS = """() => {
  const gd = document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot');
  return {range: gd._fullLayout.xaxis.range,
          traces: gd.data.map(t => ({type: t.type, name: t.name || '', x: (Array.isArray(t.x) || ArrayBuffer.isView(t.x) ? Array.from(t.x) : []).map(String)}))};
}"""


def _idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=timeout)


def _whole(page, selector: str) -> list[dict]:
    found = page.evaluate(OVERFLOWS_JS, selector)
    assert found, f"nothing matches {selector}"
    cut = [f for f in found if f["scroll"] > f["client"] + 1]
    assert not cut, f"text cut in {selector}: {cut}"
    return found


@pytest.fixture()
def wide_page(browser):
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": 1000})
    yield context.new_page()
    context.close()


def test_verdict_picker_and_wavefront_whole_at_1280_and_1920(serve, wide_page):
    page = wide_page
    report = analysis.analyze(LARGE)
    w = report.wavefront
    suspect = report.suspect_ranks[0]
    failure = report.failure_class.replace("_", " ")
    server = serve(APP, "--dumps", str(LARGE))
    page.goto(server.url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=90_000)
    _idle(page)
    label = f"group {w.pg_name} ({w.pg_desc}, ranks "
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)
        values = _whole(page, '[data-testid="stMetricValue"] > div')
        assert failure in [v["text"].strip() for v in values], values
        picker = _whole(page, 'input[aria-label="Process group"]')
        assert picker[0]["text"].startswith(label) and picker[0]["text"].endswith(")"), picker

    # The suspect's cell: its own stack (from its newest entry) and the majority's, each named.
    group = report.analysis.groups.groups[w.pg_key]
    px, py = page.evaluate(CELL_PIXEL_JS, [int(w.collective_seq_id), list(group.ranks).index(suspect)])
    page.mouse.click(px, py)
    heading = page.get_by_text(f"Call stack of rank {suspect} at seq ")
    heading.wait_for(timeout=30_000)
    _idle(page)
    diff = page.get_by_text(f"differs from the majority's at seq {w.collective_seq_id} ({w.op}")
    diff.wait_for(timeout=10_000)  # the diff says what it compares
    assert page.get_by_text("the diff compares its newest entry with the majority's").is_visible()
    page.wait_for_selector('[data-testid="stCode"] pre', timeout=10_000)
    _whole(page, '[data-testid="stCode"] pre')

    page.get_by_role("tab", name="Wavefront").click()
    page.get_by_text("Arrival at the wavefront collective").wait_for(timeout=30_000)
    page.wait_for_selector(CHART_READY, timeout=30_000)
    _idle(page)
    assert page.get_by_text(f"Never issued it: rank {suspect}", exact=True).is_visible()
    traces = page.evaluate(CHART_JS)["traces"]
    bars = {x for t in traces if t["type"] == "bar" for x in t["x"]}
    marks = [t for t in traces if t["name"] == "never issued"]
    assert marks and marks[0]["type"] == "scatter" and str(suspect) in marks[0]["x"]
    assert str(suspect) not in bars, "a rank that never issued it has no duration to draw"


def test_html_export_cuts_no_cell_or_stack(wide_page):
    page = wide_page
    page.set_content(build_html(analysis.analyze(LARGE)))
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        fits = page.evaluate(
            """() => [...document.querySelectorAll('table.tbl, pre')].map(el =>
                 [el.tagName, el.scrollWidth, el.getBoundingClientRect().width, document.body.clientWidth])"""
        )
        assert fits and all(s <= c + 1 and c <= body for _, s, c, body in fits), fits


@pytest.fixture(scope="module")
def run_ahead(tmp_path_factory) -> Path:
    """A small NCCL-shaped set whose stuck rank's peers enqueued 120 more collectives past the wavefront."""
    out = tmp_path_factory.mktemp("run_ahead")
    write_dump_set(out, 32, entries=300, seed=1, run_ahead=120, processes=1)
    return out


def _first_window(page, url: str, painted_ms: int, ready_ms: int) -> tuple[float, float]:
    """Open the page and return the x range of the first heatmap once it is drawn."""
    page.goto(url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=painted_ms)
    page.wait_for_selector(CHART_READY, timeout=ready_ms)
    _idle(page)
    lo, hi = page.evaluate(CHART_JS)["range"]
    return lo, hi


def test_first_heatmap_holds_the_wavefront_past_a_run_ahead(serve, wide_page, run_ahead):
    page = wide_page
    report = analysis.analyze(run_ahead)
    wave = int(report.wavefront.collective_seq_id)
    lo, hi = _first_window(page, serve(APP, "--dumps", str(run_ahead)).url, 90_000, 30_000)
    assert lo < wave < hi, f"wavefront seq {wave} outside the first window {lo}-{hi}"
    newest = page.get_by_role("button", name="Newest 40 seqs")
    newest.click()
    page.get_by_text("Newest 40 of ").wait_for(timeout=30_000)
    _idle(page)
    page.wait_for_selector(CHART_READY, timeout=30_000)
    lo2, hi2 = page.evaluate(CHART_JS)["range"]
    assert lo2 > wave + 60 and hi2 > wave + 119, "one click shows the newest seqs, 120 past the wavefront"
    page.get_by_role("button", name="The wavefront").click()
    page.get_by_text("the wavefront and the first divergence").wait_for(timeout=30_000)


#: Every table on the page: each column's width (from the grid's own columns) against the widest
#: text among its header and the cells drawn, measured in the grid's font (cells are canvas-drawn;
#: the grid's accessible table holds their text).
TABLE_CELLS_JS = """(frame) => {
  const canvas = frame.querySelector('canvas[data-testid=data-grid-canvas]');
  let fiber = canvas[Object.keys(canvas).find(k => k.startsWith('__reactFiber'))], columns = null;
  for (; fiber && !columns; fiber = fiber.return) {
    const p = fiber.memoizedProps;
    if (p && Array.isArray(p.columns) && p.columns.length && 'width' in p.columns[0]) columns = p.columns;
  }
  const style = getComputedStyle(frame.querySelector('.gdg-s1dgczr6').parentElement.parentElement);
  const pad = parseFloat(style.getPropertyValue('--gdg-cell-horizontal-padding')) || 8;
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${style.getPropertyValue('--gdg-base-font-style')} ${style.getPropertyValue('--gdg-font-family')}`;
  const width = new Map((columns || []).map(c => [c.title, c.width]));
  const heads = {}, cells = {};
  frame.querySelectorAll('table[role=grid] th').forEach(h => { heads[h.getAttribute('aria-colindex')] = h.textContent; });
  frame.querySelectorAll('table[role=grid] td').forEach(c => {
    const i = c.getAttribute('aria-colindex');
    (cells[i] = cells[i] || []).push(c.textContent);
  });
  return Object.entries(heads).filter(([, title]) => width.has(title)).map(([i, title]) => {
    const widest = [title, ...(cells[i] || [])].reduce((a, s) => ctx.measureText(s).width > ctx.measureText(a).width ? s : a, '');
    return {column: title, text: widest, need: ctx.measureText(widest).width + 2 * pad, width: width.get(title),
            rows: (cells[i] || []).length};
  });
}"""
#: Every text drawn by the first plotly chart's text traces.
CHART_TEXT_JS = """() => document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot').data
  .filter(t => t.mode === 'text').flatMap(t => Array.from(t.text || []).map(String))"""
TABS = ("Heatmap", "Job", "Wavefront", "All groups", "Waits", "Export")


def _cells_whole(page) -> int:
    """Asserts every table's drawn cells fit their columns; returns how many columns were checked.

    A table the app draws again while it is read (a resize reruns the layout) is detached
    under the reader: it is read again, up to three times, as the next one drawn."""
    columns = []
    for frame in page.locator('[data-testid="stDataFrame"]').all():
        for attempt in range(3):
            try:
                frame.scroll_into_view_if_needed()
                frame.locator('canvas[data-testid="data-grid-canvas"]').wait_for(timeout=30_000)
                frame.locator('table[role="grid"] th').first.wait_for(state="attached", timeout=30_000)
                columns += frame.evaluate(TABLE_CELLS_JS)
                break
            except PlaywrightError as e:
                if "not attached" not in str(e) or attempt == 2:
                    raise
                _idle(page, 60_000)
    cut = [c for c in columns if c["need"] > c["width"] + 1]
    assert not cut, f"table cells cut: {cut}"
    return len(columns)


def test_a_thousand_ranks_run_ahead_every_tab_whole_at_1280_and_1920(serve, wide_page, run_ahead_1024):
    """The issue's scale case: 1,024 ranks whose stuck rank's peers ran past the wavefront."""
    page = wide_page
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    report = analysis.analyze(run_ahead_1024)  # also fills the tables cache the server reads
    wave, suspects = int(report.wavefront.collective_seq_id), [str(r) for r in report.suspect_ranks]
    assert suspects == [str(RUN_AHEAD_CULPRIT)]
    entries = report.tables["entries"]
    newest = int(entries.loc[entries["pg_name"] == report.wavefront.pg_name, "collective_seq_id"].max())
    assert newest >= wave + RUN_AHEAD_SEQS, "the peers' buffers run past the wavefront"
    row = list(report.analysis.groups.groups[report.wavefront.pg_key].ranks).index(RUN_AHEAD_CULPRIT)
    assert check_layered_picture(report.rank_classes), "the Job picture has roots, each with its reason"
    reasons = {f"root: {c['root'].split()[0]}" for c in report.rank_classes if c["root"]}
    del report, entries
    lo, hi = _first_window(page, serve(APP, "--dumps", str(run_ahead_1024)).url, 240_000, 60_000)
    assert lo < wave < hi < newest, f"wavefront seq {wave} (newest {newest}) against the first window {lo}-{hi}"

    columns = dict.fromkeys(TABS, 0)
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        _idle(page, 180_000)
        panel = page.locator('[role="tabpanel"]:visible')
        panel.locator("[data-testid]").first.wait_for(timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0, f"{tab}: an exception is shown"
        assert panel.inner_text().strip(), f"{tab} is empty"
        if tab == "Heatmap":  # the suspect's cell: its entry, stacks and newest entries below the chart
            page.mouse.click(*page.evaluate(CELL_PIXEL_JS, [wave, row]))
            page.get_by_text(f"Call stack of rank {RUN_AHEAD_CULPRIT} at seq ").wait_for(timeout=60_000)
            _idle(page, 60_000)
            page.wait_for_selector('[data-testid="stCode"] pre', timeout=30_000)
        if tab == "Job":  # the picture as drawn names every root's reason
            page.wait_for_selector(CHART_READY, timeout=60_000)
            drawn = " ".join(page.evaluate(CHART_TEXT_JS))
            assert all(r in drawn for r in reasons), (reasons, drawn)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(300)
            values = _whole(page, '[data-testid="stMetricValue"] > div')
            assert suspects[0] in [v["text"].strip() for v in values], values
            columns[tab] += _cells_whole(page)
            if tab == "Heatmap":
                _whole(page, 'input[aria-label="Process group"]')
                _whole(page, '[data-testid="stCode"] pre')
                lo, hi = page.evaluate(CHART_JS)["range"]
                assert lo < wave < hi, f"at {width} px the wavefront seq {wave} left the window {lo}-{hi}"
        page.set_viewport_size({"width": WIDTHS[0], "height": 1000})
    assert columns["Heatmap"] and columns["Job"] and columns["All groups"], f"table columns checked: {columns}"
    print(f"table columns checked per tab (both widths): {columns}")
    assert not errors, f"the page raised: {errors}"
