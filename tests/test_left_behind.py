"""Silent ranks behind their groups, where the dumps record send/recv (NCCL).

Two ranks stall on their own. Rank 3 is plainly waited on: rank 2 waits for it in their
tensor-parallel all_gather, rank 1 in their data-parallel all_reduce. Rank 0 waits in
nothing and its tensor-parallel partner, rank 1, waits on rank 3, not on it; but in the
embedding group it shares with rank 2, rank 2 issued its all_reduce (queued behind its
wait on rank 3) and rank 0 never did. A rank that waits in nothing, where send/recv are
recorded, is blocked on nothing the dumps show: it stopped on its own, before rank 2.
"""

from __future__ import annotations

from pathlib import Path

from nccl_sets import coll, write_set

import analysis


def tp(name: str, ranks: list[int], seq: int, state: str = "completed") -> dict:
    return coll(name, "TENSOR_MODEL_PARALLEL_GROUP", ranks, seq, state=state, op="all_gather", input_sizes=[[8]])


def dp(name: str, ranks: list[int], seq: int, state: str = "completed") -> dict:
    return coll(name, "DATA_PARALLEL_GROUP", ranks, seq, state=state, op="all_reduce", input_sizes=[[64]])


def emb(name: str, ranks: list[int], seq: int, state: str = "completed") -> dict:
    return coll(name, "EMBEDDING_GROUP", ranks, seq, state=state, op="all_reduce", input_sizes=[[32]])


def p2p(rank: int) -> dict:
    name, ranks = ("50", [0, 2]) if rank in (0, 2) else ("51", [1, 3])
    op = "send 0->1" if rank < 2 else "recv 1<-0"
    return coll(name, "PIPELINE_MODEL_PARALLEL_GROUP", ranks, 0, op=op, p2p_seq_id=1, input_sizes=[[8]])


def write_job(folder: Path, rank0_issued_embedding: bool) -> Path:
    """Tensor-parallel pairs (0, 1) and (2, 3), data-parallel pairs (0, 2) and (1, 3), one
    embedding and one pipeline group per data-parallel pair."""
    groups = {0: ("10", "31", "40"), 1: ("10", "30", "41"), 2: ("11", "31", "40"), 3: ("11", "30", "41")}
    tp_ranks = {"10": [0, 1], "11": [2, 3]}
    pair = {"30": [1, 3], "31": [0, 2], "40": [0, 2], "41": [1, 3]}
    per_rank = {}
    for r, (t, d, e) in groups.items():
        per_rank[r] = [tp(t, tp_ranks[t], q) for q in (1, 2, 3)] + [p2p(r), emb(e, pair[e], 1)]
    per_rank[0] += [dp("31", pair["31"], 1)] + (
        [emb("40", pair["40"], 2, "scheduled")] if rank0_issued_embedding else []
    )
    per_rank[1] += [dp("30", pair["30"], 1, "started")]
    per_rank[2] += [
        dp("31", pair["31"], 1),
        tp("11", tp_ranks["11"], 4, "started"),
        emb("40", pair["40"], 2, "scheduled"),
    ]
    return write_set(folder, per_rank)


def test_a_silent_rank_every_other_member_of_a_group_went_past_stopped_on_its_own(tmp_path: Path) -> None:
    report = analysis.analyze(write_job(tmp_path, rank0_issued_embedding=False), use_cache=False).to_dict()
    assert report["suspect_ranks"] == [0, 3], report["summary"]
    assert any("the other members of that group" in line for line in report["evidence"]), report["evidence"]


def test_a_silent_rank_level_with_its_groups_is_not_named(tmp_path: Path) -> None:
    """Rank 0 issued the embedding all_reduce too: it is level with every group it is in."""
    report = analysis.analyze(write_job(tmp_path, rank0_issued_embedding=True), use_cache=False).to_dict()
    assert 0 not in report["suspect_ranks"], report["summary"]
