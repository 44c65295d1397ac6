"""Communicator-local ranks of proxy ops -> global (torch) ranks, where something says how.

- ``_rank`` (probing's federated views): each row's global rank; a communicator maps when
  every local rank it names (as ``rank`` or ``peer``) has exactly one ``_rank``;
- otherwise, with dumps, ``pg_config``: the one process group with as many ranks as the
  communicator (torch numbers a group's members in the order of its rank list, which is
  what NCCL's ``comm->rank`` is); several groups of that size leave it local;
- otherwise the ranks stay local, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model.groups import GroupIndex
from ..types import Membership

FROM_RANK_COLUMN, FROM_PG_CONFIG, LOCAL = "_rank", "pg_config", "local"


@dataclass(frozen=True, slots=True)
class CommMap:
    comm: str
    size: int
    source: str
    """``_rank``, ``pg_config`` or ``local``."""
    to_global: dict[int, int]
    group: str | None = None
    """The process group (key) it was matched to, when dumps were given."""
    note: str | None = None

    @property
    def is_global(self) -> bool:
        return self.source != LOCAL

    def rank(self, local: int) -> int:
        return self.to_global.get(local, local)


def _from_rank_column(rows: pd.DataFrame) -> tuple[dict[int, int] | None, str | None]:
    has = rows.loc[rows["_rank"].to_numpy() >= 0, ["rank", "_rank"]].drop_duplicates()
    if has.empty:
        return None, None
    if has["rank"].duplicated().any():
        bad = int(has.loc[has["rank"].duplicated(), "rank"].iloc[0])
        return None, f"local rank {bad} has several '_rank' values"
    return dict(zip(has["rank"].astype(int), has["_rank"].astype(int))), None


def _group_of(size: int, groups: GroupIndex | None, to_global: dict[int, int] | None) -> tuple[str | None, list]:
    if groups is None:
        return None, []
    fits = [g for g in groups.groups.values() if len(g.ranks) == size]
    if to_global is not None:
        members = set(to_global.values())
        exact = [g for g in fits if set(g.ranks) == members]
        return (exact[0].key if len(exact) == 1 else None), exact
    known = [g for g in fits if g.membership_source == Membership.PG_CONFIG]
    return (known[0].key if len(known) == 1 else None), known


def map_comms(rows: pd.DataFrame, groups: GroupIndex | None = None) -> dict[str, CommMap]:
    """Every communicator of ``rows`` (``comm_hash`` as text) with its rank mapping."""
    out: dict[str, CommMap] = {}
    for comm, part in rows.groupby("comm_hash", observed=True, sort=True):
        comm = str(comm)
        peers = part["peer"].to_numpy()
        named = np.union1d(part["rank"].to_numpy(), peers[peers >= 0])
        size = int(named.max()) + 1 if named.size else 0
        to_global, problem = _from_rank_column(part)
        if to_global is not None and set(named.tolist()) <= set(to_global):
            key, _ = _group_of(size, groups, to_global)
            out[comm] = CommMap(comm, size, FROM_RANK_COLUMN, to_global, key)
            continue
        if to_global is not None:
            problem = "some of its ranks have no row of their own to give a '_rank'"
        key, candidates = _group_of(size, groups, None)
        if key is not None:
            g = groups.groups[key]
            out[comm] = CommMap(comm, size, FROM_PG_CONFIG, dict(enumerate(g.ranks)), key)
            continue
        if groups is not None and not problem:
            problem = (
                f"{len(candidates)} process groups of {size} ranks in the dumps' pg_config"
                if candidates
                else f"no process group of {size} ranks in the dumps' pg_config"
            )
        out[comm] = CommMap(comm, size, LOCAL, {}, None, problem)
    return out
