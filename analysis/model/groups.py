"""Process-group identity across ranks, and each rank's progress in each group.

``pg_id`` is process-local, so groups are joined on their name (a global counter that
torch assigns identically on every rank) together with their rank list. Membership
comes from ``pg_config`` where the dump has it; gloo dumps leave it empty, so then it
is inferred from which ranks have entries (or resolved ``pg_status``) for the name.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowkeys import distinct, flag
from ..types import DumpSet, Membership
from .pg_ids import ids_by_creation_order

_INT = re.compile(r"-?\d+")


def parse_ranks(text: str) -> tuple[int, ...]:
    """``'[0, 1, 2]'`` -> ``(0, 1, 2)``: a plain scan, never eval."""
    return tuple(int(x) for x in _INT.findall(text or ""))


@dataclass(slots=True)
class ProcessGroup:
    """One process group of the job, the same object for every member rank."""

    key: str
    name: str
    desc: str
    ranks: tuple[int, ...]
    """Member global ranks in group-rank order (sorted when inferred)."""
    membership_source: Membership
    """``pg_config`` when the dumps list the members, ``inferred`` otherwise."""
    has_p2p: bool = False

    def local_to_global(self, local: int) -> int | None:
        return self.ranks[local] if 0 <= local < len(self.ranks) else None


@dataclass(slots=True)
class GroupIndex:
    """All process groups, and how each rank's local names and ids map onto them."""

    groups: dict[str, ProcessGroup] = field(default_factory=dict)
    key_of: dict[tuple[int, str], str] = field(default_factory=dict)
    """(rank, pg_name) -> group key."""
    status_key_of: dict[tuple[int, str], str] = field(default_factory=dict)
    """(rank, pg_id as written in pg_status) -> group key, where it could be resolved."""

    def by_relevance(self) -> list[ProcessGroup]:
        return sorted(self.groups.values(), key=lambda g: (-len(g.ranks), g.name))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                s.PG_KEY: [g.key for g in self.groups.values()],
                s.PG_NAME: [g.name for g in self.groups.values()],
                s.PG_DESC: [g.desc for g in self.groups.values()],
                s.RANKS: [list(g.ranks) for g in self.groups.values()],
                "size": [len(g.ranks) for g in self.groups.values()],
                "membership_source": [g.membership_source for g in self.groups.values()],
                "has_p2p": [g.has_p2p for g in self.groups.values()],
            }
        )


def _config_groups(configs: pd.DataFrame) -> tuple[dict[str, ProcessGroup], dict[tuple[int, str], str]]:
    """Groups as pg_config lists them; a name written with two rank lists becomes two groups."""
    groups: dict[str, ProcessGroup] = {}
    key_of: dict[tuple[int, str], str] = {}
    if configs.empty:
        return groups, key_of
    distinct = configs.drop_duplicates([s.PG_NAME, s.RANKS])
    variants = Counter(distinct[s.PG_NAME])
    parsed: dict[str, tuple[int, ...]] = {}
    for name, desc, ranks_text in distinct[[s.PG_NAME, s.PG_DESC, s.RANKS]].itertuples(index=False):
        ranks = parsed.setdefault(ranks_text, parse_ranks(ranks_text))
        key = name if variants[name] == 1 else f"{name}:{','.join(map(str, ranks))}"
        if key not in groups:
            groups[key] = ProcessGroup(key, name, desc, ranks, Membership.PG_CONFIG)
    names = configs[s.PG_NAME].astype(str)
    ranks_col = configs[s.RANK].to_numpy(dtype=np.int64).tolist()
    shared = names.isin([n for n, count in variants.items() if count > 1]).to_numpy()
    plain = np.flatnonzero(~shared).tolist()
    plain_names = names.iloc[plain].tolist()
    key_of.update(zip(zip(map(ranks_col.__getitem__, plain), plain_names), plain_names))  # C loops: most rows
    for i in np.flatnonzero(shared).tolist():  # a name written with two rank lists: key by the list
        name = names.iat[i]
        ranks = parsed[configs[s.RANKS].iat[i]]
        key_of[(ranks_col[i], name)] = f"{name}:{','.join(map(str, ranks))}"
    return groups, key_of


