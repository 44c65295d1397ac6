"""One golden report (the JSON a user gets) per sample set and NVRx set.

A change in any sentence, suspect, class or field shows in review as a diff of
``tests/golden/<set>.json``. After a deliberate change, rewrite them with
``FLIGHTDECK_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden_reports.py``
and read the diff before committing it.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from locations import SAMPLE_DUMPS, SHARED_FIXTURES, TESTS

import analysis

GOLDEN = TESTS / "golden"
SETS = {p.parent.name: p.parent for p in sorted(SAMPLE_DUMPS.glob("*/scenario.json"))}
NVRX_SETS = {f"nvrx_{p.name}": p for p in sorted((SHARED_FIXTURES / "nvrx").glob("*")) if p.is_dir()}


def _report_json(folder: Path) -> str:
    report = analysis.analyze(folder, use_cache=False).to_dict()
    return json.dumps(report, indent=1, sort_keys=True) + "\n"


def _check(name: str, folder: Path) -> None:
    got = _report_json(folder)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("FLIGHTDECK_UPDATE_GOLDEN"):
        path.write_text(got)
    want = path.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), str(path), "now"))
        pytest.fail(f"the report on {name} changed:\n{diff[:6000]}")


@pytest.mark.parametrize("name", sorted(SETS))
def test_sample_report_is_golden(name: str) -> None:
    _check(name, SETS[name])


@pytest.mark.skipif(not NVRX_SETS, reason="shared NVRx fixtures not present")
@pytest.mark.parametrize("name", sorted(NVRX_SETS))
def test_nvrx_report_is_golden(name: str) -> None:
    _check(name, NVRX_SETS[name])
