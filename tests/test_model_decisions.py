"""The model's decisions on hand-made cells (``diagnosis/model_mismatches``): the majority of
a role, sibling groups, the history, the call the program issues elsewhere, a rank a call
off the other of a pair, a collective that moves nothing; and when none decides."""

from __future__ import annotations

from cellmaker import make_cells

from analysis.diagnosis.model_mismatches import model_mismatches
from analysis.model.families import program_families
from analysis.types import FailureClass


def _pairs(history: dict[str, list[str]], at_seq: dict[str, dict[int, str]]) -> list[dict]:
    """Two-rank groups: ``history[key]`` is the op each seq before the last; ``at_seq[key]`` what
    each of the group's two ranks issued at the last seq."""
    rows = []
    for g, (key, ops) in enumerate(history.items()):
        for q, op in enumerate(ops):
            rows += [{"pg_key": key, "rank": 2 * g + i, "seq": q, "op": op} for i in (0, 1)]
        last = len(ops)
        rows += [{"pg_key": key, "rank": 2 * g + i, "seq": last, "op": at_seq[key][i]} for i in (0, 1)]
    return rows


def test_majority_names_the_odd_rank() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": 5, "sizes": "[[4]]"} for r in range(3)]
    rows.append({"pg_key": "1", "rank": 3, "seq": 5, "sizes": "[[0]]"})
    (m,) = model_mismatches(make_cells(rows), program_families(make_cells(rows), {"1": "tp"}))
    assert (m.odd_ranks, m.failure_class, m.expected, m.decided_by) == (
        (3,),
        FailureClass.SIZE_MISMATCH,
        "[[4]]",
        "program",
    )


def test_a_tie_in_a_pair_is_decided_by_siblings_at_the_same_point() -> None:
    history = {"1": ["all_gather", "all_reduce"], "2": ["all_gather", "all_reduce"], "3": ["all_gather", "all_reduce"]}
    at = {
        "1": {0: "all_reduce", 1: "broadcast"},
        "2": {0: "all_reduce", 1: "all_reduce"},
        "3": {0: "all_reduce", 1: "all_reduce"},
    }
    cells = make_cells(_pairs(history, at))
    (m,) = model_mismatches(cells, program_families(cells, {k: "tp" for k in history}))
    assert m.odd_ranks == (1,)
    assert m.decided_by == "program"  # the sibling pairs run the same calls: one role


def test_siblings_at_another_point_of_the_program_do_not_vote() -> None:
    """Siblings in another pipeline stage issue other ops before the tie: they do not vote (the
    pair's own earlier calls decide: all_reduce is one it ran, broadcast one it never did)."""
    history = {"1": ["all_gather", "all_reduce"], "2": ["broadcast", "all_gather"], "3": ["broadcast", "all_gather"]}
    at = {
        "1": {0: "all_reduce", 1: "broadcast"},
        "2": {0: "broadcast", 1: "broadcast"},
        "3": {0: "broadcast", 1: "broadcast"},
    }
    cells = make_cells(_pairs(history, at))
    assert program_families(cells, {k: "tp" for k in history}).siblings("1") == []
    (m,) = model_mismatches(cells, program_families(cells, {k: "tp" for k in history}))
    assert m.expected == "all_reduce"
    assert m.odd_ranks == (1,)


def test_a_pair_whose_both_calls_were_run_before_stays_undecided() -> None:
    """Both tied calls repeat ones the group ran earlier: neither is the departure."""
    history = {"1": ["broadcast", "all_reduce"]}
    cells = make_cells(_pairs(history, {"1": {0: "all_reduce", 1: "broadcast"}}))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "tp"}))
    assert m.expected is None and not m.decisive
    assert m.odd_ranks == (0, 1)