def build_groups(dumps: DumpSet) -> GroupIndex:
    """Identify every process group and map each rank's names and pg_ids onto it."""
    index = GroupIndex()
    index.groups, index.key_of = _config_groups(dumps.configs)
    names = _names_in_entries(dumps.entries, index)
    _fill_descs(index, names)
    _resolve_status_ids(dumps.status, index, names, ids_by_creation_order(dumps.configs, names.id_to_name))
    for name, ranks in names.inferred.items():
        if name in index.groups:  # config lists the name but not these ranks: keep the config
            for r in ranks:
                index.key_of.setdefault((r, name), name)
            continue
        desc = names.desc_of.get(name, "")
        index.groups[name] = ProcessGroup(name, name, desc, tuple(sorted(ranks)), Membership.INFERRED)
        for r in ranks:
            index.key_of[(r, name)] = name
    _adopt_by_status(dumps.status, index, names)
    p2p_names = set(map(str, dumps.entries.loc[flag(dumps.entries[s.IS_P2P]), s.PG_NAME].unique()))
    for g in index.groups.values():
        g.has_p2p = g.name in p2p_names
    _fill_descs(index, names)
    return index


def _fill_descs(index: GroupIndex, names: _EntryNames) -> None:
    """Some writers leave pg_config's desc empty; the entries carry it (any rank's: a
    group's name and description are the same on every rank)."""
    for g in index.groups.values():
        if not g.desc:
            g.desc = names.desc_of.get(g.name, "")


@dataclass
class _EntryNames:
    """What the entries say about groups: each rank's (pg_id -> name), each name's desc,
    and the members of names that pg_config does not place."""

    id_to_name: dict[tuple[int, str], str] = field(default_factory=dict)
    desc_of: dict[str, str] = field(default_factory=dict)
    inferred: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))


def _names_in_entries(entries: pd.DataFrame, index: GroupIndex) -> _EntryNames:
    """Names seen in entries: (rank, name, desc, pg_id), a few rows per rank."""
    names = _EntryNames()
    seen = distinct(entries, [s.RANK, s.PG_NAME, s.PG_DESC, s.PG_ID])
    for rank, name, desc, pg_id in seen.itertuples(index=False):
        rank, name = int(rank), str(name)
        names.id_to_name[(rank, str(pg_id))] = name
        names.desc_of.setdefault(name, str(desc))
        if (rank, name) not in index.key_of:
            by_name = [g for g in index.groups.values() if g.name == name and rank in g.ranks]
            if len(by_name) == 1:
                index.key_of[(rank, name)] = by_name[0].key
            else:
                names.inferred[name].add(rank)
    return names


DEFAULT_PG_ID = "0"
DEFAULT_PG_DESC = "default_pg"
"""torch makes the default group first in every process, so its local id is 0 on every rank."""


def full_size(groups: list[ProcessGroup]) -> int:
    """The size of same-description groups: the commonest, ties to the larger (a rank
    without a dump only ever makes an inferred group smaller)."""
    sizes = Counter(len(g.ranks) for g in groups)
    return max(sizes, key=lambda n: (sizes[n], n))


def _donor_descs(
    status_ranks: list[int], status_ids: list[str], names: _EntryNames
) -> tuple[dict[int, frozenset[str]], dict[tuple[frozenset[str], str], Counter]]:
    """Each rank's pg_id layout (the local ids its pg_status lists), and per (layout, pg_id)
    the descriptions ranks of that layout gave that id in their own entries."""
    ids_of_rank: dict[int, set[str]] = defaultdict(set)
    for rank, pg_id in zip(status_ranks, status_ids):
        ids_of_rank[rank].add(pg_id)
    layout = {rank: frozenset(ids) for rank, ids in ids_of_rank.items()}
    donor_desc: dict[tuple[frozenset[str], str], Counter] = defaultdict(Counter)
    for (rank, pg_id), name in names.id_to_name.items():
        if rank in layout:
            donor_desc[(layout[rank], pg_id)][names.desc_of.get(name, "")] += 1
    return layout, donor_desc


