"""Pipeline peers where pg_config lists no pipeline group (real gloo runs, stock pg_config).

Gloo records no send/recv, and its stock pg_config names no group, so nothing in these
dumps lists who a rank's pipeline peer is. The peer is inferred: a rank of another stage
(another program) that shares a group with it and holds the same place in its step group.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import analysis
from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.consequences import Steps
from analysis.tables.load import load

REGRESSIONS = Path(__file__).parent / "regressions"


@pytest.mark.parametrize(
    ("case", "rank", "peers"),
    [
        # tp 2, pp 2, dp 2 (JSON dumps): rank 5 holds place 1 of its tensor-parallel pair in
        # stage 1; rank 1 holds place 1 in stage 0. Rank 0 shares a group with it but holds
        # place 0; rank 7 (its data-parallel peer) runs the same program.
        ("two_culprits-72066", 5, {1}),
        # tp 4, pp 2, dp 2: rank 12 leads its tensor-parallel group in stage 1, rank 4 in
        # stage 0; rank 8 (its data-parallel peer, also first of its group) shares its stage.
        ("two_culprits-463711", 12, {4}),
        # tp 2, pp 2, dp 1, only-active dumps: the model-parallel group is the whole job
        ("p2p_unposted-480443", 2, {0}),
        # tp 2, pp 4, dp 4, ep 4: rank 14 (stage 1) holds place 0 of its tensor-parallel
        # pair; its model-parallel group holds the pairs of stages 0-3. Stages 1 and 2 run
        # one program, but no group of one program joins them. Its expert-parallel mates
        # (12, 13: place 0 and 1 of another pair) share its stage.
        ("stuck_compute-970588", 14, {6, 22, 30}),
    ],
)
def test_pipeline_peer_is_the_same_place_in_another_stage(case: str, rank: int, peers: set[int]) -> None:
    a = run_analysis(load(REGRESSIONS / case, use_cache=False, workers=1))
    steps = Steps(a, blocked_ranks=set())
    assert steps.pipeline_peers(rank) == set()  # pg_config lists no pipeline group
    assert steps.likely_pipeline_peers(rank) == peers


def test_a_rank_blocked_on_a_stuck_pipeline_peer_is_possible_not_named() -> None:
    """stuck_compute-970588: rank 23 is stuck; rank 22, its tensor-parallel mate, went on and
    waits on it. Ranks 14 and 15 (stage 1) wait in recv_backward from 22 and 23 (unrecorded
    by gloo); their expert-parallel mates 12 and 13 wait on them. Rank 15's pipeline peer
    is the stuck 23, left by its own mate, while 14 and 15 stopped level with each other;
    rank 14's peer 22 waits on 23. One stuck rank explains all: 14 and 15 stay possible."""
    report = analysis.analyze(REGRESSIONS / "stuck_compute-970588", use_cache=False)
    assert report.suspect_ranks == [23]
    assert sorted(p["rank"] for p in report.possible_ranks) == [14, 15]
