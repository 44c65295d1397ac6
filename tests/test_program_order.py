"""Program order on hand-made cells: which collective comes first, who skipped, who added one."""

from __future__ import annotations

from cellmaker import make_cells, make_entries

from analysis.model.order import ProgramOrder

DESC = {"tp0": "tp", "tp1": "tp", "dp": "dp"}


def _order(rows: list[dict]) -> ProgramOrder:
    return ProgramOrder(make_cells(rows), make_entries(rows), DESC)


def _run(rank: int, steps: list[tuple[str, int]], start: int = 0) -> list[dict]:
    """A rank's collectives in program order, as cells with increasing record ids."""
    return [{"pg_key": k, "rank": rank, "seq": q, "record_id": start + i} for i, (k, q) in enumerate(steps)]


def test_before_follows_the_ranks_that_issued_both() -> None:
    program = [("tp0", 0), ("dp", 0), ("tp0", 1)]
    order = _order(_run(0, program) + _run(1, program))
    assert order.before(("tp", 0), ("dp", 0)) == 1
    assert order.before(("dp", 0), ("tp", 0)) == -1
    assert order.before(("tp", 0), ("tp", 9)) == 0  # nobody issued the second: unknown


def test_a_rank_that_went_past_a_collective_skipped_it() -> None:
    """Ranks 0 and 1 run tp 0, dp 0, tp 1; rank 2 never issued dp 0 but issued tp 1 after tp 0,
    and rank 3, blocked in dp 0, waits for it."""
    program = [("tp0", 0), ("dp", 0), ("tp0", 1)]
    rows = _run(0, program) + _run(1, program) + _run(2, [("tp1", 0), ("tp1", 1)]) + _run(3, [("tp1", 0), ("dp", 0)])
    order = _order(rows)
    assert order.skipped_to(2, ("dp", 0), waiters={3}) == ("tp", 1)


def test_what_the_waiters_issued_shows_no_skip() -> None:
    """Everyone issued tp 1 (the waiters too): the rank that lacks dp 0 skipped nothing."""
    program = [("tp0", 0), ("dp", 0), ("tp0", 1)]
    rows = _run(0, program) + _run(1, program) + _run(2, [("tp1", 0), ("tp1", 1)])
    order = _order(rows)
    assert order.skipped_to(2, ("dp", 0), waiters={0, 1}) is None


def test_an_extra_collective_is_one_no_peer_issues_while_peers_moved_on() -> None:
    rows = _run(0, [("tp0", 0), ("tp0", 1), ("dp", 0)]) + _run(1, [("tp0", 0), ("dp", 0)])
    order = _order(rows)
    assert order.is_extra(0, ("tp", 1), peers=[1])
    assert not order.is_extra(1, ("dp", 0), peers=[0])


def test_peers_that_issued_what_came_after_a_lone_collective_passed_it() -> None:
    """Only active entries: rank 0 issued dp 5 and then tp 7; rank 1 issued tp 7 without dp 5.
    Where a peer has not issued what came after, nothing shows it went past."""
    rows = _run(0, [("dp", 5), ("tp0", 7)]) + _run(1, [("tp0", 7)]) + _run(2, [("tp1", 6)])
    order = _order(rows)
    assert order.passed_without(0, ("dp", 5), [1]) == ("tp", 7)
    assert order.passed_without(0, ("dp", 5), [1, 2]) is None
    assert order.passed_without(1, ("tp", 7), [0]) is None  # rank 0 issued it too: not lone


def test_what_the_waiters_queued_behind_the_missing_one_shows_a_skip() -> None:
    """Ranks 0 and 1 wait in dp 0 and queued tp 1 behind it (an NCCL host goes on); rank 3
    did the same; rank 2 never issued dp 0 and went on to tp 1. Where only the waiters issued
    the two, their order is theirs alone and shows nothing."""
    program = [("tp0", 0), ("dp", 0), ("tp0", 1)]
    rows = _run(0, program) + _run(1, program) + _run(2, [("tp1", 0), ("tp1", 1)]) + _run(3, program)
    order = _order(rows)
    assert order.skipped_to(2, ("dp", 0), waiters={0, 1}) == ("tp", 1)
    assert order.skipped_to(2, ("dp", 0), waiters={0, 1, 3}) is None
