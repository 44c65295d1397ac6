"""Two families a rank issues in turn; the rank that issued two of one without the other left."""

from __future__ import annotations

from pathlib import Path

import analysis
from analysis.diagnosis.turns import broken_turns

REGRESSIONS = Path(__file__).parent / "regressions"
EMB, MP, TP, DEF = "EMBEDDING_GROUP", "MODEL_PARALLEL_GROUP", "TENSOR_MODEL_PARALLEL_GROUP#0", "default_pg"


def _history(families: list[str]) -> list[tuple[str, int]]:
    seqs: dict[str, int] = {}
    out = []
    for f in families:
        seqs[f] = seqs.get(f, 0) + 1
        out.append((f, seqs[f]))
    return out


def test_two_of_one_family_after_strict_turns_break_them() -> None:
    h = _history([TP, TP, EMB, MP, TP, TP, EMB, MP, TP, TP, MP])
    assert broken_turns(h, {TP, EMB, MP}) == [(MP, EMB)]


def test_turns_kept_or_never_kept_are_not_broken() -> None:
    assert broken_turns(_history([EMB, MP, EMB, MP, EMB]), {EMB, MP}) == []
    # a family issued several times a step (tensor-parallel) never takes turns with one
    assert broken_turns(_history([TP, TP, MP, TP, TP, MP, MP]), {TP, MP}) == []
    # a break long before the newest records says nothing of the hang
    assert broken_turns(_history([EMB, MP, MP, EMB, MP, EMB]), {EMB, MP}) == []


def test_a_first_barrier_is_no_break() -> None:
    """A checkpoint barrier issued once is in turn with nothing: the rank at it kept every turn."""
    assert broken_turns(_history([EMB, MP, EMB, MP, DEF]), {EMB, MP, DEF}) == []


def test_the_rank_that_doubled_a_family_is_named() -> None:
    """extra_collective-692400 (JSON gloo dumps, 2 ranks, pp 2): rank 1 issued a debug metric
    all_reduce on the model-parallel group before the gradient norm's; rank 0's gradient
    norm completed against it and rank 0 went on to its first checkpoint barrier. Rank 1
    issued two model-parallel all_reduces after one embedding all_reduce."""
    report = analysis.analyze(REGRESSIONS / "extra_collective-692400", use_cache=False)
    assert report.suspect_ranks == [1]
    assert report.failure_class.value == "desync"


def test_turns_another_rank_breaks_too_are_not_the_programs() -> None:
    """extra_collective-152754 (gloo, tp 2, pp 2, 30-entry buffers): the last stage issues
    one data-parallel all_reduce in its first step and two in the next (the loss's), so its
    data-parallel and gradient-norm all_reduces take turns only once. Rank 3 shows the
    double at the end of its record, rank 2 of its stage shows it earlier: no turn is the
    program's, and rank 1, which added a debug all_reduce, is the one named."""
    report = analysis.analyze(REGRESSIONS / "extra_collective-152754", use_cache=False)
    assert report.suspect_ranks == [1]
