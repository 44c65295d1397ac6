"""Ranks in the same situation, as one class: 16,384 ranks in a dozen rows.

A rank's situation is where it is (the collective or send/recv it is blocked in, or its
newest entry when it waits on nothing), with the state and call stack it has there,
whether it is a suspect, and what it waits on. Ranks are first grouped without what
they wait on; then each group is split by the groups of the ranks they wait on, so the
ranks blocked on the culprit and those blocked on its victims become separate classes.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import DONE, ROW, int_values
from ..tables.rowindex import rank_blocks
from ..tables.rowkeys import equals, flag
from ..types import FailureClass
from .analysis import Analysis
from .unreadable import unreadable_files
from .verdict import Diagnosis


class Situation(enum.StrEnum):
    BLOCKED = "blocked"
    """Waits in a collective or send/recv it issued."""
    IDLE = "idle"
    """Waits in nothing the dumps record; ``place`` is its newest entry."""
    NO_DUMP = "no_dump"
    UNREADABLE = "unreadable"
    """Its dump file is there but could not be read."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where a rank is: one entry of one group, with its state as the heatmap shows it."""

    pg_key: str
    seq: int
    op: str | None
    state: str
    """'completed' for finished work (gloo leaves such entries 'scheduled'), else as recorded."""
    stack_id: int | None
    is_p2p: bool = False


@dataclass(frozen=True, slots=True)
class RankClass:
    """Ranks in one situation; ``waits_on`` holds (class index, reason) pairs."""

    ranks: tuple[int, ...]
    situation: Situation
    place: Place | None
    """Where the first rank of the class is (its members are at the same seq of sibling groups)."""
    pg_keys: tuple[str, ...]
    """Every group the members are at."""
    suspect: bool
    failure_class: FailureClass | None
    waits_on: tuple[tuple[int, str], ...]

    @property
    def size(self) -> int:
        return len(self.ranks)


def rank_classes(a: Analysis, d: Diagnosis) -> list[RankClass]:
    """Every rank of the job in a class; the largest class first."""
    places, situations = _situations(a)
    desc = {k: g.desc for k, g in a.groups.groups.items()}

    def base(rank: int) -> tuple:
        p = places.get(rank)
        where = None if p is None else (desc.get(p.pg_key, p.pg_key), p.seq, p.op, p.state, p.stack_id, p.is_p2p)
        return (situations[rank], where, d.suspect_classes.get(rank))

    ranks = sorted(situations)
    base_of = {r: base(r) for r in ranks}
    out_edges: dict[int, set[tuple[str, tuple]]] = defaultdict(set)
    for e in a.graph.edges:
        if e.blocker in base_of:
            out_edges[e.waiter].add((e.reason, base_of[e.blocker]))
    members: dict[tuple, list[int]] = defaultdict(list)
    for r in ranks:
        members[(base_of[r], frozenset(out_edges.get(r, ())))].append(r)
    groups = sorted(members.values(), key=lambda rs: (-len(rs), rs[0] not in d.suspect_classes, rs[0]))
    index_of = {r: i for i, rs in enumerate(groups) for r in rs}
    waits: dict[int, set[tuple[int, str]]] = defaultdict(set)
    for e in a.graph.edges:
        if e.waiter in index_of and e.blocker in index_of:
            waits[index_of[e.waiter]].add((index_of[e.blocker], e.reason))
    out = []
    for i, rs in enumerate(groups):
        first = rs[0]
        keys = sorted({places[r].pg_key for r in rs if r in places})
        cls = d.suspect_classes.get(first)
        out.append(
            RankClass(
                tuple(rs),
                situations[first],
                places.get(first),
                tuple(keys),
                cls is not None,
                cls,
                tuple(sorted(waits[i])),
            )
        )
    return out


def _situations(a: Analysis) -> tuple[dict[int, Place], dict[int, Situation]]:
    """Each rank's place and situation: blocked where the wait graph says, else at its newest entry."""
    places = _blocked_places(a)
    situations = {r: Situation.BLOCKED for r in places}
    newest = _newest_places(a)
    for r in a.dumps.ranks:
        if r not in places:
            situations[r] = Situation.IDLE
            if r in newest:
                places[r] = newest[r]
    unreadable = unreadable_files(a)
    for r in a.missing_dumps:
        situations.setdefault(r, Situation.UNREADABLE if r in unreadable else Situation.NO_DUMP)
    for r in unreadable:
        situations.setdefault(r, Situation.UNREADABLE)
    return places, situations


