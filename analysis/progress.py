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

from . import schema as s
from .groups import GroupIndex
from .load import DumpSet

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

    One grouping pass: at 16k ranks the grouping, not the aggregation, is the cost.
    """
    if cells.empty:
        return {}
    seq = cells[s.SEQ].to_numpy(dtype=np.int64)
    done = cells["done"].to_numpy(dtype=bool)
    frame = pd.DataFrame(
        {
            s.PG_KEY: cells[s.PG_KEY],
            s.RANK: cells[s.RANK],
            "hi": seq,
            "lo": seq,
            "pending_lo": np.where(done, np.iinfo(np.int64).max, seq),
            "done_hi": np.where(done, seq, np.iinfo(np.int64).min),
            "n_pending": ~done,
            "n_done": done,
        }
    )
    agg = frame.groupby([s.PG_KEY, s.RANK], sort=False, observed=True).agg(
        {"hi": "max", "lo": "min", "pending_lo": "min", "done_hi": "max", "n_pending": "sum", "n_done": "sum"}
    )
    return {
        (str(k), int(r)): (int(hi), int(lo), int(p_lo) if n_p else None, int(d_hi) if n_d else None)
        for (k, r), hi, lo, p_lo, d_hi, n_p, n_d in agg.itertuples(name=None)
    }


def compute_progress(dumps: DumpSet, index: GroupIndex, cells: pd.DataFrame) -> dict[tuple[str, int], Progress]:
    """(group key, rank) -> Progress, for every member rank of every group with a dump.

    ``cells`` are the collective cells of :mod:`analysis.cells`.
    """
    member = _per_member(cells)

    status: dict[tuple[str, int], tuple[int, int, int]] = {}
    st = dumps.status
    for rank, pg_id, enq, started, completed in st[
        [s.RANK, s.PG_ID, s.LAST_ENQUEUED, s.LAST_STARTED, s.LAST_COMPLETED]
    ].itertuples(index=False):
        key = index.status_key_of.get((int(rank), str(pg_id)))
        if key is None or index.groups[key].has_p2p:
            continue
        status[(key, int(rank))] = (
            _int_or(enq, -1),
            _int_or(started, -1),
            _int_or(completed, -1),
        )

    have_dump = set(dumps.ranks)
    result: dict[tuple[str, int], Progress] = {}
    for key, group in index.groups.items():
        for rank in group.ranks:
            if rank not in have_dump:
                continue
            k = (key, rank)
            enq = lo = first_pending = completed = started = None
            if k in member:
                enq, lo, pending_lo, done_hi = member[k]
                if pending_lo is not None:
                    first_pending = pending_lo
                    completed = first_pending - 1
                else:
                    completed = enq if done_hi is None else done_hi
            if k in status:
                # Entries and pg_status are updated by different threads, so either can be
                # a step behind the other at dump time: the furthest of the two is the truth.
                s_enq, s_started, s_completed = status[k]
                enq = s_enq if enq is None else max(enq, s_enq)
                completed = s_completed if completed is None else max(completed, s_completed)
                started = s_started if s_started >= 0 else None
            if enq is not None and completed is not None:
                completed = min(completed, enq)
                first_pending = completed + 1 if completed < enq else None
            result[k] = Progress(enq, completed, started, first_pending, lo)
    return result


def _int_or(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
