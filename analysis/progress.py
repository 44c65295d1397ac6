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


def collective_rows(dumps: DumpSet, index: GroupIndex) -> pd.DataFrame:
    """Non-P2P entries with their group key and a ``done`` flag (completed or retired)."""
    e = dumps.entries
    coll = e.loc[~e[s.IS_P2P].fillna(False).astype(bool)]
    keys = _keys_for(coll, index)
    done = (coll[s.STATE].astype(str) == "completed").to_numpy() | coll[s.RETIRED].fillna(False).astype(bool).to_numpy()
    return pd.DataFrame(
        {
            s.PG_KEY: keys,
            s.RANK: coll[s.RANK].to_numpy(dtype=np.int64),
            s.SEQ: coll[s.SEQ].to_numpy(dtype=np.int64, na_value=-1),
            "done": done,
            "row": coll.index.to_numpy(),
        }
    )


def _keys_for(frame: pd.DataFrame, index: GroupIndex) -> np.ndarray:
    pairs = frame[[s.RANK, s.PG_NAME]].drop_duplicates()
    lookup = {(int(r), str(n)): index.key_of.get((int(r), str(n)), str(n)) for r, n in pairs.itertuples(index=False)}
    mapping = pd.Series(lookup)
    if mapping.empty:
        return np.array([], dtype=object)
    idx = pd.MultiIndex.from_arrays([frame[s.RANK].astype(int), frame[s.PG_NAME].astype(str)])
    return mapping.reindex(idx).to_numpy()


def compute_progress(
    dumps: DumpSet, index: GroupIndex, rows: pd.DataFrame | None = None
) -> dict[tuple[str, int], Progress]:
    """(group key, rank) -> Progress, for every member rank of every group with a dump."""
    rows = collective_rows(dumps, index) if rows is None else rows
    agg = rows.groupby([s.PG_KEY, s.RANK], sort=False).agg(enq=(s.SEQ, "max"), lo=(s.SEQ, "min"))
    pending = rows.loc[~rows["done"]].groupby([s.PG_KEY, s.RANK], sort=False)[s.SEQ].min()
    max_done = rows.loc[rows["done"]].groupby([s.PG_KEY, s.RANK], sort=False)[s.SEQ].max()

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
            if k in agg.index:
                enq, lo = int(agg.at[k, "enq"]), int(agg.at[k, "lo"])
                if k in pending.index:
                    first_pending = int(pending.at[k])
                    completed = first_pending - 1
                else:
                    completed = int(max_done.at[k]) if k in max_done.index else enq
            if k in status:
                s_enq, s_started, s_completed = status[k]
                enq = s_enq if enq is None else max(enq, s_enq)
                completed = s_completed
                started = s_started if s_started >= 0 else None
                if first_pending is None and s_completed < s_enq:
                    first_pending = s_completed + 1
            if enq is not None and completed is not None and completed > enq:
                completed = enq
            result[k] = Progress(enq, completed, started, first_pending, lo)
    return result


def _int_or(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