def _shown_state(state: str, done: bool) -> str:
    return "completed" if done else state


def _blocked_places(a: Analysis) -> dict[int, Place]:
    """Where each blocked rank waits: its first pending op (the oldest, when it has several)."""
    c = a.cells
    pending = c.loc[~c[DONE].to_numpy(), [s.PG_KEY, s.RANK, s.SEQ, s.STATE, s.STACK_ID, ROW]]
    t_created = a.dumps.entries[s.T_CREATED]
    cell_of = {}
    for key, rank, seq, state, sid, row in pending.itertuples(index=False):
        cell_of[(str(key), int(rank), int(seq))] = (str(state), None if pd.isna(sid) else int(sid), int(row))
    p2p_of = _pending_p2p(a)
    found = []
    for b in a.graph.blocked:
        if b.is_p2p:
            found.append(p2p_of.get((b.rank, a.groups.groups[b.pg_key].name, b.seq), ("scheduled", None, -1)))
        else:
            found.append(cell_of.get((b.pg_key, b.rank, b.seq), ("scheduled", None, -1)))
    rows = [row for _, _, row in found if row >= 0]
    created = dict(zip(rows, t_created.iloc[rows].tolist()))  # one read for all, not one per rank
    best: dict[int, tuple[tuple, Place]] = {}
    for b, (state, sid, row) in zip(a.graph.blocked, found):
        t = created.get(row)
        order = (pd.isna(t), 0 if pd.isna(t) else int(t), b.seq)
        if b.rank not in best or order < best[b.rank][0]:
            best[b.rank] = (order, Place(b.pg_key, b.seq, b.op, state, sid, b.is_p2p))
    return {r: p for r, (_, p) in best.items()}


def _pending_p2p(a: Analysis) -> dict[tuple[int, str, int], tuple[str, int | None, int]]:
    e = a.dumps.entries
    rows = np.flatnonzero(flag(e[s.IS_P2P]) & ~(equals(e[s.STATE], "completed") | flag(e[s.RETIRED])))
    sub = e.iloc[rows][[s.RANK, s.PG_NAME, s.P2P_SEQ, s.STATE, s.STACK_ID]]
    out = {}
    for row, (rank, name, q, state, sid) in zip(rows.tolist(), sub.itertuples(index=False)):
        if not pd.isna(q):
            out[(int(rank), str(name), int(q))] = (str(state), None if pd.isna(sid) else int(sid), row)
    return out


def _newest_places(a: Analysis) -> dict[int, Place]:
    """Each rank's newest entry (highest record id) as a place."""
    e = a.dumps.entries
    if e.empty:
        return {}
    rid = int_values(e[s.RECORD_ID], -1)  # the columns themselves (int32 as loaded), not copies
    block_ranks, starts, ends = rank_blocks(int_values(e[s.RANK], -1))
    top = np.maximum.reduceat(rid, starts)
    lengths = ends - starts
    is_top = rid == np.repeat(top, lengths)
    tops = np.flatnonzero(is_top)
    first_top = tops[np.searchsorted(tops, starts)]  # each block holds its own top: the first at or after its start
    best: dict[int, tuple[int, int]] = {}
    for rank, row, r_id in zip(block_ranks.tolist(), first_top.tolist(), top.tolist()):
        if rank not in best or r_id > best[rank][1]:
            best[rank] = (row, r_id)
    rows = np.array([row for row, _ in best.values()], dtype=np.int64)
    sub = e.iloc[rows][[s.RANK, s.PG_NAME, s.SEQ, s.P2P_SEQ, s.IS_P2P, s.OP, s.STATE, s.RETIRED, s.STACK_ID]]
    out = {}
    for rank, name, seq, p2p_seq, is_p2p, op, state, retired, sid in sub.itertuples(index=False):
        p2p = bool(is_p2p) if not pd.isna(is_p2p) else False
        q = p2p_seq if p2p and not pd.isna(p2p_seq) else seq
        done = str(state) == "completed" or (not pd.isna(retired) and bool(retired))
        key = a.groups.key_of.get((int(rank), str(name)), str(name))
        out[int(rank)] = Place(
            key,
            int(q),
            None if pd.isna(op) else str(op),
            _shown_state(str(state), done),
            None if pd.isna(sid) else int(sid),
            p2p,
        )
    return out
