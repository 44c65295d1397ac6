"""Pipeline peers where pg_config lists no pipeline group (real gloo runs, stock pg_config).

Gloo records no send/recv, and its stock pg_config names no group, so nothing in these
dumps lists who a rank's pipeline peer is. The peer is inferred: a rank of another stage
(another program) that shares a group with it and holds the same place in its step group.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
        # tp 2, pp 2, dp 1, only-active dumps
        ("p2p_unposted-480443", 2, {0}),
    ],
)
def test_pipeline_peer_is_the_same_place_in_another_stage(case: str, rank: int, peers: set[int]) -> None:
    a = run_analysis(load(REGRESSIONS / case, use_cache=False, workers=1))
    steps = Steps(a, blocked_ranks=set())
    assert steps.pipeline_peers(rank) == set()  # pg_config lists no pipeline group
    assert steps.likely_pipeline_peers(rank) == peers
