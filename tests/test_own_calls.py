"""Ranks blocked in a call of their own (``diagnosis/own_calls``): the ranks of its program
that went past the point where it issued it, without it, against a tie of one."""

from __future__ import annotations

from pathlib import Path

from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.hang_view import HangView
from analysis.diagnosis.own_calls import own_call_findings, went_past
from analysis.tables.load import load

REGRESSIONS = Path(__file__).parent / "regressions"


def test_a_rank_went_past_a_point_with_as_many_of_each_family_and_more_of_one() -> None:
    mine = {"tp": 12, "dp": 6}
    assert went_past({"tp": 16, "dp": 6, "pp": 3}, mine)
    assert not went_past({"tp": 12, "dp": 6}, mine)  # where it stood: not past it
    assert not went_past({"tp": 16, "dp": 5}, mine)  # short of one family: not there yet
    assert not went_past({"pp": 9}, mine)  # nothing counted by both


def _own_calls(case: str) -> list:
    a = run_analysis(load(REGRESSIONS / case, use_cache=False, workers=1))
    return own_call_findings(HangView(a))


def test_a_debug_metric_only_one_rank_issued_is_its_extra_where_its_program_went_on() -> None:
    """gloo, 16 ranks: rank 14 added an all_reduce on the default group. Its pipeline
    stage's other ranks went past the point where it issued it; rank 15, blocked in a
    broadcast rank 14 never issued, is its mirror and is not named."""
    (f,) = _own_calls("extra_collective-305902")
    assert (f.rank, f.pg_key, f.seq) == (14, "0", 2)
    assert set(f.detail["went_on"]) >= {8, 10, 12} and 15 not in f.detail["went_on"]
    assert f.detail["cost"] < f.detail["other_side"]


def test_a_pair_each_holding_a_call_the_other_never_issued_decides_nothing() -> None:
    """gloo: rank 4 skipped a tensor-parallel all_reduce and went on to an expert all_to_all
    its one expert peer (rank 5) never issued, while rank 5 waits in that all_reduce. Each
    went past the other's call: one rank of its program against it is a tie."""
    assert _own_calls("skip_collective-176285") == []
