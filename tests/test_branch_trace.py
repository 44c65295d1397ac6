"""The branch trace names the rule of ``hang._component`` that decided each wait-for cycle."""

from __future__ import annotations

from pathlib import Path

from benchmarks.branch_trace import branch_name, trace_case

CASES = Path(__file__).resolve().parent / "regressions"


def test_each_cycle_is_traced_to_the_return_that_decided_it():
    cycles = trace_case(CASES / "extra_collective-523071")
    assert len(cycles) == 1
    (cycle,) = cycles
    assert cycle["members"] == 4 and cycle["truth"] == [7]
    assert cycle["named"] == [7] and cycle["kinds"] == ["count_edit"]
    assert branch_name(cycle["line"]).split(": ", 1)[1].startswith("return by_model")