def test_only_matching_siblings_vote() -> None:
    """One sibling shares the history and votes for rank 0's op; two others, elsewhere in the
    program, would have outvoted it."""
    history = {
        "1": ["all_gather", "all_reduce"],
        "2": ["all_gather", "all_reduce"],
        "3": ["broadcast", "all_gather"],
        "4": ["broadcast", "all_gather"],
    }
    at = {
        "1": {0: "all_reduce", 1: "broadcast"},
        "2": {0: "all_reduce", 1: "all_reduce"},
        "3": {0: "broadcast", 1: "broadcast"},
        "4": {0: "broadcast", 1: "broadcast"},
    }
    cells = make_cells(_pairs(history, at))
    assert program_families(cells, {k: "tp" for k in history}).siblings("1") == ["2"]
    m = next(m for m in model_mismatches(cells, program_families(cells, {k: "tp" for k in history})) if m.pg_key == "1")
    assert m.odd_ranks == (1,)
    assert m.expected == "all_reduce"


def test_sizes_of_ops_whose_sizes_vary_are_not_compared() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": 0, "op": "all_to_all", "sizes": f"[[{r + 1},4]]"} for r in range(4)]
    assert model_mismatches(make_cells(rows), program_families(make_cells(rows), {"1": "ep"})) == []


def _steps(n_steps: int, odd: dict | None = None, site: bool = True) -> list[dict]:
    """A 2-rank group whose step is an all_gather then an all_reduce; ``odd`` replaces rank 1's
    fields at the last all_reduce."""
    rows = []
    for step in range(n_steps):
        for i, (op, sizes, where) in enumerate(
            (("all_gather", "[[8]]", "gather:1"), ("all_reduce", "[[4]]", "reduce:2"))
        ):
            for rank in (0, 1):
                row = {"pg_key": "1", "rank": rank, "seq": 2 * step + i, "op": op, "sizes": sizes}
                row["call_site"] = where if site else "nan"
                if odd and rank == 1 and step == n_steps - 1 and i == 1:
                    row.update(odd)
                rows.append(row)
    return rows


def test_a_tie_with_no_sibling_is_decided_by_the_groups_earlier_steps() -> None:
    cells = make_cells(_steps(4, {"sizes": "[[0]]"}))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))
    assert (m.odd_ranks, m.expected, m.decided_by) == ((1,), "[[4]]", "history")


def test_without_call_sites_the_period_of_the_history_finds_the_same_point() -> None:
    cells = make_cells(_steps(4, {"sizes": "[[0]]"}, site=False))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))
    assert (m.odd_ranks, m.expected) == ((1,), "[[4]]")


def test_a_tie_at_the_first_step_stays_undecided() -> None:
    cells = make_cells(_steps(1, {"sizes": "[[2]]"}))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))
    assert not m.decisive


def _buckets(odd_rank_values: list[str]) -> list[dict]:
    """Three ranks of a DP group issue buckets [[4]], [[8]], [[16]]; rank 2 issues ``odd_rank_values``."""
    usual = ["[[4]]", "[[8]]", "[[16]]"]
    rows = [{"pg_key": "1", "rank": r, "seq": q, "sizes": v} for r in (0, 1) for q, v in enumerate(usual)]
    rows += [{"pg_key": "1", "rank": 2, "seq": q, "sizes": v} for q, v in enumerate(odd_rank_values)]
    return rows


def test_a_rank_one_collective_ahead_skipped_one() -> None:
    cells = make_cells(_buckets(["[[8]]", "[[16]]"]))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))[:1]
    assert (m.odd_ranks, m.shift, m.failure_class) == ((2,), 1, FailureClass.DESYNC)


def test_a_rank_one_collective_behind_added_one() -> None:
    cells = make_cells(_buckets(["[[1]]", "[[4]]", "[[8]]"]))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))[:1]
    assert (m.odd_ranks, m.shift, m.failure_class) == ((2,), -1, FailureClass.DESYNC)


