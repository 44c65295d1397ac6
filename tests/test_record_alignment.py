"""Two ranks of one program, record by record (``record_id`` numbers every op of a process).

Tensor-parallel partners issue, each step, two like all_reduces and a send to the next
stage. One rank skipping an all_reduce, or adding a debug all_reduce of its own, shows
in the record numbers even where the group's seqs alone cannot tell a skip from an add
(every all_reduce of the run looks alike).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nccl_sets import coll, write_set

from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.record_alignment import RecordAlignment
from analysis.tables.load import load


def _step_calls() -> list[tuple[str, Any]]:
    return [("tp", "all_reduce"), ("tp", "all_reduce"), ("pp", "send")]


def _records(rank: int, calls: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """``calls`` as one rank's entries, each group's seqs counted as it goes."""
    tp_name, pp_name = ("10", "50") if rank == 0 else ("10", "51")
    seqs = {"tp": 0, "pp": 0, "debug": 0}
    out = []
    for kind, op in calls:
        seqs[kind] += 1
        if kind == "tp":
            out.append(coll(tp_name, "TENSOR_MODEL_PARALLEL_GROUP", [0, 1], seqs[kind], op=op, input_sizes=[[16, 32]]))
        elif kind == "debug":
            out.append(coll("0", "default_pg", [0, 1], seqs[kind], op=op, input_sizes=[[1]]))
        else:
            ranks = [0, 2] if rank == 0 else [1, 3]
            out.append(coll(pp_name, "PIPELINE_MODEL_PARALLEL_GROUP", ranks, 0, op="send 0->1", p2p_seq_id=seqs[kind]))
    return out


def _align(folder: Path, rank0: list[tuple[str, Any]], rank1: list[tuple[str, Any]]):
    write_set(folder, {0: _records(0, rank0), 1: _records(1, rank1)})
    a = run_analysis(load(folder, use_cache=False, workers=1))
    return RecordAlignment(a).compare(0, 1)


def test_the_rank_a_record_short_skipped_a_call_of_the_program(tmp_path: Path) -> None:
    program = _step_calls() * 4
    skipped = program[:3] + program[4:]  # rank 1 leaves out the first all_reduce of step 2
    m = _align(tmp_path, program, skipped)
    assert m is not None
    # of two like all_reduces in a row, which one it left out does not show: the last one is named
    assert (m.short, m.long, m.record_id, m.seq, m.op, m.added) == (1, 0, 4, 4, "all_reduce", False)


def test_a_record_of_a_call_of_its_own_was_added(tmp_path: Path) -> None:
    program = _step_calls() * 4
    added = program[:3] + [("debug", "all_reduce")] + program[3:]  # rank 0 logs a debug metric
    m = _align(tmp_path, added, program)
    assert m is not None
    assert (m.short, m.long, m.record_id, m.added) == (1, 0, 3, True)


def test_ranks_that_hold_the_same_records_are_aligned(tmp_path: Path) -> None:
    program = _step_calls() * 4
    assert _align(tmp_path, program, program) is None


def test_like_calls_one_seq_apart_are_not_aligned_records(tmp_path: Path) -> None:
    """Rank 1 leaves out a send early on; only the later records are kept (an only-active
    dump). From the first number both hold, rank 1's like all_reduces stand one seq ahead
    of rank 0's at each number: the shift lies before what the dumps hold, and no call
    there is the one it skipped."""
    program = [("tp", "all_reduce")] * 3 + [("pp", "send")] + [("tp", "all_reduce")] * 8 + _step_calls() * 2
    skipped = program[:3] + program[4:]
    records = {0: _records(0, program), 1: _records(1, skipped)}
    for rank, entries in records.items():
        for i, e in enumerate(entries):
            e["record_id"] = i
        records[rank] = entries[6:]
    write_set(tmp_path, records)
    a = run_analysis(load(tmp_path, use_cache=False, workers=1))
    alignment = RecordAlignment(a)
    assert alignment.compare(0, 1) is None
