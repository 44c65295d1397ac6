"""Layer 3 of the one model in counts: each rank's point (how many collectives it issued in
each family), compared with the ranks of its program where they are blocked or wait for
it, and the members of a wait-for cycle whose points explain it."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from analysis import schema as s
from analysis.diagnosis.count_explanation import (
    CountEdit,
    Place,
    count_causes,
    count_departure,
    difference,
    off_the_chain,
)
from analysis.model.counts import count_mates, count_points, issued_after, p2p_points
from analysis.model.groups import ProcessGroup
from analysis.model.progress import Progress
from analysis.types import Membership


def _progress(enqueued: int | None) -> Progress:
    return Progress(enqueued, enqueued, None, None, None)


def test_a_point_counts_each_family_and_leaves_out_send_recv_groups_and_unknown_counts():
    groups = [
        ProcessGroup("tp0", "1", "tp", (0, 1), Membership.PG_CONFIG),
        ProcessGroup("tp1", "2", "tp", (2, 3), Membership.PG_CONFIG),
        ProcessGroup("dp", "3", "dp", (0, 1, 2, 3), Membership.PG_CONFIG),
        ProcessGroup("pp", "4", "pp", (0, 2), Membership.PG_CONFIG, has_p2p=True),
        ProcessGroup("solo", "5", "solo", (3,), Membership.PG_CONFIG),
    ]
    family = {"tp0": "tp", "tp1": "tp", "dp": "dp", "pp": "pp", "solo": "solo"}
    progress = {(k, r): _progress(n) for k, r, n in [("tp0", 0, 7), ("tp0", 1, 7), ("tp1", 2, 6), ("tp1", 3, 7)]}
    progress |= {("dp", r): _progress(n) for r, n in [(0, 2), (1, 2), (2, 2), (3, None)]}
    progress |= {("pp", 0): _progress(40), ("solo", 3): _progress(9)}
    points = count_points(groups, progress, family)
    assert points == {0: {"tp": 7, "dp": 2}, 1: {"tp": 7, "dp": 2}, 2: {"tp": 6, "dp": 2}, 3: {"tp": 7}}
    # the roles come from the groups, not from the counts the dumps kept: rank 3 (its dp count
    # unknown) is rank 1's mate; ranks 0 and 2 are also in a send/recv group; "solo" has one rank
    mates = count_mates(groups, family, {})
    assert mates[0] == {0, 2} and mates[1] == mates[3] == {1, 3}
    assert count_mates(groups, family, {0: "first", 2: "last"})[0] == {0}


def test_the_difference_is_against_most_ranks_and_nothing_where_they_split_evenly():
    assert difference({"tp": 7, "dp": 2}, [{"tp": 8, "dp": 2}, {"tp": 8, "dp": 2}, {"tp": 9, "dp": 2}]) == {"tp": -1}
    assert difference({"tp": 8, "dp": 2}, [{"tp": 8, "dp": 2}, {"tp": 9, "dp": 2}]) is None


MATES = frozenset({0, 1, 2, 3})
STEP = {0: {"tp": 12, "dp": 3}, 1: {"tp": 12, "dp": 3}, 2: {"tp": 12, "dp": 3}}
"""Three ranks of one program blocked together in dp seq 3."""


def test_a_rank_blocked_with_its_program_one_collective_short_skipped_one():
    points = {**STEP, 3: {"tp": 11, "dp": 3}}
    edit = count_departure(3, points, {Place("dp", 3, False): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit)
    assert (edit.kind, edit.fewer, edit.more, edit.against) == ("skip", "tp", None, (0, 1, 2))


def test_a_rank_waited_for_is_compared_as_if_it_had_issued_that_collective():
    # ranks 0-2 wait for rank 3 in dp seq 3; rank 3 has dp 2 and is only behind: in step
    behind = {**STEP, 3: {"tp": 12, "dp": 2}}
    assert count_departure(3, behind, {Place("dp", 3, True): (0, 1, 2)}, MATES) is None
    # with one tp collective of its own before it, it added one
    added = {**STEP, 3: {"tp": 13, "dp": 2}}
    edit = count_departure(3, added, {Place("dp", 3, True): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit) and (edit.kind, edit.more) == ("extra", "tp")


def test_a_rank_waited_for_that_went_on_with_its_program_skipped_that_collective():
    went_on = {**STEP, 3: {"tp": 15, "dp": 2}}  # 3 more tp, no dp 3: it went past dp 3
    edit = count_departure(3, went_on, {Place("dp", 3, True): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit) and (edit.kind, edit.fewer, edit.went_on) == ("skip", "dp", (("tp", 3),))


def test_blocked_places_come_before_the_places_it_is_waited_for_in():
    points = {**STEP, 3: {"tp": 12, "dp": 3}, 4: {"tp": 13, "dp": 4}}
    waited = {Place("dp", 4, True): (4,)}
    assert isinstance(count_departure(3, points, waited, MATES | {4}), CountEdit)  # alone, a skip
    assert count_departure(3, points, {Place("dp", 3, False): (0, 1, 2), **waited}, MATES | {4}) is None


def test_ranks_blocked_in_one_collective_compare_as_they_stood_when_they_issued_it():
    # rank 3 holds dp seq 3 queued behind an extra tp collective (its tp 13); ranks 0-2, blocked
    # in dp seq 3, have since issued one more tp behind it: by totals rank 3 is in step
    points = {r: {"tp": 13, "dp": 3} for r in (0, 1, 2, 3)}
    at_dp3 = {0: {"tp": 12, "dp": 3}, 1: {"tp": 12, "dp": 3}, 2: {"tp": 12, "dp": 3}, 3: {"tp": 13, "dp": 3}}
    place = Place("dp", 3, False)
    assert count_departure(3, points, {place: (0, 1, 2)}, MATES) is None
    edit = count_departure(3, points, {place: (0, 1, 2)}, MATES, lambda r, p: at_dp3[r])
    assert isinstance(edit, CountEdit) and (edit.kind, edit.more) == ("extra", "tp")


def test_a_rank_waited_in_two_calls_stands_before_both():
    # ranks 0-2 issued their embedding all_reduce (emb 2) and wait for rank 3 in dp seq 3;
    # rank 3 is waited in emb 2 too: it stopped before both, one fewer emb is no edit
    points = {r: {"tp": 12, "dp": 3, "emb": 2} for r in (0, 1, 2)} | {3: {"tp": 12, "dp": 2, "emb": 1}}
    places = {Place("dp", 3, True): (0, 1, 2), Place("emb", 2, True): ()}
    assert count_departure(3, points, places, MATES) is None
    # not waited in emb, the one emb fewer is a skip
    edit = count_departure(3, points, {Place("dp", 3, True): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit) and (edit.kind, edit.fewer) == ("skip", "emb")


def test_in_step_at_one_place_speaks_only_for_the_families_counted_there():
    # rank 3 holds dp seq 3 with ranks 0-2 (they record no send/recv) and a recv with rank 4,
    # which posted one more: in step in tp and dp, one send/recv short
    points = {**STEP, 3: {"tp": 12, "dp": 3, "pp": 5}, 4: {"tp": 12, "dp": 3, "pp": 6}}
    places = {Place("dp", 3, False): (0, 1, 2), Place("pp", 0, False, "recv+1"): (4,)}
    edit = count_departure(3, points, places, MATES | {4})
    assert isinstance(edit, CountEdit) and (edit.kind, edit.fewer) == ("skip", "pp")
    # a difference in a family the ranks in step with it counted too is no departure
    points[4] = {"tp": 13, "dp": 3, "pp": 5}
    assert count_departure(3, points, places, MATES | {4}) is None


def test_a_family_with_a_send_recv_group_is_left_out_of_every_point():
    # the pipeline group of ranks 1 and 3 holds no send/recv in the dumps (none pending in an
    # only-active dump), so its pg_status counts collectives alone; its sibling's counts both
    groups = [
        ProcessGroup("pp0", "4", "pp", (0, 2), Membership.PG_CONFIG, has_p2p=True),
        ProcessGroup("pp1", "5", "pp", (1, 3), Membership.PG_CONFIG),
        ProcessGroup("dp", "3", "dp", (0, 1, 2, 3), Membership.PG_CONFIG),
    ]
    family = {"pp0": "pp", "pp1": "pp", "dp": "dp"}
    progress = {("pp0", r): _progress(40) for r in (0, 2)} | {("pp1", r): _progress(0) for r in (1, 3)}
    progress |= {("dp", r): _progress(5) for r in range(4)}
    assert count_points(groups, progress, family) == {r: {"dp": 5} for r in range(4)}


def test_a_rank_holding_a_collective_past_the_others_of_its_step_issued_the_next_one_at_that_seq():
    # ranks 0-2 issued dp seq 3 with 12 tp and 4 ep calls; rank 3 issued its dp seq 3 having
    # issued one more of each: it went past their dp 3 (one skip) and its dp 3 is their dp 4
    at = {**STEP, 3: {"tp": 13, "dp": 3, "ep": 5}} | {r: {"tp": 12, "dp": 3, "ep": 4} for r in (0, 1, 2)}
    edit = count_departure(3, at, {Place("dp", 3, False): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit)
    assert (edit.kind, edit.fewer, edit.went_on) == ("skip", "dp", (("ep", 1), ("tp", 1)))
    # one more of one family only is as well an extra of it: both readings are kept
    one = {**STEP, 3: {"tp": 13, "dp": 3}}
    edit = count_departure(3, one, {Place("dp", 3, False): (0, 1, 2)}, MATES)
    assert isinstance(edit, CountEdit) and (edit.kind, edit.more, edit.or_skip) == ("extra", "tp", "dp")
    skip = edit.as_skip()
    assert (skip.kind, skip.fewer, skip.more, skip.went_on, skip.cost) == ("skip", "dp", None, (("tp", 1),), 2.0)
    # where they wait for it, one more stays an extra (it has not issued the call they wait in)
    waited = count_departure(3, {**STEP, 3: {"tp": 13, "dp": 2}}, {Place("dp", 3, True): (0, 1, 2)}, MATES)
    assert isinstance(waited, CountEdit) and waited.or_skip is None


def test_what_a_rank_issued_after_a_call_it_holds_pending_by_record_order():
    entries = pd.DataFrame(
        {
            s.RANK: [0, 0, 0, 0, 0, 1, 1],
            s.RECORD_ID: [10, 11, 12, 12, 13, 5, 6],
            s.PG_NAME: ["1", "2", "1", "1", "4", "1", "2"],
            s.SEQ: [3, 7, 4, 4, 0, 3, 7],
            s.P2P_SEQ: [None, None, None, None, 9, None, None],
            s.IS_P2P: [False, False, False, False, True, False, False],
        }
    )
    key_of = {(0, "1"): "dp0", (0, "2"): "tp0", (0, "4"): "pp0", (1, "1"): "dp0", (1, "2"): "tp1"}
    family = {"dp0": "dp", "tp0": "tp", "tp1": "tp", "pp0": "pp"}
    calls = [(0, "dp0", 3, False), (0, "pp0", 9, True), (1, "tp1", 7, False), (1, "dp0", 99, False)]
    after = issued_after(entries, key_of, family, calls)
    # after rank 0's dp seq 3: tp 7, dp 4 (two coalesced records, one call) and a send/recv
    assert after == {
        (0, "dp0", 3, False): {"tp": 1, "dp": 1, "pp": 1},
        (0, "pp0", 9, True): {},
        (1, "tp1", 7, False): {},
    }


def test_more_than_one_edit_or_ranks_that_disagree_decide_nothing():
    far = {**STEP, 3: {"tp": 10, "dp": 3}}
    assert count_departure(3, far, {Place("dp", 3, False): (0, 1, 2)}, MATES) is False
    split = {0: {"tp": 12}, 1: {"tp": 13}, 3: {"tp": 11}}
    assert count_departure(3, split, {Place("tp", 12, False): (0, 1)}, MATES) is False


def test_a_point_off_the_chain_of_its_programs_points_is_another_groups_call_in_place():
    # ranks 0-2 are at three points of one program; rank 3 has one more ep and one fewer dp
    points = {0: {"ep": 21, "dp": 26}, 1: {"ep": 21, "dp": 26}, 2: {"ep": 22, "dp": 27}, 3: {"ep": 22, "dp": 25}}
    chain = off_the_chain(points[3], {r: points[r] for r in (0, 1, 2)})
    assert chain == ({"ep": 1, "dp": -1}, (0, 1))
    edit = count_departure(3, points, {}, MATES)
    assert isinstance(edit, CountEdit) and (edit.kind, edit.fewer, edit.more) == ("substitute", "dp", "ep")
    assert count_departure(0, points, {}, MATES) is None  # incomparable with rank 3 alone
    assert count_departure(0, {0: points[0], 3: points[3]}, {}, MATES) is False  # one rank to compare


def _edit(rank: int, kind: str = "skip", fewer: str | None = "tp", against: tuple[int, ...] = (0, 1)) -> CountEdit:
    return CountEdit(rank, kind, fewer, None, None, against, 2.0)


def test_the_cause_is_the_member_whose_edit_explains_a_wait():
    assert count_causes([2, 3], {2: None, 3: _edit(3)}, lambda e: True) == {3: _edit(3)}
    assert count_causes([2, 3], {2: None, 3: _edit(3)}, lambda e: False) is None
    assert count_causes([2, 3], {2: False, 3: _edit(3)}, lambda e: True) is None  # nobody in step


def test_a_pair_measured_against_each_other_or_departing_alike_decides_nothing():
    mirror = {0: _edit(0, against=(1,)), 1: _edit(1, fewer="dp", against=(0,)), 2: None}
    assert count_causes([0, 1, 2], mirror, lambda e: True) is None
    alike = {0: _edit(0, against=(5,)), 1: _edit(1, against=(5,)), 2: None}
    assert count_causes([0, 1, 2], alike, lambda e: True) is None
    # measured only against a rank the counts cannot place (it may have left the program)
    assert count_causes([0, 1, 2], {0: _edit(0, against=(1,)), 1: False, 2: None}, lambda e: True) is None
    assert count_causes([0, 1, 2], {0: _edit(0, against=(1, 2)), 1: False, 2: None}, lambda e: True) is not None


def test_of_a_pair_departing_from_each_other_the_cheaper_side_alone_stands():
    cheap, dear = _edit(0, against=(1,)), replace(_edit(1, fewer="dp", against=(0,)), cost=2.5)
    assert count_causes([0, 1, 2], {0: cheap, 1: dear, 2: None}, lambda e: True) == {0: cheap}
    # the dearer side measured against ranks in step too: it stands on its own, and the
    # cheaper one, measured only against it, does not
    solid = replace(dear, against=(0, 2))
    assert count_causes([0, 1, 2], {0: cheap, 1: solid, 2: None}, lambda e: True) == {1: solid}


def test_send_recvs_count_by_their_newest_record_where_the_dumps_record_them():
    entries = pd.DataFrame(
        {
            s.RANK: [0, 0, 0, 1, 1, 1],
            s.PG_NAME: ["4", "4", "0", "4", "4", "4"],
            s.P2P_SEQ: [7, 8, None, 6, 7, 8],
            s.IS_P2P: [True, True, False, True, True, True],
        }
    )
    key_of = {(0, "4"): "pp0", (1, "4"): "pp1", (0, "0"): "world"}
    points = p2p_points(entries, key_of, {"pp0": "pp", "pp1": "pp"})
    assert points == {0: {"pp": 8}, 1: {"pp": 8}}
    assert p2p_points(entries.iloc[:0], key_of, {}) == {}
