"""Every committed sample scenario (real torch gloo dumps) gives its injected ranks and class."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from locations import ROOT, SAMPLE_DUMPS

import analysis

SCENARIOS = sorted(p.parent for p in SAMPLE_DUMPS.glob("*/scenario.json"))


def _expected(folder):
    return json.loads((folder / "scenario.json").read_text())


def test_there_are_sample_scenarios() -> None:
    assert len(SCENARIOS) >= 9, "sample_dumps/ should hold the generated scenarios"


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_sample_verdict(folder) -> None:
    scenario = _expected(folder)
    expected = scenario["expected"]
    report = analysis.analyze(folder)
    assert report.file_errors == []
    assert report.suspect_ranks == sorted(expected["suspect_ranks"])
    assert report.failure_class == expected["failure_class"]
    if expected["failure_class"] == "healthy":
        assert report.verdict == "healthy"
    else:
        assert report.verdict in ("hang", "mismatch")
        assert report.wavefront is not None
        assert set(report.suspect_ranks) <= set(range(scenario["world_size"]))
    files = [*folder.glob("rank_*"), *folder.glob("_dump_*")]  # _dump_<rank>[.json]: NVIDIA's collector
    dumped = {int(p.name.rsplit("_", 1)[1].split(".")[0]) for p in files}
    assert report.ranks_loaded == len(dumped)


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_sample_frames_carry_no_machine_paths(folder) -> None:
    report = analysis.analyze(folder)
    frames = "\n".join(report.tables["stacks"]["frames"])
    for marker in _machine_paths():
        assert marker not in frames


def _machine_paths() -> list[str]:
    """Folders of the machine the samples are generated and tested on: the checkout's
    parent, home, the temp folder and the interpreter's prefix (a venv)."""
    folders = {ROOT.parent, Path.home(), Path(tempfile.gettempdir()), Path(sys.prefix)}
    return sorted({str(f.resolve()) + "/" for f in folders if f.resolve() != Path("/")} | {".venv"})
