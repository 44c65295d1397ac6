"""How far each rank got in each process group, from entries and pg_status together.

Entries show what is still in the ring buffer; ``pg_status`` (last enqueued / started /
completed sequence per group) survives ring-buffer truncation and only-active dumps.
For a group that carries P2P traffic, pg_status counts P2P and collective sequence
numbers in one field, so there it is not read as collective progress.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowkeys import counts_of, first_rows, member_ids, reduce_at
from ..types import DumpSet
from .groups import DEFAULT_PG_DESC, DEFAULT_PG_ID, GroupIndex

ENQUEUED = "enqueued"
COMPLETED = "completed"
STARTED = "started"
FIRST_PENDING = "first_pending"
WINDOW_START = "window_start"
FROM_STATUS = "from_status"


@dataclass(frozen=True, slots=True)
class Progress:
    """One rank's collective progress in one group; -1 means nothing yet, None unknown."""

    enqueued: int | None
    completed: int | None
    started: int | None
    first_pending: int | None
    window_start: int | None

    @property
    def known(self) -> bool:
        return self.enqueued is not None


def _per_member(cells: pd.DataFrame) -> dict[tuple[str, int], tuple[int, int, int | None, int | None]]:
    """(group key, rank) -> (highest seq, lowest seq, lowest pending seq, highest done seq).

    One grouping of the cells into members, then unbuffered min/max per member: at 16k
    ranks the grouping and its temporaries, not the arithmetic, are the cost.
    """
    if cells.empty:
        return {}
    member = member_ids(cells, [s.PG_KEY, s.RANK])  # int32: 4 bytes a cell
    n = int(member.max()) + 1
    first = first_rows(member, n)
    seq = cells[s.SEQ].to_numpy()
    if seq.dtype.kind != "i":
        seq = cells[s.SEQ].to_numpy(dtype=np.int64)
    done = cells["done"].to_numpy(dtype=bool)
    # in the seqs' own type: ufunc.at that casts its values takes the slow path (20x); every
    # member has a cell, and a bound left unset is never read (see the counts below)
    big, small = np.iinfo(seq.dtype).max, np.iinfo(seq.dtype).min
    hi, lo = np.full(n, small, dtype=seq.dtype), np.full(n, big, dtype=seq.dtype)
    np.maximum.at(hi, member, seq)
    np.minimum.at(lo, member, seq)
    pending_lo, done_hi = np.full(n, big, dtype=seq.dtype), np.full(n, small, dtype=seq.dtype)
    reduce_at(np.minimum, pending_lo, member, seq, ~done)  # a slice at a time: no cell-long selections
    reduce_at(np.maximum, done_hi, member, seq, done)
    n_done = counts_of(member, n, done)
    keys = cells[s.PG_KEY].iloc[first].to_numpy()
    ranks = cells[s.RANK].iloc[first].to_numpy(dtype=np.int64)
    count = counts_of(member, n)
    return {
        (str(k), int(r)): (
            int(h),
            int(low),
            int(p) if c > d else None,
            int(dh) if d else None,
        )
        for k, r, h, low, p, dh, c, d in zip(keys, ranks, hi, lo, pending_lo, done_hi, count, n_done)
    }


_STATUS_FIELDS = (s.LAST_ENQUEUED, s.LAST_STARTED, s.LAST_COMPLETED)


def compute_progress(
    dumps: DumpSet, index: GroupIndex, cells: pd.DataFrame, errored: dict[tuple[str, int], int] | None = None
) -> dict[tuple[str, int], Progress]:
    """(group key, rank) -> Progress, for every member rank of every group with a dump.

    ``cells`` are the collective cells of :mod:`analysis.cells`; ``errored``: (group key,
    rank) -> a seq whose retired entry ended in error (see :mod:`.errored`), not completed.
    """
    errored = errored or {}
    member = _per_member(cells)
    status, status_ids = _status_counts(dumps.status, index)
    have_dump = set(dumps.ranks)
    result: dict[tuple[str, int], Progress] = {}
    for key, group in index.groups.items():
        default = group.name == DEFAULT_PG_ID or group.desc == DEFAULT_PG_DESC
        for rank in group.ranks:
            if rank not in have_dump:
                continue
            k = (key, rank)
            # every process makes the default group first (id 0), and pg_status lists a
            # group from its first collective on: a rank whose status lists others but
            # not id 0 issued none of its collectives yet
            none_yet = default and DEFAULT_PG_ID not in status_ids.get(rank, {DEFAULT_PG_ID})
            result[k] = _progress(member.get(k), status.get(k), errored.get(k), none_yet)
    return result


def _status_counts(
    st: pd.DataFrame, index: GroupIndex
) -> tuple[dict[tuple[str, int], tuple[int, int, int]], dict[int, set[str]]]:
    """pg_status as (group key, rank) -> (enqueued, started, completed), send/recv groups
    aside (their fields count both), and each rank's local ids listed there."""
    status: dict[tuple[str, int], tuple[int, int, int]] = {}
    columns = [st[s.RANK].to_numpy(dtype=np.int64).tolist(), st[s.PG_ID].astype(str).tolist()]
    columns += [st[c].tolist() for c in _STATUS_FIELDS]  # missing: None (Arrow) or NaN, both -> -1
    for rank, pg_id, enq, started, completed in zip(*columns):
        key = index.status_key_of.get((rank, pg_id))
        if key is None or index.groups[key].has_p2p:
            continue
        status[(key, int(rank))] = (_int_or(enq, -1), _int_or(started, -1), _int_or(completed, -1))
    status_ids: dict[int, set[str]] = {}
    for rank, pg_id in zip(columns[0], columns[1]):
        status_ids.setdefault(rank, set()).add(pg_id)
    return status, status_ids


def _progress(
    member: tuple[int, int, int | None, int | None] | None,
    status: tuple[int, int, int] | None,
    errored: int | None,
    none_yet: bool,
) -> Progress:
    """One member's progress from its cells (``member``, see ``_per_member``), its pg_status
    fields, the seq that retired in error, and whether it issued none of the group yet."""
    enq = lo = first_pending = completed = started = None
    if none_yet and member is None and status is None:
        enq = completed = -1
    if member is not None:
        enq, lo, pending_lo, done_hi = member
        if pending_lo is not None:
            first_pending = pending_lo
            completed = first_pending - 1
        else:
            completed = enq if done_hi is None else done_hi
    if status is not None:
        # Entries and pg_status are updated by different threads, so either can be
        # a step behind the other at dump time: the furthest of the two is the truth.
        s_enq, s_started, s_completed = status
        enq = s_enq if enq is None else max(enq, s_enq)
        completed = s_completed if completed is None else max(completed, s_completed)
        started = s_started if s_started >= 0 else None
    if errored is not None and completed is not None:
        completed = min(completed, errored - 1)  # retired in error, not completed
    if enq is not None and completed is not None:
        completed = min(completed, enq)
        first_pending = completed + 1 if completed < enq else None
    return Progress(enq, completed, started, first_pending, lo)


def _int_or(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
