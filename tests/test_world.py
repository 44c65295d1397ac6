"""World size and the members of inferred groups (analysis.model.world), on hand-built groups.

gloo dumps list no group members: a group is the ranks that wrote entries for it, so a
rank that wrote no dump is missing from every group. These tests spell out when its
absence can still be seen, and when the members it belongs with are filled in.
"""

from __future__ import annotations

from analysis.model.groups import GroupIndex, ProcessGroup
from analysis.model.world import complete_inferred_groups, estimate_world
from analysis.types import Membership

INFERRED, CONFIG = Membership.INFERRED, Membership.PG_CONFIG


def _index(*groups: tuple[str, str, tuple[int, ...], Membership]) -> GroupIndex:
    index = GroupIndex()
    for name, desc, ranks, source in groups:
        index.groups[name] = ProcessGroup(name, name, desc, ranks, source)
    return index


def test_world_is_the_highest_rank_seen_in_dumps_or_groups() -> None:
    assert estimate_world(_index(), {0, 1, 2}) == 3
    assert estimate_world(_index(("1", "tp", (0, 1, 9), CONFIG)), {0, 1}) == 10
    assert estimate_world(_index(), set()) == 0


def test_a_partition_into_same_description_groups_implies_the_world() -> None:
    """Four TP groups of 2 that never share a rank cover 8 ranks, though rank 7 wrote nothing."""
    index = _index(
        ("1", "tp", (0, 1), INFERRED),
        ("2", "tp", (2, 3), INFERRED),
        ("3", "tp", (4, 5), INFERRED),
        ("4", "tp", (6,), INFERRED),
    )
    assert estimate_world(index, {0, 1, 2, 3, 4, 5, 6}) == 8


def test_overlapping_groups_imply_nothing() -> None:
    """Groups of one description that share ranks are not a partition of the world."""
    index = _index(("1", "pp", (0, 1), INFERRED), ("2", "pp", (1, 2), INFERRED), ("3", "pp", (2, 3), INFERRED))
    assert estimate_world(index, {0, 1, 2, 3}) == 4  # the highest rank, not 3 groups x 2


def test_a_lone_group_implies_nothing() -> None:
    assert estimate_world(_index(("1", "tp", (0, 1), INFERRED)), {0, 1}) == 2


def test_the_short_group_gets_the_rank_without_a_dump() -> None:
    index = _index(
        ("0", "default_pg", (0, 1, 2), INFERRED),
        ("1", "tp", (0, 1), INFERRED),
        ("2", "tp", (2,), INFERRED),
    )
    have = {0, 1, 2}
    world = estimate_world(index, have)
    assert world == 4
    complete_inferred_groups(index, world, have)
    assert index.groups["0"].ranks == (0, 1, 2, 3), "the default group is the whole world"
    assert index.groups["2"].ranks == (2, 3)
    assert index.groups["1"].ranks == (0, 1)


def test_two_short_groups_are_left_alone() -> None:
    """Two ranks missing from two groups: which belongs where is not known."""
    index = _index(("1", "tp", (0, 1), INFERRED), ("2", "tp", (2,), INFERRED), ("3", "tp", (4,), INFERRED))
    complete_inferred_groups(index, 6, {0, 1, 2, 4})
    assert index.groups["2"].ranks == (2,) and index.groups["3"].ranks == (4,)


def test_listed_members_are_never_changed() -> None:
    index = _index(("0", "default_pg", (0, 1), CONFIG), ("1", "tp", (0, 1), CONFIG), ("2", "tp", (2,), CONFIG))
    complete_inferred_groups(index, 4, {0, 1, 2})
    assert index.groups["0"].ranks == (0, 1) and index.groups["2"].ranks == (2,)


def test_free_ranks_must_fill_the_short_group_exactly() -> None:
    """Two ranks without a dump but one free seat: neither is placed."""
    index = _index(("1", "tp", (0, 1), INFERRED), ("2", "tp", (2,), INFERRED))
    complete_inferred_groups(index, 5, {0, 1, 2})
    assert index.groups["2"].ranks == (2,)
