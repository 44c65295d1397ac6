"""Real NCCL dumps from a 16-rank Megatron job with two injected faults each (NVRx fixtures)."""

from __future__ import annotations

import pytest
from locations import SHARED_FIXTURES

import analysis

NVRX = SHARED_FIXTURES / "nvrx"

CASES = {
    # folder: (injected ranks from fault_injection.log, class we expect)
    "gpu_error_1st": ([12, 14], "stalled_in_flight"),
    "gpu_error_2nd": ([9, 14], "stalled_in_flight"),
    "lock_gil_1st": ([9, 14], "missing_participant"),
    "lock_gil_2nd": ([10, 15], "missing_participant"),
}


def _injected(folder: str) -> list[int]:
    log = (NVRX / folder / "fault_injection.log").read_text()
    line = next(line for line in log.splitlines() if line.startswith("Fault ranks:"))
    return sorted(int(x) for x in line.split("[")[1].split("]")[0].split(","))


@pytest.mark.skipif(not NVRX.is_dir(), reason="shared NVRx fixtures not present")
@pytest.mark.parametrize("folder", sorted(CASES))
def test_names_the_injected_pair(folder: str) -> None:
    expected_ranks, expected_class = CASES[folder]
    assert _injected(folder) == expected_ranks  # the log agrees with the table above
    report = analysis.analyze(NVRX / folder)
    assert report.ranks_loaded == 16
    assert report.file_errors == []  # fault_injection.log is not mistaken for a dump
    assert report.verdict == "hang"
    assert report.suspect_ranks == expected_ranks
    assert report.failure_class == expected_class
    assert report.attribution_state == "CONTINUE"
    assert set(report.victim_ranks) == set(range(16)) - set(expected_ranks)
    assert report.wavefront is not None and set(report.wavefront.pg_ranks) & set(expected_ranks)
    for r in expected_ranks:
        assert any(f"Rank {r} " in e for e in report.evidence)


@pytest.mark.skipif(not NVRX.is_dir(), reason="shared NVRx fixtures not present")
def test_pg_status_resolves_for_ranks_without_entries() -> None:
    """lock_gil_1st ranks 9 and 14 dumped no entries; only pg_status shows they are behind."""
    report = analysis.analyze(NVRX / "lock_gil_1st")
    a = report.analysis
    tp_of_9 = next(g for g in a.groups.groups.values() if g.desc == "TENSOR_MODEL_PARALLEL_GROUP" and 9 in g.ranks)
    p9 = a.progress[(tp_of_9.key, 9)]
    peer = next(r for r in tp_of_9.ranks if r != 9)
    assert p9.enqueued < a.progress[(tp_of_9.key, peer)].enqueued