def _adopt_by_status(status: pd.DataFrame, index: GroupIndex, names: _EntryNames) -> None:
    """A rank whose ring buffer lost every entry of a group still lists the group in its
    pg_status. Where ranks of its pg_id layout give that id one description, the rank is
    in no inferred group of it, and exactly one inferred group of that description is short
    of as many members as there are such ranks, they are its missing members."""
    status_ranks = status[s.RANK].to_numpy(dtype=np.int64).tolist()
    status_ids = status[s.PG_ID].astype(str).tolist()
    layout, donor_desc = _donor_descs(status_ranks, status_ids, names)
    by_desc: dict[str, list[ProcessGroup]] = defaultdict(list)
    for g in index.groups.values():
        if g.membership_source == Membership.INFERRED and g.desc and g.desc != DEFAULT_PG_DESC:
            by_desc[g.desc].append(g)
    if not by_desc:
        return
    members = {desc: {r for g in groups for r in g.ranks} for desc, groups in by_desc.items()}
    orphans: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for rank, pg_id in zip(status_ranks, status_ids):
        if (rank, pg_id) in index.status_key_of or (rank, pg_id) in names.id_to_name or pg_id == DEFAULT_PG_ID:
            continue
        votes = donor_desc.get((layout[rank], pg_id))
        desc = next(iter(votes)) if votes and len(votes) == 1 else None
        if desc in members and rank not in members[desc]:
            orphans[desc].append((rank, pg_id))
    for desc, found in orphans.items():
        modal = full_size(by_desc[desc])
        short = [g for g in by_desc[desc] if len(g.ranks) < modal]
        ranks = {rank for rank, _ in found}
        if len(short) != 1 or len(ranks) != len(found) or len(ranks) != modal - len(short[0].ranks):
            continue
        g = short[0]
        g.ranks = tuple(sorted((*g.ranks, *ranks)))
        for rank, pg_id in found:
            index.key_of[(rank, g.name)] = g.key
            index.status_key_of[(rank, pg_id)] = g.key


def _resolve_status_ids(
    status: pd.DataFrame, index: GroupIndex, names: _EntryNames, by_order: dict[tuple[int, str], str]
) -> None:
    """pg_status is keyed by the local pg_id: resolve it through the rank's own entries,
    else by the order it made its groups (``by_order``, see :mod:`.pg_ids`), else through
    ranks with the same pg_id layout (Megatron-style SPMD creation order)."""
    status_ranks = status[s.RANK].to_numpy(dtype=np.int64).tolist()
    status_ids = status[s.PG_ID].astype(str).tolist()
    layout, donor_desc = _donor_descs(status_ranks, status_ids, names)
    groups_with_desc: dict[tuple[int, str], list[str]] = defaultdict(list)
    for g in index.groups.values():
        for r in g.ranks:
            groups_with_desc[(r, g.desc)].append(g.key)
    own_ids = {(rank, index.key_of.get((rank, name), name)) for (rank, _), name in names.id_to_name.items()}
    for rank, pg_id in zip(status_ranks, status_ids):
        name = names.id_to_name.get((rank, pg_id)) or by_order.get((rank, pg_id))
        if name is not None:
            key = index.key_of.get((rank, name))
            if key is None and name in names.inferred:
                key = name
            if key is not None:
                index.status_key_of[(rank, pg_id)] = key
            continue
        votes = donor_desc.get((layout.get(rank, frozenset()), pg_id))
        if votes and len(votes) == 1:
            (desc,) = votes
            candidates = groups_with_desc.get((rank, desc), [])
            # a group has one pg_id per rank: never a second one, when the rank's own
            # entries already name that group's id (only-active dumps leave few entries)
            if len(candidates) == 1 and (rank, candidates[0]) not in own_ids:
                index.status_key_of[(rank, pg_id)] = candidates[0]
                continue
        if (
            pg_id == DEFAULT_PG_ID
            and len(default := groups_with_desc.get((rank, DEFAULT_PG_DESC), [])) == 1
            and (rank, default[0]) not in own_ids
        ):  # the default group is the first a process makes (init_process_group): id 0 everywhere
            index.status_key_of[(rank, pg_id)] = default[0]
