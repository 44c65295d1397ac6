"""``python -m analysis DIR --html FILE``: the offline report an incident bot can attach,
the same page the dashboard's Export tab downloads."""

from __future__ import annotations

import html
import re
import subprocess
import sys

from locations import ROOT, SAMPLE_DUMPS

import analysis
from analysis.types import HostMap

SLOW = SAMPLE_DUMPS / "slow_rank"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_cli_writes_the_offline_report(tmp_path) -> None:
    out = tmp_path / "report.html"
    earlier = SAMPLE_DUMPS / "slow_rank.earlier"
    proc = run_cli(str(SLOW), "--html", str(out), "--ranks-per-node", "4", "--compare", str(earlier), "--quiet")
    assert proc.returncode == 1, proc.stderr
    text = out.read_text()
    assert "<script src=" not in text and text.count("plotly.js v") == 1, "plotly.js inlined once"
    assert "(confidence: <b>high</b>)" in text
    assert "<b>Drain, in order of evidence:</b> node1" in text
    assert "Compared with the earlier dumps" in text and html.escape("the job is slow, not hung") in text
    report = analysis.analyze(SLOW, hosts=HostMap(source="t", ranks_per_node=4), earlier=earlier)
    rows = set(re.findall(r"<tr id='class-(\d+)'>", text))
    assert rows == {str(c["id"]) for c in report.rank_classes}
    assert "Who waits on whom, by class (roots on top)" in text
    assert "Rank 5 on node1" in text, "the suspect's stack names its host"


def test_nothing_loaded_writes_no_page(tmp_path) -> None:
    (tmp_path / "dumps").mkdir()
    out = tmp_path / "report.html"
    assert run_cli(str(tmp_path / "dumps"), "--html", str(out)).returncode == 2
    assert not out.exists()
