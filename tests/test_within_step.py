"""Whether a rank's head lies before the next marker of its step (``within_step``).

A rank that has not issued a collective its peers wait in may simply not have got there:
its routine says so where the marker (the awaited (family, op)) is issued once a step and
the history holds whole steps between two of them.
"""

from __future__ import annotations

from analysis.model.routine import Routine, within_step

TP_REDUCE = ("TP", "all_reduce", "[[16]]", "Float")
TP_BCAST = ("TP", "broadcast", "[[64]]", "Long")
NORM = ("MP", "all_reduce", "[[1]]", "Float")
MARKER = ("TP", "broadcast")


def _routine(steps: list[tuple[str, str, str, str]]) -> Routine:
    return Routine(steps=steps, keys=["k"] * len(steps), seqs=list(range(len(steps))), head=len(steps) - 1)


def test_a_head_the_step_issues_before_its_next_marker_is_within() -> None:
    step = [TP_BCAST, TP_REDUCE, TP_REDUCE, NORM]
    assert within_step(_routine(step * 3 + [TP_BCAST, TP_REDUCE, NORM]), MARKER) is True


def test_a_head_past_what_a_whole_step_issues_is_not_within() -> None:
    step = [TP_BCAST, TP_REDUCE, TP_REDUCE, NORM]
    assert within_step(_routine(step * 3 + [TP_REDUCE, NORM, NORM]), MARKER) is False


def test_markers_that_recur_within_a_step_show_no_whole_step() -> None:
    """Two microbatches a step, each with its own broadcast: the ring buffer kept the grad
    norm of one step and two broadcasts of the next. Between those two no grad norm falls,
    as within any step; that says nothing of where the next one falls."""
    microbatch = [TP_BCAST, TP_REDUCE, TP_REDUCE]
    kept = [TP_REDUCE, NORM] + microbatch * 2 + [NORM]
    assert within_step(_routine(kept), MARKER) is None
