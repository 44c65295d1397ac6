"""Health checks and proxy-op waits in the dashboard (Streamlit's AppTest): row marks on the
heatmap, the health badge and outputs in the drill-down, the Waits tab."""

from __future__ import annotations

import json
import sys

import pytest
from locations import ROOT, SAMPLE_DUMPS
from streamlit.testing.v1 import AppTest

import analysis
from analysis.views.waits import rank_marks
from benchmarks.proxysim.__main__ import write_job
from benchmarks.proxysim.job import Fault
from dashboard import state

APP = str(ROOT / "dashboard" / "app.py")
HEALTH = SAMPLE_DUMPS / "collector_json_health"  # rank 5 stuck with a failed GPU check, rank 2 a failed NIC


def _app(monkeypatch, *args: str) -> AppTest:
    monkeypatch.setattr(sys, "argv", [APP, *args])
    return AppTest.from_file(APP, default_timeout=90)


def _ticks(at: AppTest) -> list[str]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return spec["layout"]["yaxis"]["ticktext"]


def test_heatmap_rows_mark_failed_checks(monkeypatch) -> None:
    at = _app(monkeypatch, "--dumps", str(HEALTH)).run()
    assert not at.exception
    ticks = _ticks(at)
    assert any("rank 5" in t and "GPU check failed" in t for t in ticks)
    assert not any("rank 4" in t and "check failed" in t for t in ticks)


def test_drilldown_shows_the_badge_and_the_outputs(monkeypatch) -> None:
    report = analysis.analyze(HEALTH)
    at = _app(monkeypatch, "--dumps", str(HEALTH))
    at.session_state[state.CELL] = (5, int(report.wavefront.collective_seq_id))
    at.run()
    assert not at.exception
    assert any("GPU ✗ Failed" in e.value and "NIC ✓ Healthy" in e.value for e in at.error)
    box = next(x for x in at.expander if x.label == "Health check outputs")
    assert any("Requires a reset to recover" in c.value for c in box.code)


def test_waits_tab_without_proxy_ops_says_how_to_add_them(monkeypatch) -> None:
    at = _app(monkeypatch, "--dumps", str(HEALTH))
    at.session_state[state.TAB] = "Waits"
    at.run()
    assert not at.exception
    assert any("--proxy-ops" in i.value for i in at.info)


@pytest.fixture(scope="module")
def waits_job(tmp_path_factory):
    from benchmarks.synth import write_dump_set

    out = tmp_path_factory.mktemp("dash-waits")
    write_job(out, 16, [Fault("slow_link", (9, 10))], ("csv",), iterations=4, seed=1)
    write_dump_set(out / "dumps", 16, entries=300, fault="none", tp=1, pp=2)
    (out / "dumps" / "proxy_ops").mkdir()
    (out / "csv" / "global.nccl.proxy_ops.csv").rename(out / "dumps" / "proxy_ops" / "waits.csv")
    return out / "dumps"


def test_waits_tab_finds_proxy_ops_beside_the_dumps_and_shows_an_edge(monkeypatch, waits_job) -> None:
    at = _app(monkeypatch, "--dumps", str(waits_job))
    at.session_state[state.TAB] = "Waits"
    at.run()
    assert not at.exception
    assert any("Finding: slow link" in m.value and "9→10" in m.value for m in at.markdown)
    at.session_state["waits_edge"] = (10, 9)
    at.run()
    assert [s.value for s in at.subheader] == ["edge 9 → 10"]
    assert any("slow_link, wait began at slow_link 9->10" in m.value.replace("\\", "") for m in at.markdown)
    rows = at.dataframe[1].value
    assert set(rows["is_send"]) == {0, 1} and len(rows) > 0


def test_rank_marks_name_checks_and_the_waits_culprit(waits_job) -> None:
    report = analysis.analyze(waits_job, use_cache=False, proxy_ops=waits_job / "proxy_ops")
    marks = rank_marks(analysis.analyze(HEALTH).health, report.proxy_waits.waits)
    assert marks[5] == "GPU check failed" and marks[2] == "NIC check failed"
    assert marks[9] == "waits: slow link" and marks[10] == "waits: slow link"
