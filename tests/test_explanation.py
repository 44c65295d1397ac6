"""Layer 3 of the one model: the program of ranks in record order, each rank's records
aligned to it, and the members of a wait-for cycle whose records explain it."""

from __future__ import annotations

import pandas as pd

from analysis import schema as s
from analysis.diagnosis.explanation import cycle_causes, record_codes, record_departure
from analysis.model.records import Records, record_program, records_of

STEP = ["ar:dp", "ag:tp", "ar:tp", "bc:tp", "ar:pp"]
"""One training step: op and group family of each call, in order."""


def records(histories: dict[int, list[str]], first: int = 0, sizes: dict[int, str] | None = None) -> Records:
    """Records of ranks whose calls are ``op:family`` names, numbered from ``first``."""
    rows = []
    for rank, calls in histories.items():
        seqs: dict[str, int] = {}
        for i, call in enumerate(calls):
            op, family = call.split(":")
            seqs[family] = seqs.get(family, 0) + 1
            rows.append(
                {
                    s.RANK: rank,
                    s.RECORD_ID: first + i,
                    s.PG_KEY: f"{family}{rank}",
                    s.SEQ: seqs[family],
                    s.IS_P2P: False,
                    "entry": len(rows),
                    "family": family,
                    s.OP: op,
                    s.INPUT_SIZES: (sizes or {}).get(rank, "[[4]]") if op == "all_to_all" else "[[4]]",
                    s.INPUT_DTYPES: "['Float']",
                    s.CALL_SITE: f"train.py:{10 + STEP.index(call) if call in STEP else 99} in step",
                }
            )
    return records_of(pd.DataFrame(rows))


def steps(n: int) -> list[str]:
    return STEP * n


def test_the_program_is_the_call_most_ranks_hold_at_each_record():
    r = records({0: steps(3), 1: steps(3), 2: steps(2) + ["ag:tp"] * 5})
    program = record_program(r.table)
    assert program.period == len(STEP)
    assert [r.table.loc[program.call[i][1], s.OP] for i in range(10, 15)] == ["ar", "ag", "ar", "bc", "ar"]
    assert program.seen[12] == 3


def test_an_even_split_has_no_call_and_past_the_records_a_period_repeats_the_step():
    r = records({0: ["ar:dp", "ag:tp"], 1: ["ar:dp", "bc:tp"]})
    assert 1 not in record_program(r.table).call
    periodic = records({0: steps(3), 1: steps(3)})
    program = record_program(periodic.table)
    beyond = program.at(len(STEP) * 3 + 1)
    assert beyond is not None and periodic.table.loc[beyond[1], s.OP] == "ag"


def departure(histories: dict[int, list[str]], rank: int):
    r = records(histories)
    mates = [m for m in histories if m != rank]
    return record_departure(r, record_codes(r), rank, mates)


def test_a_rank_that_skipped_a_call_departs_by_a_skip_at_that_record():
    skipped = steps(2) + STEP[:2] + STEP[3:]
    edit = departure({0: steps(3), 1: steps(3), 2: steps(3), 3: skipped}, 3)
    assert edit.kind == "skip" and edit.record_id == 2 * len(STEP) + 2 and edit.shown


def test_a_rank_that_added_a_call_departs_by_an_extra():
    added = steps(2) + STEP[:2] + ["ar:world"] + STEP[2:]
    edit = departure({0: steps(3), 1: steps(3), 2: steps(3), 3: added}, 3)
    assert edit.kind == "extra" and edit.record_id == 2 * len(STEP) + 2


def test_a_rank_in_step_does_not_depart_wherever_its_history_stops():
    assert departure({0: steps(3), 1: steps(3), 2: steps(2) + STEP[:1]}, 2) is None


def test_records_that_differ_from_the_first_one_on_tell_nothing():
    """No record both hold alike before they differ: the numbering may be offset."""
    assert departure({0: steps(3), 1: steps(3), 2: STEP[1:] + steps(2)}, 2) is False


def test_records_that_need_more_than_one_edit_are_another_program():
    other = steps(2) + ["bc:pp", "ag:pp", "ar:world", "ag:world", "bc:world"]
    assert departure({0: steps(3), 1: steps(3), 2: other}, 2) is False


def causes(histories: dict[int, list[str]], comp: list[int], explains=lambda e: True):
    r = records(histories)
    mates = {k: [m for m in histories if m != k] for k in comp}
    found = cycle_causes(r, comp, mates, explains)
    return None if found is None else sorted(found)


def test_in_a_cycle_the_member_that_departs_is_the_cause():
    skipped = steps(2) + STEP[:2] + STEP[3:]
    histories = {0: steps(2) + STEP[:3], 1: steps(2) + STEP[:3], 2: steps(3), 3: skipped}
    assert causes(histories, [0, 3]) == [3]


def test_an_edit_that_explains_no_wait_names_nobody():
    skipped = steps(2) + STEP[:2] + STEP[3:]
    histories = {0: steps(2) + STEP[:3], 1: steps(2) + STEP[:3], 2: steps(3), 3: skipped}
    assert causes(histories, [0, 3], explains=lambda e: False) is None


def test_of_a_pair_that_departs_from_each_other_the_cheaper_side_is_named():
    """Rank 1 added a call of its own (issued at no other point: an extra costs 2) where rank 0,
    against it, would have skipped a call issued nowhere else (2.5)."""
    added = steps(2) + ["ar:world"] + STEP
    assert causes({0: steps(3), 1: added}, [0, 1]) == [1]


def test_a_pair_equally_far_from_each_other_is_not_decided():
    assert causes({0: steps(2) + ["ar:x"], 1: steps(2) + ["ar:y"]}, [0, 1]) is None


def test_an_exchange_issued_with_other_splits_is_the_same_call():
    """An all_to_all's splits differ by rank and by step: its sizes are no part of the call."""
    exchange = ["all_to_all:ep", *STEP[1:]]
    histories = {0: exchange * 3, 1: exchange * 3, 2: exchange * 3}
    r = records(histories, sizes={2: "[[7]]"})
    assert record_departure(r, record_codes(r), 2, [0, 1]) is None


def test_ranks_that_depart_alike_run_another_program_and_are_not_named():
    """Two ranks measured against the same others, both departing at one record with one
    call: another stage the dumps did not tell apart, not two faults."""
    other = steps(2) + ["bc:pp"] + STEP[1:]
    histories = {0: steps(3), 1: steps(3), 2: steps(3), 3: other, 4: other}
    assert causes(histories, [0, 3, 4]) is None
    assert causes({**histories, 4: steps(3)}, [0, 3, 4]) == [3]
