"""Layer 1 of the one model: the consensus program of each family, its support, its period
(docs/one-model.md). Hand-made cells, and the real dumps of the samples."""

from __future__ import annotations

from cellmaker import make_cells
from locations import SAMPLE_DUMPS

import analysis
from analysis import schema as s
from analysis.diagnosis.analysis import run_analysis
from analysis.model.families import program_families
from analysis.model.program import consensus_program

A = {"op": "all_reduce", "call_site": "train.py:10 in step"}
B = {"op": "all_gather", "call_site": "train.py:20 in step"}


def _steps(seqs: range, ranks: range, odd: dict[tuple[int, int], dict] | None = None) -> list[dict]:
    """Group "1": calls A and B in turn (a step of two seqs); ``odd[(rank, seq)]`` overrides."""
    odd = odd or {}
    return [
        {"pg_key": "1", "rank": r, "seq": q, **(A if q % 2 == 0 else B), **odd.get((r, q), {})}
        for q in seqs
        for r in ranks
    ]


def _program(rows: list[dict]):
    cells = make_cells(rows)
    return consensus_program(cells, program_families(cells, {"1": "dp"}).family_of)


def test_the_call_most_ranks_issue_with_its_support_and_the_step_period() -> None:
    program = _program(_steps(range(12), range(4), {(3, 11): {"sizes": "[[0]]"}}))
    assert program.period == {"dp": 2}
    call = program.at("dp", 11)
    assert (call[s.OP], call[s.INPUT_SIZES], call["support"], call["seen"]) == ("all_gather", "[[4]]", 3, 4)
    assert (call["phase"], call["phase_support"], call["phase_seen"]) == (1, 23, 24)
    agreed = program.calls.loc[program.calls[s.SEQ] != 11]
    assert (agreed["support"] == agreed["seen"]).all() and (agreed["seen"] == 4).all()


def test_a_position_few_ranks_reached_is_weighed_with_its_phase_in_earlier_steps() -> None:
    """The hung step: only ranks 0 and 1 issued seq 10 (one of them from another line)."""
    rows = _steps(range(10), range(4)) + _steps(range(10, 11), range(2), {(1, 10): {"call_site": "x.py:1 in f"}})
    call = _program(rows).at("dp", 10)
    assert (call["support"], call["seen"]) == (1, 2), "a tie in the hung step itself"
    assert call["phase_seen"] == 22 and call["phase_support"] in (1, 21)


def test_no_period_where_the_history_does_not_repeat() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": q, "sizes": f"[[{q}]]"} for q in range(12) for r in range(2)]
    program = _program(rows)
    assert program.period == {}
    assert (program.calls["phase"] == program.calls[s.SEQ]).all()


def _sample_program(name: str):
    a = run_analysis(analysis.load(SAMPLE_DUMPS / name, use_cache=False))
    return a, consensus_program(a.cells, a.families.family_of)


def test_a_healthy_job_agrees_everywhere() -> None:
    _, program = _sample_program("healthy")
    assert not program.calls.empty
    assert (program.calls["support"] == program.calls["seen"]).all()


def test_one_wrong_tensor_leaves_one_dissent_at_its_position() -> None:
    a, program = _sample_program("size_mismatch")
    dissent = program.calls.loc[program.calls["support"] < program.calls["seen"]]
    assert len(dissent) >= 1
    first = dissent.sort_values(s.SEQ).iloc[0]
    assert first["seen"] - first["support"] == 1 and first[s.INPUT_SIZES] != "[[0]]"
    here = a.cells.loc[
        a.cells[s.PG_KEY].astype(str).map(a.families.family_of).eq(first["family"]).to_numpy()
        & (a.cells[s.SEQ] == first[s.SEQ]).to_numpy()
    ]
    odd = here.loc[here[s.INPUT_SIZES].astype(str) != str(first[s.INPUT_SIZES]), s.RANK]
    assert odd.tolist() == [2], "the injected rank is the one dissent"


def test_every_group_of_a_family_witnesses_its_positions() -> None:
    """32 ranks, TP 4 x PP 2 x DP 4: the eight tensor-parallel groups issue one program, so
    each position every rank reached is seen by all 32 ranks."""
    a, program = _sample_program("large_32_stuck")
    (tp,) = {f for k, f in a.families.family_of.items() if a.families.description_of.get(k) == "tensor_parallel"}
    calls = program.calls.loc[program.calls["family"] == tp]
    assert calls["seen"].max() == 32
    assert (calls.loc[calls["seen"] == 32, "support"] == 32).all(), "nothing wrong before the hang"
