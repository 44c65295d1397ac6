"""How big the job is, and who belongs to groups whose members the dumps do not list.

gloo dumps name no members of a group beyond the ranks that have entries for it, so a
rank that wrote no dump is missing from every inferred group. The world size follows
from the highest rank seen, or from a partition of the world into same-description
groups (TP groups of 2 covering 8 ranks imply 8 ranks even if rank 7 wrote nothing).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..types import Membership
from .groups import GroupIndex, ProcessGroup


def full_size(groups: list[ProcessGroup]) -> int:
    """The size of same-description groups: the commonest, ties to the larger (a rank
    without a dump only ever makes an inferred group smaller)."""
    sizes = Counter(len(g.ranks) for g in groups)
    return max(sizes, key=lambda n: (sizes[n], n))


def estimate_world(index: GroupIndex, have_dump: set[int]) -> int:
    """World size: the highest rank seen, or what a partition of the world into
    same-description groups implies."""
    world = max(have_dump, default=-1) + 1
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        world = max(world, max(g.ranks, default=-1) + 1)
        if g.desc:
            by_desc[g.desc].append(g)
    for groups in by_desc.values():
        modal = full_size(groups)
        members = [r for g in groups for r in g.ranks]
        if len(groups) > 1 and len(set(members)) == len(members):
            world = max(world, modal * len(groups))
    return world


def complete_inferred_groups(index: GroupIndex, world: int, have_dump: set[int]) -> None:
    """Give inferred groups the members that had no dump, where that is unambiguous."""
    absent = [r for r in range(world) if r not in have_dump]
    for g in index.groups.values():
        if g.membership_source != Membership.INFERRED:
            continue
        if g.desc == "default_pg" or g.name == "0":
            g.ranks = tuple(range(world))
    if not absent:
        return
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        if g.membership_source == Membership.INFERRED and g.desc and g.desc != "default_pg":
            by_desc[g.desc].append(g)
    for groups in by_desc.values():
        modal = full_size(groups)
        short = [g for g in groups if len(g.ranks) < modal]
        taken = {r for g in groups for r in g.ranks}
        free = [r for r in absent if r not in taken]
        if len(short) == 1 and len(free) == modal - len(short[0].ranks):
            short[0].ranks = tuple(sorted((*short[0].ranks, *free)))
