"""Hostile input in a real browser: dump text is shown as text, and browser tabs never share data.

Stack frames, process-group descriptions and file names come from the dumps, so whoever
wrote a dump chooses them. Here they carry HTML and Markdown that would run script or
draw elements if any part of the page (or the HTML export) rendered them as markup.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest
import raw_dumps
from harness import CELL_PIXEL_JS, CHART_READY, HEATMAP_PAINTED, REPO, SCRIPT_IDLE, screenshot

import analysis
from analysis.views.grid import group_grid
from dashboard import sources

pytestmark = pytest.mark.browser

APP = REPO / "dashboard" / "app.py"

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>window.__pwned=1</script>"
LINK = "[click](javascript:alert(1))"
DESC = f"{IMG} {LINK}"

#: In-page checks: nothing from the dump became an element, a link or a script.
INERT_JS = """() => ({
  pwned: typeof window.__pwned !== 'undefined',
  imgOnerror: document.querySelectorAll('img[onerror]').length,
  jsLinks: [...document.querySelectorAll('a[href]')].filter(a => /^\\s*javascript:/i.test(a.getAttribute('href'))).length,
  pwnScripts: [...document.scripts].filter(s => s.textContent.includes('__pwned')).length,
})"""


#: What each selectbox shows: its text and, for a searchable one, its input's value.
SELECTBOX_TEXT_JS = """() => [...document.querySelectorAll('[data-testid=stSelectbox]')].map(
  e => e.textContent + ' | ' + [...e.querySelectorAll('input')].map(i => i.value).join(' | '))"""


SELECTED_IN_URL = """([rank, seq]) => {
  const p = new URL(location.href).searchParams;
  return p.get('rank') === rank && p.get('seq') === seq;
}"""


def _wait_idle(page, timeout: float = 60_000) -> None:
    page.wait_for_selector(SCRIPT_IDLE, state="attached", timeout=timeout)


def _click_cell(page, x: float, y: float) -> None:
    px, py = page.evaluate(CELL_PIXEL_JS, [x, y])
    page.mouse.click(px, py)


def _assert_inert(page, dialogs: list[str]) -> None:
    page.wait_for_timeout(300)  # an injected <img onerror> would fire by now
    assert dialogs == [], f"a dialog fired: {dialogs}"
    assert page.evaluate(INERT_JS) == {"pwned": False, "imgOnerror": 0, "jsLinks": 0, "pwnScripts": 0}


def _hostile(value: object) -> object:
    """One hostile name per function name, the same on every rank (a name chosen by its
    place in the stack would give ranks that call from one line different call sites)."""
    return (IMG, SCRIPT, LINK)[sum(map(ord, value)) % 3] if isinstance(value, str) else value


@pytest.fixture(scope="module")
def hostile_dumps(tmp_path_factory, stuck_dumps) -> Path:
    """The stuck_compute sample with hostile frame names, file names and group descriptions.

    The committed sample is our own file, so the test may open it with plain ``pickle``;
    the dashboard reads the rewritten copy through the library's restricted loader.
    """
    out = tmp_path_factory.mktemp("hostile") / "job"
    out.mkdir()
    for src in sorted(stuck_dumps.glob("rank_*")):
        dump = pickle.loads(src.read_bytes())
        for entry in dump["entries"]:
            pg = entry.get("process_group")
            if isinstance(pg, tuple | list) and len(pg) == 2 and pg[1] == "tensor_parallel":
                entry["process_group"] = (pg[0], DESC)
            for frame in entry.get("frames") or []:
                if "/torch/" not in frame.get("filename", ""):
                    frame["name"] = _hostile(frame["name"])
                    frame["filename"] = f"/workspace/{SCRIPT}.py"
        (out / src.name).write_bytes(pickle.dumps(dump, protocol=2))
    (out / f"{IMG}_rank_9").write_bytes(b"not a dump")
    (out / f"{LINK}_rank_10").write_bytes(b"not a dump either")
    return out


def test_dump_text_is_shown_as_text_never_run(serve, page, hostile_dumps, tmp_path):
    report = analysis.analyze(hostile_dumps, use_cache=False)
    w = report.wavefront
    assert w is not None and w.pg_desc == DESC and report.suspect_ranks
    rank = next(r for r in report.suspect_ranks if r in w.pg_ranks)
    seq = int(w.collective_seq_id)
    row = list(report.analysis.groups.groups[w.pg_key].ranks).index(rank)
    entry = raw_dumps.entry_at(hostile_dumps, rank, w.pg_name, seq) or raw_dumps.newest_in_group(
        hostile_dumps, rank, w.pg_name
    )
    frames = raw_dumps.frame_lines(entry)
    assert any(IMG in f for f in frames) or any(LINK in f for f in frames) or any(SCRIPT in f for f in frames)

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    server = serve(APP, "--dumps", str(hostile_dumps))
    page.goto(server.url)
    page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=60_000)
    page.wait_for_selector(CHART_READY, timeout=30_000)
    _wait_idle(page)
    # The group's description is the group picker's text above the heatmap: as text.
    page.get_by_text(DESC).first.wait_for(timeout=10_000)
    pickers = page.evaluate(SELECTBOX_TEXT_JS)
    assert any(DESC in text for text in pickers), pickers
    page.get_by_text("2 files could not be used").wait_for()
    _assert_inert(page, dialogs)

    # Into the suspect's stack: frame names and file names are text in the code block.
    page.wait_for_timeout(200)
    _click_cell(page, seq, row)
    page.get_by_text(f"Call stack of rank {rank}").wait_for(timeout=30_000)
    _wait_idle(page)
    code = page.get_by_test_id("stCode").first
    text = code.text_content()
    assert SCRIPT in text and (IMG in text or LINK in text), text
    page.get_by_text(SCRIPT).filter(visible=True).first.wait_for()
    _assert_inert(page, dialogs)

    # The wavefront tab repeats the description in Markdown and groups the stacks.
    page.get_by_role("tab", name="Wavefront").click()
    page.get_by_text("Call stacks at the wavefront").wait_for(timeout=30_000)
    _wait_idle(page)
    page.get_by_text(f"Group {w.pg_name} ({DESC})").filter(visible=True).first.wait_for()
    for hostile in (IMG, SCRIPT, LINK):
        page.get_by_text(hostile).filter(visible=True).first.wait_for()
    _assert_inert(page, dialogs)
    screenshot(page, "dashboard-hostile-text.png")

    # The HTML export, opened as a file in the same tab: the same checks.
    page.get_by_role("tab", name="Export").click()
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="HTML report (opens offline)").click()
    exported = tmp_path / "report.html"
    download.value.save_as(exported)
    html = exported.read_text()
    assert IMG not in html and SCRIPT not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    page.goto(exported.as_uri())
    page.wait_for_selector(".js-plotly-plot .heatmaplayer image", state="attached", timeout=30_000)
    page.locator("pre", has_text=SCRIPT).first.wait_for()
    page.locator("td", has_text=f"{IMG}_rank_9").first.wait_for()
    page.get_by_text(f"({DESC})").first.wait_for()
    _assert_inert(page, dialogs)


def _verdict(page) -> str:
    return page.get_by_test_id("stMetricValue").first.text_content()


def test_two_tabs_never_share_selection_data_or_uploads(serve, browser, stuck_dumps, tmp_path, monkeypatch):
    healthy_dir = REPO / "sample_dumps" / "healthy"
    if not any(healthy_dir.glob("rank_*")):
        pytest.skip("the healthy sample is not committed")
    stuck = analysis.analyze(stuck_dumps)
    healthy = analysis.analyze(healthy_dir)
    w = stuck.wavefront
    a_rank = next(r for r in stuck.suspect_ranks if r in w.pg_ranks)
    a_seq = int(w.collective_seq_id)
    a_row = list(stuck.analysis.groups.groups[w.pg_key].ranks).index(a_rank)

    # Each server-side temp folder lands here, and closed tabs are dropped after 1 s.
    uploads_parent = tmp_path / "tmp"
    uploads_parent.mkdir()
    monkeypatch.setenv("TMPDIR", str(uploads_parent))
    monkeypatch.setenv("STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL", "1")
    server = serve(APP, "--samples", str(REPO / "sample_dumps"))

    ctx_a = browser.new_context(viewport={"width": 1400, "height": 1400})
    ctx_b = browser.new_context(viewport={"width": 1400, "height": 1400})
    try:
        a, b = ctx_a.new_page(), ctx_b.new_page()
        a.goto(f"{server.url}/?scenario=stuck_compute")
        b.goto(f"{server.url}/?scenario=healthy")
        for page in (a, b):
            page.wait_for_selector(HEATMAP_PAINTED, state="attached", timeout=90_000)
            page.wait_for_selector(CHART_READY, timeout=30_000)
            _wait_idle(page)
        assert _verdict(a) == stuck.verdict.upper() == "HANG"
        assert _verdict(b) == healthy.verdict.upper() == "HEALTHY"

        # Different clicks in each tab.
        _click_cell(a, a_seq, a_row)
        a.get_by_text(f"rank {a_rank} · seq {a_seq}").wait_for(timeout=30_000)
        b_pg = b.evaluate("() => new URL(location.href).searchParams.get('pg')")
        grid = group_grid(healthy.analysis, b_pg)
        b_rank, b_seq = int(grid.ranks[-1]), int(grid.seqs[len(grid.seqs) // 2])
        _click_cell(b, b_seq, len(grid.ranks) - 1)
        b.get_by_text(f"rank {b_rank} · seq {b_seq}").wait_for(timeout=30_000)
        _wait_idle(b)
        # A reruns after B's click and still shows only its own data and selection.
        a.get_by_role("tab", name="All groups").click()
        _wait_idle(a)
        a.get_by_role("tab", name="Heatmap").click()
        a.get_by_text(f"rank {a_rank} · seq {a_seq}").wait_for(timeout=30_000)
        _wait_idle(a)
        assert _verdict(a) == "HANG" and _verdict(b) == "HEALTHY"
        assert a.get_by_text(f"rank {b_rank} · seq {b_seq}").count() == 0
        assert b.get_by_text(f"rank {a_rank} · seq {a_seq}").count() == 0
        assert b.get_by_text("sample scenario stuck_compute").count() == 0
        assert a.get_by_text("sample scenario healthy").count() == 0
        # each tab's address follows its own selection (written at the end of its rerun)
        for page, rank, seq in ((a, a_rank, a_seq), (b, b_rank, b_seq)):
            page.wait_for_function(SELECTED_IN_URL, arg=[str(rank), str(seq)], timeout=30_000)
        assert f"rank={a_rank}" in a.url and f"seq={a_seq}" in a.url and "scenario=stuck_compute" in a.url
        assert f"rank={b_rank}" in b.url and f"seq={b_seq}" in b.url and "scenario=healthy" in b.url

        # A uploads; B's uploader stays empty and B never sees A's files or folder.
        a.get_by_text("Upload files").click()
        a.wait_for_selector('[data-testid="stFileUploaderDropzoneInput"]', state="attached", timeout=30_000)
        files = sorted(str(p) for p in stuck_dumps.glob("rank_*"))
        a.set_input_files('[data-testid="stFileUploaderDropzoneInput"]', files)
        a.get_by_text(f"{len(files)} uploaded files").wait_for(timeout=60_000)
        _wait_idle(a)
        folders = list(uploads_parent.glob(f"{sources.UPLOAD_PREFIX}*"))
        assert len(folders) == 1 and (os.stat(folders[0]).st_mode & 0o777) == 0o700
        assert sorted(p.name for p in folders[0].iterdir()) == sorted(Path(f).name for f in files)

        b.get_by_text("Upload files").click()
        b.get_by_text("Upload the per-rank dump files").wait_for(timeout=30_000)
        _wait_idle(b)
        assert b.get_by_test_id("stFileUploaderFile").count() == 0
        assert b.get_by_text("rank_0", exact=True).count() == 0 and b.get_by_text("uploaded files").count() == 0
        assert b.get_by_test_id("stMetricValue").count() == 0
        screenshot(a, "dashboard-session-a.png")
        screenshot(b, "dashboard-session-b.png")

        # A's tab closes: once its session expires, the next run of any tab deletes A's folder.
        ctx_a.close()
        time.sleep(6)  # past the 1 s session TTL and the janitor's 5 s interval
        b.get_by_text("Sample scenario").first.click()  # any rerun of any tab
        b.get_by_test_id("stMetricValue").first.wait_for(timeout=60_000)
        _wait_idle(b)
        assert _verdict(b) == "HEALTHY"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(uploads_parent.glob(f"{sources.UPLOAD_PREFIX}*")):
            time.sleep(0.5)
        assert not any(uploads_parent.glob(f"{sources.UPLOAD_PREFIX}*")), "the closed tab's uploads were not deleted"
    finally:
        ctx_a.close()
        ctx_b.close()
