"""``python -m benchmarks`` end to end on a tiny generated set: it prints both floors (the
garbage collector off, the denominator, and on, the old one), the ratio and peaks over the
whole process tree, and ``--plot`` writes the picture. Not a timing test: the figures of a
set this small say nothing about speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from locations import ROOT


def test_the_benchmark_prints_both_floors_a_ratio_and_tree_peaks(tmp_path: Path) -> None:
    out, plot = tmp_path / "bench", tmp_path / "plot"
    argv = ["--sizes", "8", "--entries", "50", "--repeat", "1", "--workers", "2", "--no-frtrace"]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", *argv, "--dir", str(out), "--plot", str(plot)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    header, _rule, line = done.stdout.splitlines()[:3]
    for column in ("floor s (gc off)", "old floor s (gc on)", "FD / floor", "FD / old floor", "FD peak GB (tree)"):
        assert column in header
    assert line.split()[0] == "8"
    assert "x" in line.split()[5] and "x" in line.split()[6]  # the two ratios

    row = json.loads((out / "results.json").read_text())["rows"][0]
    assert row["fd_named"] == "yes"
    assert row["floor_s"] > 0 and row["floor_gc_s"] > 0
    assert row["fd_ratio"] == row["fd_s"] / row["floor_s"]
    assert row["fd_ratio_gc"] == row["fd_s"] / row["floor_gc_s"]
    # With --workers 2 Flight Deck runs more than one process, and the peak counts them all.
    assert row["fd_procs"] >= 2
    assert row["fd_rss_gb"] > row["fd_main_rss_gb"] > 0
    assert row["floor_rss_gb"] >= row["floor_main_rss_gb"] > 0

    html, png = plot / "scale.html", plot / "scale.png"
    assert "plotly" in html.read_text()[:200_000].lower()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {html} and {png}" in done.stdout


def test_the_tree_peak_counts_a_child_process() -> None:
    """A parent that holds little and a child that holds 200 MB: the tree's peak holds both."""
    from benchmarks.measure import run_measured

    child = "import time; b = bytearray(200 << 20); time.sleep(0.6)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
    run = run_measured([sys.executable, "-c", parent], timeout_s=60)
    assert run.rc == 0
    assert run.processes >= 2
    assert run.peak_rss > run.peak_rss_main + (150 << 20)
