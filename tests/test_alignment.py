"""Layer 2 of the one model: every rank aligned to its role's program, the first edit of
each departing rank and the class it gives (docs/one-model.md). Hand-made cells: a step
of three calls in one data-parallel group of four ranks, one rank departing."""

from __future__ import annotations

from cellmaker import make_cells
from locations import SAMPLE_DUMPS

import analysis
from analysis import schema as s
from analysis.diagnosis.alignment import align
from analysis.diagnosis.analysis import run_analysis
from analysis.diagnosis.departures import departures
from analysis.model.families import program_families
from analysis.model.program import consensus_program
from analysis.model.roles import group_roles
from analysis.types import FailureClass

STEP = (
    {"op": "all_reduce", "sizes": "[[4096]]", "dtypes": "BFloat16", "call_site": "ddp.py:319 in start_grad_sync"},
    {"op": "all_reduce", "sizes": "[[1024]]", "dtypes": "BFloat16", "call_site": "ddp.py:319 in start_grad_sync"},
    {"op": "all_reduce", "sizes": "[[1]]", "dtypes": "Float", "call_site": "train.py:40 in average_losses"},
)
STRAY = {"op": "all_reduce", "sizes": "[[1]]", "dtypes": "Float", "call_site": "debug.py:7 in log_metric"}


def _rows(key: str, ranks: range, seqs: range, calls=STEP, mine: dict[int, list[dict]] | None = None) -> list[dict]:
    """Every rank issues ``calls`` in turn at ``seqs``; ``mine[rank]`` is that rank's own
    list of calls from ``seqs.start`` on instead."""
    out = []
    for r in ranks:
        own = (mine or {}).get(r)
        for i, q in enumerate(seqs):
            call = own[i] if own is not None and i < len(own) else None
            if own is not None and call is None:
                break  # its history ends here
            out.append({"pg_key": key, "rank": r, "seq": q, **(call or calls[q % len(calls)])})
    return out


def _departures(rows: list[dict], desc: dict[str, str] | None = None):
    cells = make_cells(rows)
    families = program_families(cells, desc or {"1": "dp"})
    roles = group_roles(cells, families)
    alignment = align(cells, roles, consensus_program(cells, roles, families.description_of), families.description_of)
    return alignment, departures(alignment, cells)


def _program_from(q: int, n: int) -> list[dict]:
    return [STEP[(q + i) % 3] for i in range(n)]


def test_a_wrong_tensor_from_a_neighbouring_line_is_a_size_mismatch() -> None:
    wrong = {**STEP[0], "sizes": "[[0]]", "call_site": "ddp.py:321 in start_grad_sync"}
    rows = _rows("1", range(4), range(12), mine={2: _program_from(0, 9) + [wrong] + _program_from(10, 2)})
    alignment, (m,) = _departures(rows)
    (edit,) = alignment.edits
    assert (edit.rank, edit.seq, edit.kind) == (2, 9, "substitute")
    assert set(edit.differs) == {s.INPUT_SIZES, s.CALL_SITE}
    assert (m.failure_class, m.odd_ranks, m.expected, m.found) == (
        FailureClass.SIZE_MISMATCH,
        (2,),
        "[[4096]]",
        {2: "[[0]]"},
    )


def test_a_wrong_dtype_from_a_neighbouring_line_is_a_dtype_mismatch() -> None:
    wrong = {**STEP[1], "dtypes": "Half", "call_site": "ddp.py:321 in start_grad_sync"}
    rows = _rows("1", range(4), range(12), mine={1: _program_from(0, 7) + [wrong] + _program_from(8, 4)})
    _, (m,) = _departures(rows)
    assert (m.failure_class, m.odd_ranks, m.attribute) == (FailureClass.DTYPE_MISMATCH, (1,), s.INPUT_DTYPES)


def test_a_skipped_call_shifts_the_rank_a_desync() -> None:
    rows = _rows("1", range(4), range(12), mine={3: _program_from(0, 7) + _program_from(8, 4)})
    alignment, (m,) = _departures(rows)
    assert alignment.edits[0].kind == "skip"
    assert (m.failure_class, m.odd_ranks, m.shift, m.seq) == (FailureClass.DESYNC, (3,), 1, 7)


def test_a_stray_call_of_its_own_is_an_extra_call_a_desync() -> None:
    rows = _rows("1", range(4), range(12), mine={0: _program_from(0, 5) + [STRAY] + _program_from(5, 6)})
    alignment, (m,) = _departures(rows)
    assert alignment.edits[0].kind == "extra"
    assert (m.failure_class, m.odd_ranks, m.shift) == (FailureClass.DESYNC, (0,), -1)


def test_a_stray_call_where_the_rank_stops_is_still_an_extra_call() -> None:
    """Its history ends in the stray call: it shares only the op with the program's call there."""
    rows = _rows("1", range(4), range(12), mine={0: _program_from(0, 10) + [STRAY]})
    _, (m,) = _departures(rows)
    assert (m.failure_class, m.odd_ranks) == (FailureClass.DESYNC, (0,))


def test_another_collective_at_the_same_point_is_a_desync() -> None:
    other = {**STEP[0], "op": "broadcast"}
    rows = _rows("1", range(4), range(12), mine={2: _program_from(0, 6) + [other] + _program_from(7, 5)})
    _, (m,) = _departures(rows)
    assert (m.failure_class, m.attribute, m.found) == (FailureClass.DESYNC, s.OP, {2: "broadcast"})


def test_groups_that_run_different_calls_at_one_seq_are_two_roles_not_a_departure() -> None:
    """Two data-parallel groups of one description (two pipeline stages): their calls differ
    at every seq, so neither departs."""
    later = tuple({**c, "call_site": c["call_site"].replace("ddp.py", "stage1.py")} for c in STEP[::-1])
    rows = _rows("1", range(3), range(9)) + _rows("2", range(3, 6), range(9), calls=later)
    alignment, found = _departures(rows, {"1": "dp", "2": "dp"})
    assert alignment.edits == [] and found == []


def test_a_pair_with_nothing_to_tell_its_sides_apart_is_a_tie() -> None:
    """Two ranks, one call each, no history: no side is the program."""
    rows = [
        {"pg_key": "1", "rank": 0, "seq": 0, **STEP[0]},
        {"pg_key": "1", "rank": 1, "seq": 0, **STEP[0], "sizes": "[[8]]"},
    ]
    alignment, (m,) = _departures(rows)
    assert alignment.ties == [("1", 0)]
    assert (m.expected, m.odd_ranks, m.failure_class) == (None, (0, 1), FailureClass.SIZE_MISMATCH)


def test_the_model_engine_names_the_samples_wrong_tensor() -> None:
    a = run_analysis(analysis.load(SAMPLE_DUMPS / "size_mismatch", use_cache=False))
    first = a.mismatches[0]
    assert (first.failure_class, first.odd_ranks) == (FailureClass.SIZE_MISMATCH, (2,))
