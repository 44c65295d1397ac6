"""Program order on hand-made cells: a lone collective added, or passed by its peers."""

from __future__ import annotations

from cellmaker import make_cells, make_entries

from analysis.model.order import ProgramOrder

DESC = {"tp0": "tp", "tp1": "tp", "dp": "dp"}


def _order(rows: list[dict]) -> ProgramOrder:
    return ProgramOrder(make_cells(rows), make_entries(rows), DESC)


def _run(rank: int, steps: list[tuple[str, int]], start: int = 0) -> list[dict]:
    """A rank's collectives in program order, as cells with increasing record ids."""
    return [{"pg_key": k, "rank": rank, "seq": q, "record_id": start + i} for i, (k, q) in enumerate(steps)]


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
