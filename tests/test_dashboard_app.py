"""Dashboard tests: the page through AppTest.

Expected values come from what the sample generator injected (``scenario.json``), the
reviewed golden reports, or the dump files themselves (``raw_dumps``), not from the
functions the page calls.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import raw_dumps
from locations import TESTS
from streamlit.testing.v1 import AppTest

import analysis
from analysis.report.words import group_label
from analysis.views import drilldown as views
from analysis.views.html import build_html
from dashboard import confine, sources, state, tables
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


def _injected(folder: Path) -> dict:
    """What the generator injected and expects (scenario.json)."""
    return json.loads((folder / "scenario.json").read_text())


def _golden(scenario: str) -> dict:
    return json.loads((TESTS / "golden" / f"{scenario}.json").read_text())


def _wave_cell(report) -> tuple[str, int, int]:
    """The wavefront group, its seq, and a suspect that belongs to it."""
    w = report.wavefront
    rank = next(r for r in report.suspect_ranks if r in w.pg_ranks)
    return w.pg_key, rank, int(w.collective_seq_id)


# --------------------------------------------------------------------------- page


def test_verdict_shown_for_sample(monkeypatch, samples, stuck, report):
    injected = _injected(stuck)
    assert injected["expected"] == {"failure_class": "missing_participant", "suspect_ranks": [5]}
    at = _open(monkeypatch, samples)
    m = _metrics(at)
    assert m["Verdict"] == "HANG"  # a rank stuck before a collective its peers wait in hangs the job
    assert m["Failure class"] == "missing participant"
    assert m["Suspect ranks"] == "5"
    # rank 5's last tensor_parallel collective was seq 10; its peer waits in seq 11
    assert m["Wavefront (group · seq)"] == md_escape(f"{report.wavefront.pg_name} · 11")
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


def test_simulated_click_opens_rank_stack(monkeypatch, samples, stuck, report):
    pg, rank, seq = _wave_cell(report)
    at = _open(monkeypatch, samples)
    row = list(report.analysis.groups.groups[pg].ranks).index(rank)
    at.session_state[state.heatmap_key(pg, None)] = {
        "selection": {"points": [{"curve_number": 1, "x": seq, "y": row}], "point_indices": [0], "box": [], "lasso": []}
    }
    at.run()
    assert not at.exception
    assert at.session_state[state.CELL] == (rank, seq)
    assert f"rank {rank} · seq {seq}" in [h.value for h in at.subheader]
    # The suspect never issued seq 11: the page shows its newest entry in the group, as written.
    pg_name = report.analysis.groups.groups[pg].name
    assert raw_dumps.entry_at(stuck, rank, pg_name, seq) is None
    newest = raw_dumps.newest_in_group(stuck, rank, pg_name)
    assert newest["collective_seq_id"] == seq - 1 and newest["frames"], "the sample dumps record call stacks"
    assert "\n".join(raw_dumps.frame_lines(newest)) in _codes(at)
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
    at.session_state[state.heatmap_key(pg, None)] = {
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
    at.button(key=state.BACK_TO_OVERVIEW).click().run()
    assert state.WINDOW not in at.session_state


def test_wavefront_tab_and_overview_tables(monkeypatch, samples, stuck, report):
    at = _open(monkeypatch, samples)
    assert not at.dataframe and not at.code, "closed tabs are not drawn"
    at.session_state[state.TAB] = "Wavefront"
    at.run()
    w = report.wavefront
    # Every distinct stack the members wrote at the wavefront seq is shown, read from the files.
    written = raw_dumps.stacks_at(stuck, list(w.pg_ranks), w.pg_name, int(w.collective_seq_id))
    assert written, "the waiting peer wrote its entry with a stack"
    codes = _codes(at)
    assert all(text in codes for text in written)
    bars, *marks = _spec(at)["data"]
    # A rank that never issued the collective has no time: a mark on the axis, not a bar.
    never = {x for m in marks if m["name"] == "never issued" for x in m["x"]}
    assert bars["type"] == "bar" and all(m["type"] == "scatter" for m in marks)
    assert never and not never & set(bars["x"])
    assert set(bars["x"]) | {x for m in marks for x in m["x"]} == {str(r) for r in w.pg_ranks}
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
    assert _metrics(at)["Verdict"] == "HANG" and _metrics(at)["Suspect ranks"] == "5"
    assert any("1 file could not be used" in w.value for w in at.warning)
    bad = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert Path(bad["file"][0]).name == "rank_99"
    assert at.get("plotly_chart")


def test_missing_folder_message(monkeypatch, tmp_path):
    at = _app(monkeypatch, "--dumps", str(tmp_path / "nope")).run()
    assert not at.exception
    assert at.error and "No Flight Recorder dump could be read" in at.error[0].value


# --------------------------------------------------------------------------- figures and pure functions


def test_html_report_is_self_contained_and_escaped(report):
    text = build_html(report, title="t <b>")
    assert "t &lt;b&gt;" in text and "<b>" not in text.split("<body>")[1].split("</h1>")[0]
    assert "<script" in text and "<script src=" not in text  # plotly.js inlined: opens offline
    assert len(text) > 1_000_000
    assert html.escape(report.summary) in text


@pytest.mark.parametrize("scenario", sources.sample_scenarios() or ["(none committed)"])
def test_every_sample_scenario_renders(monkeypatch, scenario):
    if scenario not in sources.sample_scenarios():
        pytest.skip("no sample scenarios committed")
    at = _app(monkeypatch)
    at.query_params["scenario"] = scenario
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    golden = _golden(scenario)
    m = _metrics(at)
    assert m["Verdict"] == golden["verdict"].upper()
    assert m["Failure class"] == md_escape(golden["failure_class"].replace("_", " "))
    assert m["Suspect ranks"] == md_escape(tables.compact_ranks(golden["suspect_ranks"], limit=6) or "none isolated")


# --------------------------------------------------------------------------- confinement and uploads


def _all_text(at: AppTest) -> str:
    parts = [e.value for kind in ("error", "warning", "info", "caption", "markdown", "code") for e in getattr(at, kind)]
    parts += [m.value for m in at.metric]
    for d in at.dataframe:
        parts.append(d.value.to_string())
    return "\n".join(str(p) for p in parts)


def test_path_box_refuses_outside_paths_without_telling_if_they_exist(monkeypatch, tmp_path, stuck):
    root = tmp_path / "allowed"
    shutil.copytree(stuck, root / "job")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "rank_0").write_text("root:x:0:0:SECRET-CONTENT")
    (root / "escape").symlink_to(tmp_path / "outside")
    at = _app(monkeypatch, "--dumps", str(root / "job"), "--dumps-root", str(root)).run()
    assert _metrics(at)["Verdict"] == "HANG"
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
    assert _metrics(at)["Verdict"] == "HANG"


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
    assert any("2 files could not be used" in w.value for w in at.warning)
    bad = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert sorted(Path(f).name for f in bad["file"]) == ["rank_3", "rank_9"]
    assert set(bad["reason"]) == {confine.FILE_REFUSED}
    assert "root:" not in _all_text(at)
    # Rank 3's dump was not read, so its peers wait on a rank the analysis cannot see.
    assert _metrics(at)["Verdict"] == "HANG" and _metrics(at)["Failure class"] == "missing dump"


def test_scenario_query_param_cannot_leave_the_samples(monkeypatch, samples):
    at = _app(monkeypatch, "--samples", str(samples))
    at.query_params["scenario"] = "../../../etc"
    at.run()
    assert not at.exception
    assert at.selectbox(key=state.SCENARIO).value == sources.default_scenario(sources.sample_scenarios(samples))
