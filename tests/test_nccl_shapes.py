"""NCCL-shaped cases gloo cannot record: states, P2P, coalescing, every FR version, JSON."""

from __future__ import annotations

import pytest
from fr_versions import SUPPORTED_VERSIONS
from nccl_sets import coll, tp_job, write_set

import analysis


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_missing_participant_in_every_version(tmp_path, version, fmt) -> None:
    if fmt == "json" and version in ("2.0", "2.1", "2.2"):
        pytest.skip("no JSON writer before FR 2.3")
    write_set(tmp_path, tp_job(world=4, steps=5, stuck_rank=2), version=version, fmt=fmt)
    report = analysis.analyze(tmp_path)
    assert report.file_errors == []
    assert report.suspect_ranks == [2]
    assert report.failure_class == "missing_participant"
    assert report.wavefront.collective_seq_id == 5
    assert report.victim_ranks == [0, 1, 3]


def test_pg_ids_differ_per_rank_but_groups_still_join(tmp_path) -> None:
    pg_ids = {(r, "1"): 7 + 3 * r for r in range(4)}
    write_set(tmp_path, tp_job(world=4, steps=3, stuck_rank=1), pg_ids=pg_ids)
    report = analysis.analyze(tmp_path)
    assert len(report.analysis.groups.groups) == 1
    assert report.suspect_ranks == [1]


def test_everyone_issued_nobody_completed_is_stalled_in_flight(tmp_path) -> None:
    ranks = [0, 1, 2, 3]
    per_rank = {
        r: [coll("1", "dp", ranks, 1), coll("1", "dp", ranks, 2, state="started", op="all_reduce")] for r in ranks
    }
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.verdict == "hang"
    assert report.failure_class == "stalled_in_flight"
    assert report.suspect_ranks == []
    assert report.attribution_state == "STOP"
    assert report.wavefront.collective_seq_id == 2


def test_rank_stuck_on_what_its_peers_completed_is_the_straggler(tmp_path) -> None:
    ranks = [0, 1, 2, 3]
    per_rank = {r: [coll("1", "tp", ranks, 1), coll("1", "tp", ranks, 2)] for r in ranks}
    per_rank[3][1] = coll("1", "tp", ranks, 2, state="started")
    for r in (0, 1, 2):
        per_rank[r].append(coll("1", "tp", ranks, 3, state="started"))
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.suspect_ranks == [3]
    assert report.failure_class == "stalled_in_flight"


def test_unmatched_send_names_the_peer_that_never_posted_recv(tmp_path) -> None:
    pp = [0, 1]
    per_rank = {
        0: [coll("2", "pipeline", pp, 0, op="send 0->1", is_p2p=True, p2p_seq_id=4, state="started")],
        1: [coll("2", "pipeline", pp, 0, op="send 1->0", is_p2p=True, p2p_seq_id=3)],
    }
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.suspect_ranks == [1]
    # rank 1 waits in nothing: it stopped before posting the recv (CPU side), a missing participant
    assert report.failure_class == "missing_participant"
    assert "never posted the recv" in report.summary + " ".join(report.evidence)
    assert report.victim_ranks == [0]


def test_unmatched_send_whose_peer_went_on_is_p2p_unmatched(tmp_path) -> None:
    """The peer that never posted the recv is blocked further on (a collective after it): it went
    on without posting it."""
    pp = [0, 1]
    per_rank = {
        0: [coll("2", "pipeline", pp, 0, op="send 0->1", is_p2p=True, p2p_seq_id=4, state="started")],
        1: [
            coll("2", "pipeline", pp, 0, op="send 1->0", is_p2p=True, p2p_seq_id=3),
            coll("3", "tp", [1, 2], 1, op="all_reduce", state="started"),
        ],
        2: [coll("3", "tp", [1, 2], 1, op="all_reduce", state="started")],
    }
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.suspect_ranks == [1]
    assert report.failure_class == "p2p_unmatched"


def test_matched_pending_send_and_recv_is_not_blamed_on_either(tmp_path) -> None:
    pp = [0, 1]
    per_rank = {
        0: [coll("2", "pipeline", pp, 0, op="send 0->1", is_p2p=True, p2p_seq_id=4, state="started")],
        1: [coll("2", "pipeline", pp, 0, op="recv 1<-0", is_p2p=True, p2p_seq_id=4, state="started")],
    }
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.suspect_ranks == []


def test_coalesced_group_is_compared_as_one_unit(tmp_path) -> None:
    ranks = [0, 1, 2]
    per_rank = {}
    for r in ranks:
        sizes = [[8]] if r != 1 else [[9]]
        per_rank[r] = [
            coll("1", "dp", ranks, 1),
            coll("1", "dp", ranks, 2, op="all_reduce", input_sizes=[[4]]),
            coll("1", "dp", ranks, 2, op="all_reduce", input_sizes=sizes),
            coll("1", "dp", ranks, 2, op="coalesced", input_sizes=[]),
        ]
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.verdict == "mismatch"
    assert report.failure_class == "size_mismatch"
    assert report.suspect_ranks == [1]


def test_two_independent_roots_in_two_groups_are_both_named(tmp_path) -> None:
    per_rank = {}
    for r in range(8):
        group, members = ("1", [0, 1, 2, 3]) if r < 4 else ("2", [4, 5, 6, 7])
        entries = [coll(group, "tp", members, s) for s in (1, 2)]
        if r not in (2, 5):
            entries.append(coll(group, "tp", members, 3, state="scheduled"))
        per_rank[r] = entries
    write_set(tmp_path, per_rank)
    report = analysis.analyze(tmp_path)
    assert report.suspect_ranks == [2, 5]
    assert report.failure_class == "missing_participant"


def test_missing_dump_file_is_a_suspect(tmp_path) -> None:
    write_set(tmp_path, tp_job(world=4, steps=3, stuck_rank=3))
    (tmp_path / "nccl_trace_rank_3").unlink()
    report = analysis.analyze(tmp_path)
    assert report.missing_dumps == [3]
    assert report.suspect_ranks == [3]
    assert report.failure_class == "missing_dump"


def test_healthy_set_is_healthy(tmp_path) -> None:
    ranks = [0, 1, 2]
    write_set(tmp_path, {r: [coll("1", "dp", ranks, s) for s in (1, 2, 3)] for r in ranks})
    report = analysis.analyze(tmp_path)
    assert report.verdict == "healthy"
    assert report.suspect_ranks == []
    assert report.evidence == []