def test_no_shift_is_claimed_where_the_group_repeats_itself() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": q, "sizes": "[[4]]"} for r in (0, 1) for q in range(3)]
    rows += [
        {"pg_key": "1", "rank": 2, "seq": 0, "sizes": "[[0]]"},
        {"pg_key": "1", "rank": 2, "seq": 1, "sizes": "[[4]]"},
    ]
    cells = make_cells(rows)
    (m,) = model_mismatches(cells, program_families(cells, {"1": "dp"}))
    assert (m.odd_ranks, m.shift, m.failure_class) == ((2,), 0, FailureClass.SIZE_MISMATCH)


def _only_active_pairs(tie: dict[int, str], later: list[str], sibling: list[str]) -> list[dict]:
    """Group "1" (ranks 0, 1) holds only a tie at seq 10 and the calls both issued after it; group
    "2" (ranks 2, 3, same description) holds other seqs: no earlier step of either is in the dumps."""
    rows = [{"pg_key": "1", "rank": r, "seq": 10, "op": op} for r, op in tie.items()]
    rows += [{"pg_key": "1", "rank": r, "seq": 11 + i, "op": op} for i, op in enumerate(later) for r in (0, 1)]
    rows += [{"pg_key": "2", "rank": r, "seq": 20 + i, "op": op} for i, op in enumerate(sibling) for r in (2, 3)]
    return rows


def test_a_tie_without_history_goes_to_the_call_the_program_issues_elsewhere() -> None:
    """Only-active dumps: neither an earlier step nor a sibling at the same seq is there, but the
    pair's later seqs and a sibling's other seqs issue all_reduce together; broadcast nowhere."""
    cells = make_cells(_only_active_pairs({0: "all_reduce", 1: "broadcast"}, ["all_gather"], ["all_reduce"]))
    (m,) = model_mismatches(cells, program_families(cells, {"1": "tp", "2": "tp"}))
    assert (m.odd_ranks, m.expected) == ((1,), "all_reduce")


def test_a_call_only_one_rank_issued_elsewhere_does_not_vote() -> None:
    """A lone rank's entry elsewhere may be the deviation itself: only calls issued together count."""
    rows = _only_active_pairs({0: "all_reduce", 1: "broadcast"}, [], [])
    rows.append({"pg_key": "2", "rank": 2, "seq": 30, "op": "all_reduce"})
    cells = make_cells(rows)
    (m,) = model_mismatches(cells, program_families(cells, {"1": "tp", "2": "tp"}))
    assert m.expected is None


_UNIT = [("broadcast", "[[64]]", "data"), ("all_gather", "[[8]]", "gather"), ("all_reduce", "[[16]]", "reduce")]


def _one_off(calls: dict[int, list[tuple[str, str, str]]]) -> list[dict]:
    """A 2-rank group whose records start at seq 10 (the older ones rolled out)."""
    rows = []
    for r, mine in calls.items():
        for q, (op, sizes, site) in enumerate(mine, start=10):
            rows.append({"pg_key": "1", "rank": r, "seq": q, "op": op, "sizes": sizes, "call_site": site})
    return rows


def _first_decision(calls: dict[int, list[tuple[str, str, str]]]) -> tuple:
    """The first mismatch of the group: seq, odd ranks, expected value, what decided, shift."""
    cells = make_cells(_one_off(calls))
    m = model_mismatches(cells, program_families(cells, {"1": "tp"}))[0]
    return (m.seq, m.odd_ranks, m.expected, m.decided_by, m.shift)


def test_the_side_without_a_call_both_sides_issue_in_turn_skipped_it() -> None:
    """From seq 10 on, rank 1 issues at each seq what rank 0 issues at the next: rank 0 has
    one call more. That call (the batch broadcast) is one rank 1 issues too, in its turn: a
    call of the program, so rank 1 skipped it."""
    assert _first_decision({0: _UNIT * 3, 1: _UNIT[1:] + _UNIT * 2}) == (10, (1,), "broadcast", "off_by_one", 1)


