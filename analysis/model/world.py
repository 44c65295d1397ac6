"""How big the job is, and who belongs to groups whose members the dumps do not list.

gloo dumps name no members of a group beyond the ranks that have entries for it, so a
rank that wrote no dump is missing from every inferred group. The world size follows
from the highest rank seen, or from a partition of the world into same-description
groups (TP groups of 2 covering 8 ranks imply 8 ranks even if rank 7 wrote nothing),
or, where one rank wrote the only dump, from a group of which it is the one known member
and in which it waits: a collective of one member never waits, so the group has a member,
and it wrote no dump.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from .. import schema as s
from ..types import Membership
from .cells import DONE
from .groups import DEFAULT_PG_DESC, DEFAULT_PG_ID, GroupIndex, ProcessGroup, full_size


def lone_waiting(index: GroupIndex, cells: pd.DataFrame, entries: pd.DataFrame) -> list[ProcessGroup]:
    """Inferred groups that must have a member no dump shows: another member, which must
    exist, can only be a rank without one (see :func:`_one_dump_waits` and
    :func:`_gloo_all_wait`)."""
    return _one_dump_waits(index, cells, entries) or _gloo_all_wait(index, cells, entries)


def _one_dump_waits(index: GroupIndex, cells: pd.DataFrame, entries: pd.DataFrame) -> list[ProcessGroup]:
    """Inferred groups whose one known member waits in a collective there, where that rank
    wrote the only dump. Only where the dump holds the rank's whole record (its ring buffer
    never wrapped): otherwise the group's past may have rolled out."""
    ranks = cells[s.RANK].unique()
    if len(ranks) != 1 or not _whole_records(entries):
        return []
    lone = {k for k, g in index.groups.items() if g.membership_source == Membership.INFERRED and len(g.ranks) == 1}
    waiting = set(cells.loc[~cells[DONE].to_numpy(dtype=bool), s.PG_KEY].astype(str))
    return [index.groups[k] for k in sorted(lone & waiting) if index.groups[k].name != "0"]


def _gloo_all_wait(index: GroupIndex, cells: pd.DataFrame, entries: pd.DataFrame) -> list[ProcessGroup]:
    """Inferred gloo groups whose every known member issued the group's newest collective,
    alike, and one or more wait in it. gloo runs a collective on the CPU: once every member
    has entered it with the same op, sizes and dtypes, it completes, and where some got out
    of it and another did not, they got out with an error (a peer's connection closed).
    Either way the group has a member the entries do not show. Where every dumped rank is
    a member of a group of that description, no dumped rank is that member: it wrote no
    dump. Where other groups share the description, only a group shorter than they are
    counts: in a snapshot of a running job every member of a group may wait in a collective
    all of them entered (it is in flight, not short of a member), and a group as long as its
    siblings shows no member more."""
    names = entries[s.PROFILING_NAME].astype("category").cat.categories
    if not len(names) or not all(str(n).startswith("gloo:") for n in names):
        return []
    have_dump = {int(r) for r in cells[s.RANK].unique()}
    members_of: dict[str, set[int]] = defaultdict(set)
    siblings: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        members_of[g.desc].update(g.ranks)
        siblings[g.desc].append(g)
    newest = cells.sort_values(s.SEQ).groupby([s.PG_KEY, s.RANK], observed=True).tail(1)
    found = []
    for key, part in newest.groupby(s.PG_KEY, observed=True):
        g = index.groups.get(str(key))
        if g is None or g.membership_source != Membership.INFERRED or g.name == DEFAULT_PG_ID or not g.desc:
            continue
        if (
            g.desc == DEFAULT_PG_DESC
            or not have_dump <= members_of[g.desc]
            or len(part) != len(g.ranks)
            or len(g.ranks) < 2
            or (len(siblings[g.desc]) > 1 and len(g.ranks) >= full_size(siblings[g.desc]))
        ):
            continue
        agree = all(part[c].astype(str).nunique() == 1 for c in (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES))
        if agree and part[s.SEQ].nunique() == 1 and not part[DONE].to_numpy(dtype=bool).all():
            found.append(g)
    return found


def _whole_records(entries: pd.DataFrame) -> bool:
    """Every rank's entries start at record id 0."""
    first = entries.groupby(s.RANK, observed=True)[s.RECORD_ID].min()
    return bool(len(first)) and bool((first.to_numpy(dtype=np.int64, na_value=-1) == 0).all())


def estimate_world(index: GroupIndex, have_dump: set[int], lone: list[ProcessGroup] = ()) -> int:
    """World size: the highest rank seen, or what a partition of the world into
    same-description groups implies, or one more where ``lone`` (see :func:`lone_waiting`)
    shows a member that wrote no dump and no rank below the highest is missing."""
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
    if lone and all(r in have_dump for r in range(world)):
        world += 1
    return world


def complete_inferred_groups(index: GroupIndex, world: int, have_dump: set[int], lone: list[ProcessGroup] = ()) -> None:
    """Give inferred groups the members that had no dump, where that is unambiguous; a
    ``lone`` group gets the one rank without a dump that no group of its description has."""
    absent = [r for r in range(world) if r not in have_dump]
    for g in index.groups.values():
        if g.membership_source != Membership.INFERRED:
            continue
        if g.desc == DEFAULT_PG_DESC or g.name == DEFAULT_PG_ID:
            g.ranks = tuple(range(world))
    if not absent:
        return
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        if g.membership_source == Membership.INFERRED and g.desc and g.desc != DEFAULT_PG_DESC:
            by_desc[g.desc].append(g)
    for groups in by_desc.values():
        modal = full_size(groups)
        short = [g for g in groups if len(g.ranks) < modal]
        taken = {r for g in groups for r in g.ranks}
        free = [r for r in absent if r not in taken]
        if len(short) == 1 and len(free) == modal - len(short[0].ranks):
            short[0].ranks = tuple(sorted((*short[0].ranks, *free)))
    for g in lone:
        taken = {r for other in by_desc.get(g.desc, [g]) for r in other.ranks}
        free = [r for r in absent if r not in taken]
        if len(free) == 1:
            g.ranks = tuple(sorted((*g.ranks, *free)))
