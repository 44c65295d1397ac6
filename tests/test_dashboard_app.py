"""Dashboard tests: the page through AppTest, and the pure builders behind it."""

from __future__ import annotations

import html
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import analysis
from analysis.ingest.discover import discover
from analysis.report.words import group_label
from analysis.views import drilldown as views
from analysis.views.grid import COMPLETED, NOT_ISSUED, SCHEDULED, Grid
from dashboard import confine, figures, html_report, selection, sources, state, tables
from dashboard.components.text import md_escape

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "dashboard" / "app.py")
SCENARIO = "stuck_compute"


def _generate(scenario: str, out: Path) -> Path:
    subprocess.run(
        [sys.executable, str(REPO / "sample_dumps" / "generate.py"), "--scenario", scenario, "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> Path:
    """A sample root holding ``stuck_compute``: the committed one, else generated once with torch."""
    if SCENARIO in sources.sample_scenarios(sources.SAMPLE_ROOT):
        return sources.SAMPLE_ROOT
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("samples")
    _generate(SCENARIO, root / SCENARIO)
    return root


@pytest.fixture(scope="session")
def stuck(samples) -> Path:
    return samples / SCENARIO


@pytest.fixture(scope="session")
def report(stuck) -> analysis.Report:
    return analysis.analyze(stuck)


def _app(monkeypatch, *args: str) -> AppTest:
    monkeypatch.setattr(sys, "argv", [APP, *args])
    return AppTest.from_file(APP, default_timeout=60)


def _open(monkeypatch, samples: Path, **params: str) -> AppTest:
    at = _app(monkeypatch, "--samples", str(samples))
    at.query_params["scenario"] = SCENARIO
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _codes(at: AppTest) -> list[str]:
    return [c.value for c in at.code]


def _spec(at: AppTest, index: int = 0) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def _wave_cell(report) -> tuple[str, int, int]:
    """The wavefront group, its seq, and a suspect that belongs to it."""
    w = report.wavefront
    rank = next(r for r in report.suspect_ranks if r in w.pg_ranks)
    return w.pg_key, rank, int(w.collective_seq_id)


# --------------------------------------------------------------------------- page


def test_verdict_shown_for_sample(monkeypatch, samples, report):
    at = _open(monkeypatch, samples)
    m = _metrics(at)
    assert m["Verdict"] == report.verdict.upper()
    assert m["Suspect ranks"] == md_escape(tables.compact_ranks(report.suspect_ranks, limit=6))
    w = report.wavefront
    assert m["Wavefront (group · seq)"] == md_escape(f"{w.pg_name} · {w.collective_seq_id}")
    assert any(md_escape(report.summary) == e.value for e in at.error)
    assert at.expander[0].label.startswith("Evidence")
    assert at.query_params["scenario"] == SCENARIO


def test_default_scenario_is_first_or_large(monkeypatch, samples):
    at = _app(monkeypatch, "--samples", str(samples)).run()
    assert not at.exception
    options = at.selectbox(key=state.SCENARIO).options
    assert options == sources.sample_scenarios(samples)
    assert at.selectbox(key=state.SCENARIO).value == sources.default_scenario(options)


def test_group_picker_in_relevance_order(monkeypatch, samples, report):
    at = _open(monkeypatch, samples)
    order = views.relevance_order(report.analysis, report.wavefront.pg_key)
    picker = at.selectbox(key=state.PG)
    assert picker.value == report.wavefront.pg_key == order[0]
    assert len(picker.options) == len(order)
    groups = report.analysis.groups.groups
    assert picker.options == [group_label(groups[k]) for k in order]


def test_heatmap_marks_wavefront_and_suspects(monkeypatch, samples, report):
    at = _open(monkeypatch, samples)
    spec = _spec(at)
    assert [t["type"] for t in spec["data"]] == ["heatmap", "scatter"]
    assert spec["data"][1]["marker"]["opacity"] == 0
    assert at.get("plotly_chart")[0].proto.selection_mode
    shapes = spec["layout"]["shapes"]
    seq = report.wavefront.collective_seq_id
    assert any(s["type"] == "line" and s["x0"] == seq for s in shapes)
    assert any(s["type"] == "rect" and s.get("name", "").startswith("suspect") for s in shapes)


def test_simulated_click_opens_rank_stack(monkeypatch, samples, report):
    pg, rank, seq = _wave_cell(report)
    at = _open(monkeypatch, samples)
    row = list(report.analysis.groups.groups[pg].ranks).index(rank)
    at.session_state[f"heatmap:{pg}:all"] = {
        "selection": {"points": [{"curve_number": 1, "x": seq, "y": row}], "point_indices": [0], "box": [], "lasso": []}
    }
    at.run()
    assert not at.exception
    assert at.session_state[state.CELL] == (rank, seq)
    assert f"rank {rank} · seq {seq}" in [h.value for h in at.subheader]
    _, _, frames = tables.cell_stack(report, pg, rank, seq)
    assert frames, "the sample dumps record call stacks"
    assert tables.frames_text(frames) in _codes(at)
    assert at.query_params["rank"] == str(rank) and at.query_params["seq"] == str(seq)
    selected = [s for s in _spec(at)["layout"]["shapes"] if s.get("name") == "selected"]
    assert selected and selected[0]["x0"] == seq - 0.5


def test_query_params_restore_view(monkeypatch, samples, report):
    pg, rank, seq = _wave_cell(report)
    at = _open(monkeypatch, samples, pg=pg, rank=str(rank), seq=str(seq))
    assert at.selectbox(key=state.PG).value == pg
    assert f"rank {rank} · seq {seq}" in [h.value for h in at.subheader]
    assert any(s.get("name") == "selected" for s in _spec(at)["layout"]["shapes"])


def test_box_select_opens_region_and_back(monkeypatch, samples, report):
    pg = report.wavefront.pg_key
    at = _open(monkeypatch, samples)
    seqs = [s for s in _spec(at)["layout"]["xaxis"]["range"]]
    at.session_state[f"heatmap:{pg}:all"] = {
        "selection": {
            "points": [],
            "point_indices": [],
            "box": [{"x": [seqs[1] - 1.2, seqs[1]], "y": [-0.4, 0.4]}],
            "lasso": [],
        }
    }
    at.run()
    window = at.session_state[state.WINDOW]
    assert window.pg_key == pg and window.r0 == 0 and window.r1 == 1
    assert any(c.value.startswith("Region:") for c in at.caption)
    at.button(key="back_to_overview").click().run()
    assert state.WINDOW not in at.session_state


def test_wavefront_tab_and_overview_tables(monkeypatch, samples, report):
    at = _open(monkeypatch, samples)
    assert not at.dataframe and not at.code, "closed tabs are not drawn"
    at.session_state[state.TAB] = "Wavefront"
    at.run()
    w = report.wavefront
    stacks = views.stacks_at(report.analysis, w.pg_key, w.collective_seq_id)
    codes = _codes(at)
    assert stacks and all(tables.frames_text(views.stack_frames(report.analysis, sid)) in codes for sid, _ in stacks)
    bars = _spec(at)["data"][0]
    assert bars["type"] == "bar" and len(bars["x"]) == len(w.pg_ranks)
    at.session_state[state.TAB] = "All groups"
    at.run()
    dfs = [d.value for d in at.dataframe]
    assert any("blocker" in df.columns for df in dfs)
    progress = next(df for df in dfs if "lagging ranks" in df.columns)
    assert progress["group"][0] == w.pg_name


def test_empty_folder_error(monkeypatch, tmp_path):
    at = _app(monkeypatch, "--dumps", str(tmp_path)).run()
    assert not at.exception
    assert "No Flight Recorder dump could be read" in at.error[0].value
    files = at.dataframe[0].value
    assert list(files.columns) == ["file", "reason"] and len(files) == 1


def test_junk_folder_error_names_files(monkeypatch, tmp_path):
    (tmp_path / "rank_0").write_text("not a dump")
    (tmp_path / "rank_1").write_bytes(b"\x80\x04junk")
    at = _app(monkeypatch, "--dumps", str(tmp_path)).run()
    assert not at.exception
    assert "No Flight Recorder dump could be read" in at.error[0].value
    files = at.dataframe[0].value
    assert sorted(Path(f).name for f in files["file"]) == ["rank_0", "rank_1"]
    assert all(files["reason"].str.len() > 0)


def test_partly_bad_files_still_show_the_rest(monkeypatch, tmp_path, stuck):
    folder = tmp_path / "dumps"
    shutil.copytree(stuck, folder)
    (folder / "rank_99").write_text("<script>alert(1)</script>")
    at = _app(monkeypatch, "--dumps", str(folder)).run()
    assert not at.exception
    assert _metrics(at)["Verdict"] in ("HANG", "MISMATCH", "HEALTHY")
    assert "1 file could not be used" in at.warning[0].value
    bad = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert Path(bad["file"][0]).name == "rank_99"
    assert at.get("plotly_chart")


def test_missing_folder_message(monkeypatch, tmp_path):
    at = _app(monkeypatch, "--dumps", str(tmp_path / "nope")).run()
    assert not at.exception
    assert at.error and "No Flight Recorder dump could be read" in at.error[0].value


# --------------------------------------------------------------------------- figures and pure functions


def _stuck_grid(n_ranks: int = 64, n_seqs: int = 400, stuck: int = 37, wave: int = 300) -> Grid:
    codes = np.full((n_ranks, n_seqs), COMPLETED, dtype=np.int8)
    codes[:, wave] = SCHEDULED
    codes[stuck, wave] = NOT_ISSUED
    return Grid("g", np.arange(n_ranks), np.arange(100, 100 + n_seqs), codes)


def test_aggregation_keeps_stuck_cell():
    grid = _stuck_grid()
    view = figures.build_view(grid, max_raw_cells=1000, max_rows=10, max_cols=20)
    assert view.aggregated and view.codes.shape == (10, 20)
    assert (view.codes == NOT_ISSUED).sum() == 1
    i, j = np.argwhere(view.codes == NOT_ISSUED)[0]
    r0, r1, s0, s1 = view.block_at(view.x_centres()[j], view.y_centres()[i])
    assert r0 <= 37 < r1 and s0 <= 400 <= s1
    assert "each cell = 7 ranks x 20 seqs" in view.describe()


def test_small_grid_is_raw_with_overlay_and_vline():
    grid = _stuck_grid(8, 20, stuck=3, wave=10)
    view = figures.build_view(grid)
    assert not view.aggregated
    fig = figures.heatmap_figure(view, wavefront_seq=110, suspects=[3], selected=(3, 110))
    heat, overlay = fig.data
    assert heat.type == "heatmap" and overlay.type == "scatter"
    assert len(overlay.x) == 8 * 20 and overlay.marker.opacity == 0
    assert fig.layout.xaxis.range == (99.5, 119.5) and fig.layout.yaxis.range == (7.5, -0.5)
    shapes = fig.layout.shapes
    assert any(s.type == "line" and s.x0 == 110 for s in shapes)
    assert any(s.name == "suspect 3" and s.y0 == 2.5 for s in shapes)
    assert any(s.name == "selected" and s.x0 == 109.5 for s in shapes)
    assert list(heat.colorbar.ticktext)[4] == "not issued"


def test_long_history_opens_on_newest_seqs():
    grid = _stuck_grid(8, 1500, stuck=3)
    assert figures.recent_window(grid, 120) == (0, 8, 1480, 1599)
    assert figures.recent_window(_stuck_grid(8, 100, stuck=3, wave=50), 120) is None
    view = figures.build_view(grid, figures.recent_window(grid, 120))
    assert not view.aggregated and view.codes.shape == (8, 120)


def test_window_shows_full_resolution():
    grid = _stuck_grid()
    view = figures.build_view(grid, (30, 40, 390, 410), max_raw_cells=1000)
    assert not view.aggregated and view.codes.shape == (10, 21)
    assert view.cell_at(400, 7) == (37, 400)


def test_selection_actions():
    grid = _stuck_grid()
    big = figures.build_view(grid, max_raw_cells=1000, max_rows=10, max_cols=20)
    ev = {"selection": {"points": [{"x": 410.0, "y": 38.0}], "box": []}}
    assert selection.action_for(big, ev).region == big.block_at(410.0, 38.0)
    raw = figures.build_view(grid, (30, 40, 390, 410), max_raw_cells=1000)
    assert selection.action_for(raw, {"selection": {"points": [{"x": 400, "y": 7}], "box": []}}).cell == (37, 400)
    box = {"selection": {"points": [], "box": [{"x": [395.2, 401.4], "y": [1.6, 4.2]}]}}
    assert selection.action_for(raw, box).region == (32, 35, 395, 401)
    assert selection.action_for(raw, {"selection": {"points": [], "box": []}}) is None
    assert selection.signature({"selection": {"points": [], "box": []}}) is None


def test_state_query_round_trip():
    ss: dict = {}
    state.hydrate(ss, {"scenario": "x", "pg": "7", "rank": "3", "seq": "12", "window": "0:4:10:20"})
    assert ss[state.CELL] == (3, 12) and ss[state.WINDOW] == state.Window("7", 0, 4, 10, 20)
    params: dict = {"stale": "1", "rank": "9"}
    state.write_query(params, ss)
    assert params == {"stale": "1", "scenario": "x", "pg": "7", "rank": "3", "seq": "12", "window": "0:4:10:20"}
    state.on_dataset(ss, "a")
    assert ss[state.CELL] == (3, 12)
    state.on_dataset(ss, "b")
    assert state.CELL not in ss and state.PG not in ss


def test_html_report_is_self_contained_and_escaped(report):
    text = html_report.build_html(report, title="t <b>")
    assert "t &lt;b&gt;" in text and "<b>" not in text.split("<body>")[1].split("</h1>")[0]
    assert "<script" in text and "<script src=" not in text  # plotly.js inlined: opens offline
    assert len(text) > 1_000_000
    assert html.escape(report.summary) in text
    with zipfile.ZipFile(io.BytesIO(html_report.tables_zip(report))) as zf:
        assert set(zf.namelist()) == {f"{n}.parquet" for n in report.tables}


def test_upload_names_are_sanitised(tmp_path):
    written = sources.write_uploads(tmp_path, [("../../etc/rank_0", b"a"), ("..", b"b"), ("dir\\rank_1", b"c")])
    assert written == ["rank_0", "upload", "rank_1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank_0", "rank_1", "upload"]


def test_md_escape_neutralises_markup():
    assert md_escape("[x](javascript:1) **b** :red[c]") == r"\[x\]\(javascript\:1\) \*\*b\*\* \:red\[c\]"


def test_args_and_fingerprint(tmp_path):
    assert sources.parse_args(["--dumps", "/d 1", "--other"]).dumps == "/d 1"
    (tmp_path / "rank_0").write_bytes(b"x")
    before = sources.fingerprint(str(tmp_path))
    (tmp_path / "rank_1").write_bytes(b"y")
    assert sources.fingerprint(str(tmp_path)) != before
    assert tables.compact_ranks([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"


@pytest.mark.parametrize("scenario", sources.sample_scenarios() or ["(none committed)"])
def test_every_sample_scenario_renders(monkeypatch, scenario):
    if scenario not in sources.sample_scenarios():
        pytest.skip("no sample scenarios committed")
    at = _app(monkeypatch)
    at.query_params["scenario"] = scenario
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert _metrics(at)["Verdict"] in ("HANG", "MISMATCH", "HEALTHY")


# --------------------------------------------------------------------------- confinement and uploads


def _all_text(at: AppTest) -> str:
    parts = [e.value for kind in ("error", "warning", "info", "caption", "markdown", "code") for e in getattr(at, kind)]
    parts += [m.value for m in at.metric]
    for d in at.dataframe:
        parts.append(d.value.to_string())
    return "\n".join(str(p) for p in parts)


def test_confine_allows_only_paths_under_roots(tmp_path):
    root = tmp_path / "root"
    (root / "job").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out_link").symlink_to(tmp_path / "outside")
    (root / "in_link").symlink_to(root / "job")
    roots = confine.resolve_roots([root])
    real = str(root.resolve())
    assert confine.confine(str(root / "job"), roots) == f"{real}/job"
    assert confine.confine(str(root), roots) == real
    assert confine.confine(str(root / "in_link"), roots) == f"{real}/job"
    assert confine.confine(str(root / "job" / "rank_*"), roots) == f"{real}/job/rank_*"
    assert confine.confine(str(root / "not-yet"), roots) == f"{real}/not-yet"
    for bad in (
        "/etc/passwd",
        "/proc/self/environ",
        "/etc/no-such-file",
        str(root / ".." / "outside"),
        str(root / "job" / ".." / ".." / "outside"),
        str(root / "out_link"),
        str(root / "out_link" / "rank_0"),
        str(root / "*" / ".." / ".."),
        str(tmp_path / "root2"),  # shares a prefix with the root, is not under it
        "",
        "rank\0_0",
    ):
        assert confine.confine(bad, roots) is None, bad
    assert confine.is_within("/a/b", "/a") and not confine.is_within("/ab", "/a") and confine.is_within("/a", "/a")


def test_split_files_refuses_symlinks_out_of_the_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("TOKEN=hunter2")
    (root / "rank_0").write_bytes(b"x")
    (root / "rank_1").symlink_to(root / "rank_0")
    (root / "rank_2").symlink_to(secret)
    (root / "rank_3").symlink_to("/etc/passwd")
    files, _ = discover(root)
    ok, refused = confine.split_files(files, confine.resolve_roots([root]))
    assert [f.rank for f in ok] == [0, 1]
    assert sorted(Path(e.file).name for e in refused) == ["rank_2", "rank_3"]
    assert all(e.error == confine.FILE_REFUSED for e in refused)


def test_roots_from_arguments(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    args = sources.parse_args(["--dumps", str(job), "--dumps-root", str(tmp_path / "a"), "--dumps-root", "/srv"])
    assert args.roots() == (
        str((tmp_path / "a").resolve()),
        "/srv",
        str(sources.SAMPLE_ROOT.resolve()),
        str(job.resolve()),
    )
    prefix = sources.parse_args(["--dumps", str(job / "_dump_")]).roots()
    assert str(job.resolve()) in prefix
    assert str(job.resolve()) in sources.parse_args(["--dumps", str(job / "*" / "rank_*")]).roots()
    assert sources.parse_args([]).roots() == (str(sources.SAMPLE_ROOT.resolve()),)


def test_path_box_refuses_outside_paths_without_telling_if_they_exist(monkeypatch, tmp_path, stuck):
    root = tmp_path / "allowed"
    shutil.copytree(stuck, root / "job")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "rank_0").write_text("root:x:0:0:SECRET-CONTENT")
    (root / "escape").symlink_to(tmp_path / "outside")
    at = _app(monkeypatch, "--dumps", str(root / "job"), "--dumps-root", str(root)).run()
    assert _metrics(at)["Verdict"] in ("HANG", "MISMATCH")
    messages = set()
    for bad in (
        "/etc/passwd",
        "/proc/self/environ",
        "/etc/definitely-not-here",
        str(root / ".." / "outside"),
        str(root / "job" / ".." / ".." / "outside" / "rank_0"),
        str(root / "escape"),
        "../../../../../../etc/shadow",
    ):
        at.text_input(key=state.PATH).set_value(bad).run()
        assert not at.exception
        assert [e.value for e in at.error] == [confine.PATH_REFUSED], bad
        text = _all_text(at)
        assert "SECRET" not in text and "root:x" not in text and "No such" not in text
        assert not at.metric and not at.get("plotly_chart")
        messages.add(tuple(e.value for e in at.error))
    assert len(messages) == 1, "the same words whether the path exists or not"
    at.text_input(key=state.PATH).set_value(str(root / "job")).run()
    assert _metrics(at)["Verdict"] in ("HANG", "MISMATCH")


def test_symlink_inside_root_to_outside_is_a_file_error(monkeypatch, tmp_path, stuck):
    folder = tmp_path / "dumps"
    shutil.copytree(stuck, folder)
    secret = tmp_path / "secret_rank"
    shutil.copy(stuck / "rank_3", secret)  # a readable dump, but outside the root: still refused
    (folder / "rank_3").unlink()
    (folder / "rank_3").symlink_to(secret)
    (folder / "rank_9").symlink_to("/etc/passwd")
    at = _app(monkeypatch, "--dumps", str(folder)).run()
    assert not at.exception
    assert "2 files could not be used" in at.warning[0].value
    bad = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert sorted(Path(f).name for f in bad["file"]) == ["rank_3", "rank_9"]
    assert set(bad["reason"]) == {confine.FILE_REFUSED}
    assert "root:" not in _all_text(at)
    assert _metrics(at)["Verdict"] in ("HANG", "MISMATCH", "HEALTHY")


def test_scenario_query_param_cannot_leave_the_samples(monkeypatch, samples):
    at = _app(monkeypatch, "--samples", str(samples))
    at.query_params["scenario"] = "../../../etc"
    at.run()
    assert not at.exception
    assert at.selectbox(key=state.SCENARIO).value == sources.default_scenario(sources.sample_scenarios(samples))


def test_upload_checks_names_sizes_and_totals():
    check = sources.check_uploads(
        [
            ("rank_0", 10),
            ("../../etc/rank_1", 10),
            ("C:\\dumps\\_dump_2.pkl", 10),
            (".bashrc", 10),
            ("..", 1),
            ("notes.txt", 1),
            ("rank_0", 5),
            ("rank_5", 3 << 20),
        ],
        max_file_mb=2,
        max_total_mb=10,
    )
    assert check.accepted == [(0, "rank_0"), (1, "rank_1"), (2, "_dump_2.pkl")]
    assert [name for name, _ in check.refused] == [".bashrc", "..", "notes.txt", "rank_0", "rank_5"]
    assert "larger than 2 MB" in check.refused[-1][1]
    big = sources.check_uploads([("rank_0", 6 << 20), ("rank_1", 6 << 20)], max_file_mb=8, max_total_mb=10)
    assert big.too_big and not big.accepted
    assert sources.upload_name("<img src=x onerror=alert(1)>_rank_1") == "_img_src_x_onerror_alert_1__rank_1"


def test_upload_folder_is_private_and_removed(tmp_path):
    import gc
    import os
    import stat
    import time

    folder = sources.UploadFolder(parent=str(tmp_path))
    path = Path(folder.path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700 and path.name.startswith(sources.UPLOAD_PREFIX)
    sources.write_uploads(path, [("rank_0", b"\x80\x02N.")])
    mode = stat.S_IMODE((path / "rank_0").stat().st_mode)
    assert mode == 0o600, oct(mode)  # never executable, never readable by others
    (path / "rank_1").symlink_to(tmp_path / "elsewhere")
    sources.write_uploads(path, [("rank_1", b"x")])  # a planted symlink is replaced, not written through
    assert not (tmp_path / "elsewhere").exists() and (path / "rank_1").read_bytes() == b"x"
    del folder
    gc.collect()
    assert not path.exists(), "dropping the object (the session) deletes the folder"

    old = Path(sources.UploadFolder(parent=str(tmp_path)).path)  # already gone: object not kept
    stale = tmp_path / f"{sources.UPLOAD_PREFIX}stale"
    fresh = tmp_path / f"{sources.UPLOAD_PREFIX}fresh"
    other = tmp_path / "unrelated"
    for d in (stale, fresh, other):
        d.mkdir()
    past = time.time() - 48 * 3600
    os.utime(stale, (past, past))
    os.utime(other, (past, past))
    assert sources.sweep_stale_uploads(str(tmp_path)) == [str(stale)]
    assert fresh.exists() and other.exists() and not old.exists()


def test_orphan_upload_folders_are_removed(tmp_path, monkeypatch):
    from dashboard.components import sidebar

    live, gone = sources.UploadFolder(parent=str(tmp_path)), sources.UploadFolder(parent=str(tmp_path))
    monkeypatch.setitem(sidebar._OWNERS, "live", live)
    monkeypatch.setitem(sidebar._OWNERS, "gone", gone)
    monkeypatch.setattr(sidebar, "_session_known", lambda sid: sid == "live")
    sidebar.remove_orphan_uploads(min_interval_s=0)
    assert Path(live.path).is_dir() and not Path(gone.path).exists()
    assert "gone" not in sidebar._OWNERS
