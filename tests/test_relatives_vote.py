"""A 2-rank tie where no sibling's history is known: the other groups of the description vote.

The case is a real run (tp 2, pp 4, dp 2, NCCL-shaped, a 30-entry ring buffer): rank 9
skipped the 1024-element gradient bucket of data-parallel group 6 (ranks 9, 11) at seq 6
and went on to the next step's 4096 one. The four stages' windows cover different seqs, so
no two data-parallel groups share a history and none is known to be a sibling; every
other data-parallel group that recorded seq 6 issued 1024 there, as rank 11 did at each of
its seqs.
"""

from __future__ import annotations

from pathlib import Path

import analysis
from analysis import schema as s
from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.history import history_vote
from analysis.diagnosis.relatives_vote import relatives_vote
from analysis.tables.load import load

CASE = Path(__file__).parent / "regressions" / "skip_collective-373016"
TIED = ["[[1024]]", "[[4096]]"]


def _analysis():
    return run_analysis(load(CASE, use_cache=False, workers=1))


def test_the_groups_of_the_description_name_the_side_in_step() -> None:
    a = _analysis()
    assert a.families.siblings("6") == []  # no common history: no sibling is known
    relatives = a.families.same_description("6")
    assert relatives_vote(a.cells, "6", 6, s.INPUT_SIZES, TIED, relatives) == "[[1024]]"


def test_groups_that_issue_other_calls_say_nothing() -> None:
    a = _analysis()
    tensor_parallel = [k for k, g in a.groups.groups.items() if g.desc == "TENSOR_MODEL_PARALLEL_GROUP"]
    assert relatives_vote(a.cells, "6", 6, s.INPUT_SIZES, TIED, tensor_parallel) is None
    assert relatives_vote(a.cells, "6", 6, s.INPUT_SIZES, TIED, []) is None


def test_a_call_site_that_issues_both_values_does_not_locate_the_point() -> None:
    """Both buckets come from one call site (start_grad_sync): the one earlier call from it
    in the group's window (seq 5, 4096) is the previous bucket, not this one's last step."""
    a = _analysis()
    assert history_vote(a.cells, "6", 6, s.INPUT_SIZES, TIED) is None
    report = analysis.analyze(CASE, use_cache=False)
    assert report.suspect_ranks == [9]
