"""Regenerate scenarios with real torch (gloo) in layouts the committed samples do not use.

Nothing here is keyed to a sample: each case runs real processes with its own world
size, layout, culprit and seed, and checks the report against what was injected.
"""

from __future__ import annotations

import importlib.util

import pytest

import analysis

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch (a dev dependency) is not installed"),
]

CASES = [
    # scenario, world size, tp, pp, culprit, seed
    ("stuck_compute", 16, 4, 2, 13, 11),
    ("skip_collective", 4, 2, 1, 1, 12),
    ("size_mismatch", 12, 2, 2, 10, 13),
    ("extra_collective", 8, 4, 1, 6, 14),
]


@pytest.mark.parametrize(("scenario", "world", "tp", "pp", "culprit", "seed"), CASES)
def test_fresh_real_run_is_diagnosed(tmp_path, scenario, world, tp, pp, culprit, seed) -> None:
    from sample_dumps.generate import generate

    info = generate(scenario, tmp_path, world_size=world, culprit=culprit, seed=seed, tp=tp, pp=pp)
    assert info["injected_ranks"] == [culprit]
    report = analysis.analyze(tmp_path, use_cache=False)
    assert report.file_errors == []
    assert report.ranks_loaded == world
    assert report.suspect_ranks == [culprit]
    assert report.failure_class == info["expected"]["failure_class"]
    assert report.attribution_state == "CONTINUE"
