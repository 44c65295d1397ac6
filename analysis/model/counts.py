"""Layer 1 in counts: where each rank stands in its program (``docs/one-model.md``).

The records (:mod:`.records`) are a rank's calls in order, but a ring buffer holds only
the newest and an only-active dump only the pending ones. How many collectives each rank
issued in each group (``pg_status`` and the entries together, :mod:`.progress`) survives
both. A rank's **point** is that count in its group of each family (and, where the dumps
record send/recvs, how many it posted in each send/recv group): sibling groups of one
family issue the same program at the same seq, so their counts compare.

Two facts of one program make the points a model: ranks blocked in the same collective
(one family, one seq) are at one point of it and hold the same counts; and of any two
ranks that run it, one issued at least as many in every family as the other (the points
of one program form a chain). A rank whose point breaks either left its program.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowkeys import flag
from .groups import ProcessGroup
from .progress import Progress

Point = dict[str, int]
"""family -> how many of its collectives the rank issued."""


def count_points(
    groups: Iterable[ProcessGroup], progress: Mapping[tuple[str, int], Progress], family_of: Mapping[str, str]
) -> dict[int, Point]:
    """Each rank's point: its count in each family of its groups of two or more ranks whose
    collective progress is known. Families with a send/recv group are left aside, every
    group of them: their pg_status counts send/recvs and collectives in one field, and a
    group whose dumps hold no send/recv (none pending in an only-active dump) would count
    what its sibling counts otherwise. Seqs start at 1, so the last one issued is the count."""
    groups = list(groups)
    p2p = p2p_families(groups, family_of)
    points: dict[int, Point] = defaultdict(dict)
    for g in groups:
        family = family_of.get(g.key, g.key)
        if len(g.ranks) < 2 or family in p2p:
            continue
        for r in g.ranks:
            p = progress.get((g.key, r))
            if p is not None and p.enqueued is not None:
                points[r][family] = points[r].get(family, 0) + max(p.enqueued, 0)
    return dict(points)


def p2p_families(groups: Iterable[ProcessGroup], family_of: Mapping[str, str]) -> set[str]:
    """The families with a group whose dumps record send/recvs."""
    return {family_of.get(g.key, g.key) for g in groups if g.has_p2p}


def p2p_points(
    entries: pd.DataFrame, key_of: Mapping[tuple[int, str], str], family_of: Mapping[str, str]
) -> dict[int, Point]:
    """Each rank's send/recvs posted in each family of its send/recv groups, where the dumps
    record them (NCCL numbers them per group, ``p2p_seq_id``; gloo records none): the newest
    record of a group holds its count, however few the ring buffer kept."""
    if entries.empty or s.P2P_SEQ not in entries:
        return {}
    p2p = entries.loc[flag(entries[s.IS_P2P]), [s.RANK, s.PG_NAME, s.P2P_SEQ]].dropna()
    newest = p2p.groupby([s.RANK, s.PG_NAME], observed=True)[s.P2P_SEQ].max()
    points: dict[int, Point] = defaultdict(dict)
    for (rank, name), count in newest.items():
        key = key_of.get((int(rank), str(name)))
        if key is not None:
            family = family_of.get(key, key)
            points[int(rank)][family] = points[int(rank)].get(family, 0) + int(count)
    return dict(points)


def count_mates(
    groups: Iterable[ProcessGroup], family_of: Mapping[str, str], stage_of: Mapping[int, object]
) -> dict[int, frozenset[int]]:
    """rank -> the ranks that run its program as counts see it: members of groups of the same
    families (two or more ranks each), at the same pipeline stage (stages issue different
    numbers of collectives per step), itself too. No layout is assumed: a role is what the
    ranks' groups say it is, whatever counts the dumps kept."""
    families: dict[int, set[str]] = defaultdict(set)
    for g in groups:
        if len(g.ranks) >= 2:
            for r in g.ranks:
                families[r].add(family_of.get(g.key, g.key))
    role_of = {r: (frozenset(fams), stage_of.get(r)) for r, fams in families.items()}
    by_role: dict[tuple[frozenset[str], object], set[int]] = defaultdict(set)
    for r, role in role_of.items():
        by_role[role].add(r)
    shared = {role: frozenset(ranks) for role, ranks in by_role.items()}  # one set per role, not per rank
    return {r: shared[role] for r, role in role_of.items()}


Pending = tuple[int, str, int, bool]
"""A call a rank holds pending: (rank, group key, seq, send/recv); a send/recv's seq is its p2p seq."""


def issued_after(
    entries: pd.DataFrame, key_of: Mapping[tuple[int, str], str], family_of: Mapping[str, str], calls: Iterable[Pending]
) -> dict[Pending, Point]:
    """How many of each family a rank issued after each call it holds pending, by record order.

    A rank's point where it issued such a call is its point less these: ranks blocked in one
    collective compare as they stood when they issued it, whatever one of them issued behind
    it since (a collective of another group queued behind its own). The calls after a pending
    one are the newest of the rank, so the ring buffer holds them. A call without its entry
    is left out."""
    calls = list(calls)
    cols = [s.RANK, s.RECORD_ID, s.PG_NAME, s.SEQ, s.P2P_SEQ, s.IS_P2P]
    if entries.empty or not calls or any(c not in entries for c in cols):
        return {}
    e = entries.loc[entries[s.RANK].isin({c[0] for c in calls}).to_numpy(), cols]
    p2p = flag(e[s.IS_P2P])
    seq = np.where(p2p, e[s.P2P_SEQ].fillna(-1).to_numpy(), e[s.SEQ].fillna(-1).to_numpy()).astype(np.int64)
    rank, rid = e[s.RANK].to_numpy().astype(np.int64), e[s.RECORD_ID].to_numpy().astype(np.int64)
    names = e[s.PG_NAME].astype(str).to_numpy()
    name_of = {(r, k): n for (r, n), k in key_of.items()}
    at = {(r, name_of.get((r, k)), q, p): c for c in calls for r, k, q, p in [c]}
    rid_of: dict[Pending, int] = {}
    for i in np.flatnonzero(np.isin(seq, list({c[2] for c in calls}))):  # rows that may be a pending call
        c = at.get((int(rank[i]), names[i], int(seq[i]), bool(p2p[i])))
        if c is not None:
            rid_of[c] = max(rid_of.get(c, -1), int(rid[i]))
    if not rid_of:
        return {}
    first: dict[int, int] = {}
    for c, r in rid_of.items():
        first[c[0]] = min(first.get(c[0], r), r)
    tail = np.flatnonzero(rid > pd.Series(rank).map(pd.Series(first)).fillna(np.iinfo(np.int64).max).to_numpy())
    rows: dict[int, list[tuple[int, str, int, bool]]] = defaultdict(list)
    for i in tail:  # the calls after each rank's earliest pending one: a few per rank
        key = key_of.get((int(rank[i]), names[i]))
        if key is not None:
            rows[int(rank[i])].append((int(rid[i]), key, int(seq[i]), bool(p2p[i])))
    found: dict[Pending, Point] = {}
    for call, cut in rid_of.items():
        later = {(k, q, p) for r, k, q, p in rows.get(call[0], []) if r > cut}  # a coalesced call once
        after: Point = defaultdict(int)
        for k, _, _ in later:
            after[family_of.get(k, k)] += 1
        found[call] = dict(after)
    return found