def test_the_side_with_a_call_of_its_own_added_it() -> None:
    """Rank 0's one call more is a debug all_reduce rank 1 never issues: rank 0 added it."""
    calls = {0: [("all_reduce", "[[1]]", "debug_metric"), *_UNIT * 3], 1: _UNIT * 3}
    assert _first_decision(calls) == (10, (0,), "broadcast", "off_by_one", -1)


def test_of_two_sizes_the_one_that_moves_nothing_is_odd() -> None:
    """A 2-rank group's first recorded collective: rank 0 passes an empty tensor. No earlier
    step and no sibling decide, but a program does not issue a collective to move nothing."""
    rows = [{"pg_key": "1", "rank": r, "seq": 5, "sizes": size} for r, size in ((0, "[[0]]"), (1, "[[1]]"))]
    (m,) = model_mismatches(make_cells(rows), program_families(make_cells(rows), {"1": "mp"}))
    assert (m.odd_ranks, m.expected, m.decided_by) == ((0,), "[[1]]", "usual")


def test_two_sizes_that_both_move_something_stay_tied() -> None:
    rows = [{"pg_key": "1", "rank": r, "seq": 5, "sizes": size} for r, size in ((0, "[[2]]"), (1, "[[1]]"))]
    (m,) = model_mismatches(make_cells(rows), program_families(make_cells(rows), {"1": "mp"}))
    assert not m.decisive


def _pair_and_siblings(pair: dict[int, list[str]], siblings_at: int) -> list[dict]:
    """Only-active cells: group "1" a pair (ranks 0 and 1) whose calls from seq 17 on are
    ``pair[rank]``; group "2" (ranks 2 and 3, the same program) holds one ``all_reduce``
    pending at ``siblings_at``."""
    rows = [
        {"pg_key": "1", "rank": r, "seq": 17 + i, "op": op, "call_site": f"train.py:{op} in step"}
        for r, ops in pair.items()
        for i, op in enumerate(ops)
    ]
    rows += [{"pg_key": "2", "rank": r, "seq": siblings_at, "call_site": "train.py:all_reduce in step"} for r in (2, 3)]
    return rows


def test_a_pair_one_call_apart_is_decided_by_where_its_siblings_stand() -> None:
    """Rank 1 issued at 17 the all_reduce rank 0 issued at 18, after an all_to_all rank 1 never
    issued: a skip by rank 1 or an extra by rank 0 cost alike. The sibling group stands at 18
    as rank 0 does: rank 1 is one short, it skipped."""
    rows = _pair_and_siblings({0: ["all_to_all", "all_reduce"], 1: ["all_reduce"]}, siblings_at=18)
    cells = make_cells(rows)
    (m,) = model_mismatches(cells, program_families(cells, {"1": "ep", "2": "ep"}))
    assert (m.odd_ranks, m.failure_class, m.decided_by, m.shift) == ((1,), FailureClass.DESYNC, "pair_counts", 1)


def test_the_side_one_call_over_where_its_siblings_stand_added_it() -> None:
    rows = _pair_and_siblings({0: ["broadcast", "all_reduce"], 1: ["all_reduce"]}, siblings_at=17)
    cells = make_cells(rows)
    (m,) = model_mismatches(cells, program_families(cells, {"1": "ep", "2": "ep"}))
    assert (m.odd_ranks, m.failure_class) == ((0,), FailureClass.DESYNC)


def test_siblings_standing_with_neither_side_decide_nothing() -> None:
    """The sibling group stands at 19, where neither rank of the pair does: the counts do not
    single one out, and the pair stays undecided."""
    rows = _pair_and_siblings({0: ["all_to_all", "all_reduce"], 1: ["all_reduce"]}, siblings_at=19)
    cells = make_cells(rows)
    found = model_mismatches(cells, program_families(cells, {"1": "ep", "2": "ep"}))
    assert all(m.decided_by != "pair_counts" for m in found)
    assert not any(m.odd_ranks == (1,) and m.decisive for m in found)
