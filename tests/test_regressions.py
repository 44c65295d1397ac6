"""Cases the accuracy benchmark once missed, kept as they were generated: dumps and truth.

Each folder under ``tests/regressions/`` holds one case's dumps and its ``truth.json``
(the injected fault and the culprits, from the run itself); the report must grade as
``python -m benchmarks.accuracy`` grades it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analysis
from benchmarks.accuracy import grade_report

CASES = sorted(p for p in (Path(__file__).parent / "regressions").iterdir() if (p / "truth.json").is_file())


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_regression_is_diagnosed(case: Path) -> None:
    """A case the generator now leaves out as not gradable (``not_gradable``: its dumps
    cannot tell the fault from another) keeps what they can show: no rank named but the
    culprits, and the culprits named wherever the dumps show them at all."""
    truth = json.loads((case / "truth.json").read_text())
    report = analysis.analyze(case, use_cache=False).to_dict()
    if truth.get("not_gradable"):
        named = set(report["suspect_ranks"])
        assert named <= set(truth["culprit_ranks"]), f"{case.name}: names {sorted(named)}"
        if truth["family"] == "skip_collective":  # a silent rank peers wait on: the one singled out
            assert sorted(named) == sorted(truth["culprit_ranks"]), f"{case.name}: names {sorted(named)}"
        return
    exact, klass = grade_report(truth, report)
    assert exact and klass, (
        f"{case.name}: {truth['fault']}\ntruth: culprits {truth['culprit_ranks']}, classes {truth['accepted_classes']}\n"
        f"report: suspects {report['suspect_ranks']}, class {report['failure_class']}\n{report['summary']}"
    )


def test_stuck_rank_next_to_a_lost_dump_is_not_hidden() -> None:
    """gloo stuck_compute seed 1 (rank 4 stuck) with rank 6's dump removed: rank 6 and rank 4
    stopped together in a group of silent ranks, so rank 4 may be blocked behind it; it stays
    a possible cause (a rank stuck on its own looks the same when the other's file is lost)."""
    case = Path(__file__).parent / "lost_dump" / "stuck_compute-1-without-rank-6"
    report = analysis.analyze(case, use_cache=False).to_dict()
    assert 6 in report["suspect_ranks"]
    assert 4 in set(report["suspect_ranks"]) | {p["rank"] for p in report["possible_ranks"]}


OPEN = sorted(p for p in (Path(__file__).parent / "regressions_open").iterdir() if (p / "truth.json").is_file())


@pytest.mark.parametrize("case", OPEN, ids=[p.name for p in OPEN])
@pytest.mark.xfail(strict=True, reason="a miss not fixed yet; when it passes, move it to regressions/")
def test_open_miss_is_still_missed(case: Path) -> None:
    """Misses without a fix: NCCL dumps with little history (only active entries, a
    30-entry buffer) where an op mismatch or an added collective in a 2-rank or world group
    has nothing to decide it, a rank whose queue head rolled out of its buffer, send/recv
    waits a synthetic pipeline matches across stages, 2-rank gloo skips and added
    collectives at a first checkpoint barrier, a gloo unposted send/recv whose stage-0
    ranks stopped together (the grader names them, the pipeline rule clears them), and
    two culprits where one hides behind the other, and ties nothing in the dumps decides
    (two ranks that each hold a collective the other never issued; an op mismatch in a
    2-rank group whose siblings' records are gone), now reported as possible ranks. Kept so
    a change that fixes one shows, and so none is forgotten."""
    test_regression_is_diagnosed(case)


def test_ranks_held_in_an_undecided_tie_are_not_named_for_what_follows() -> None:
    """NCCL, a 2-rank data-parallel group at a 30-entry buffer: broadcast against all_reduce,
    and nothing decides which is right. Both ranks wait in it, so their tensor-parallel peers
    wait on them further on; that follows from the tie and names neither."""
    report = analysis.analyze(Path(__file__).parent / "regressions_open" / "op_mismatch-319157", use_cache=False)
    report = report.to_dict()
    assert report["suspect_ranks"] == []
    assert {p["rank"] for p in report["possible_ranks"]} == {5, 7}
