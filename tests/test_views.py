"""The drill-down queries (analysis.views) on a real dump set, checked against the files.

``stuck_compute``: rank 5 sleeps before the tensor_parallel all_reduce seq 11 of group 3
(ranks 4 and 5); rank 4 issued it and waits. Expected values are read from the pickles
(``raw_dumps``), not through Flight Deck's reader.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import raw_dumps
from locations import SAMPLE_DUMPS

import analysis
from analysis import schema as s
from analysis.views import drilldown, stacks

STUCK = SAMPLE_DUMPS / "stuck_compute"
TP = "3"  # the tensor_parallel group of ranks 4 and 5 (torch numbers groups globally)


@pytest.fixture(scope="module")
def a() -> analysis.Analysis:
    return analysis.analyze(STUCK).analysis


def test_row_dict_gives_plain_python_values() -> None:
    row = pd.Series({"i": np.int64(3), "f": np.float32(0.5), "missing": pd.NA, "nan": np.nan, "text": "x"})
    out = drilldown.row_dict(row)
    assert out == {"i": 3, "f": 0.5, "missing": None, "nan": None, "text": "x"}
    assert type(out["i"]) is int and type(out["f"]) is float


def test_cell_entry_is_the_entry_the_rank_wrote(a) -> None:
    found = drilldown.cell_entry(a, TP, 4, 11)
    written = raw_dumps.entry_at(STUCK, 4, TP, 11)
    assert found.exact and written is not None
    assert found.entry[s.RECORD_ID] == written["record_id"]
    assert found.entry["output_sizes"] == written["output_sizes"], "read back from the file"
    assert found.frames == raw_dumps.frame_lines(written)


def test_cell_entry_without_an_entry_falls_back_to_the_newest_in_the_group(a) -> None:
    assert raw_dumps.entry_at(STUCK, 5, TP, 11) is None
    found = drilldown.cell_entry(a, TP, 5, 11)
    newest = raw_dumps.newest_in_group(STUCK, 5, TP)
    assert not found.exact and found.entry[s.SEQ] == newest["collective_seq_id"] == 10
    assert found.frames == raw_dumps.frame_lines(newest)


def test_suspect_stack_outside_the_wavefront_is_its_newest_stack(a) -> None:
    found = drilldown.suspect_stack(a, 5, (TP, 11))
    entries = raw_dumps.raw_dump(STUCK, 5)["entries"]
    newest = max((e for e in entries if e.get("frames")), key=lambda e: e["record_id"])
    assert not found.at_wavefront
    assert (found.pg_name, found.seq) == (newest["process_group"][0], newest["collective_seq_id"])
    assert found.frames == raw_dumps.frame_lines(newest)


def test_suspect_stack_at_the_wavefront(a) -> None:
    found = drilldown.suspect_stack(a, 4, (TP, 11))
    assert found.at_wavefront and found.seq == 11
    assert found.frames == raw_dumps.frame_lines(raw_dumps.entry_at(STUCK, 4, TP, 11))


def test_stacks_at_and_majority(a) -> None:
    written = raw_dumps.stacks_at(STUCK, [4, 5], TP, 10)
    assert sorted(map(sorted, written.values())) == [[4, 5]], "both ranks wrote seq 10 from one place"
    groups = stacks.stacks_at(a, TP, 10)
    assert [ranks for _, ranks in groups] == [[4, 5]]
    majority = stacks.majority_stack(a, TP, 10)
    assert majority.num_ranks == 2
    assert "\n".join(stacks.stack_frames(a, majority.stack_id)) == next(iter(written))
    assert stacks.majority_stack(a, TP, 999) is None


def test_stack_diff_marks_the_differing_frames() -> None:
    mine = ["inner", "b_mine", "outer"]
    majority = ["inner", "b_major", "outer"]
    assert stacks.stack_diff(mine, majority) == [
        ("same", "outer"),
        ("majority", "b_major"),
        ("mine", "b_mine"),
        ("same", "inner"),
    ]


def test_group_cells_hold_the_groups_collectives(a) -> None:
    cells = drilldown.group_cells(a, TP)
    written = {
        (r, e["collective_seq_id"])
        for r in (4, 5)
        for e in raw_dumps.raw_dump(STUCK, r)["entries"]
        if e["process_group"][0] == TP and not e["is_p2p"]
    }
    assert set(zip(cells[s.RANK].astype(int), cells[s.SEQ].astype(int))) == written
    assert list(cells.columns) == [s.RANK, s.SEQ, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]
