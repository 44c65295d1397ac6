"""Collectives that ended in an error when a member died, not in completion.

A Flight Recorder entry is retired when its work ends, whether it completed or failed.
When a member of a group dies, its peers' pending collectives in that group may fail
(the connection to it closes) and be retired, though they never completed: the rank
is still held there, as the members whose entry is still pending are. So in a group
with a rank that wrote no dump, a rank's last entry that is retired at a seq where
another member still waits is read as pending: a collective a member still waits in
did not complete.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from .cells import DONE
from .groups import GroupIndex


def reopen_errored(cells: pd.DataFrame, index: GroupIndex, dead: set[int]) -> dict[tuple[str, int], int]:
    """Mark as pending (in place) each rank's last entry in a group with a ``dead`` member
    that is retired at a seq where another member of the group still waits; returns
    (group key, rank) -> that seq."""
    keys = [k for k, g in index.groups.items() if dead & set(g.ranks)]
    if not keys or cells.empty:
        return {}
    in_groups = cells[s.PG_KEY].astype(str).isin(keys).to_numpy()
    sub = cells.loc[in_groups, [s.PG_KEY, s.RANK, s.SEQ, DONE]]
    sub = sub.assign(**{s.PG_KEY: sub[s.PG_KEY].astype(str)})
    waited = set(sub.loc[~sub[DONE].to_numpy(dtype=bool), [s.PG_KEY, s.SEQ]].itertuples(index=False, name=None))
    if not waited:
        return {}
    last = sub.groupby([s.PG_KEY, s.RANK], observed=True)[s.SEQ].transform("max")
    at_last = (sub[s.SEQ] == last).to_numpy()
    held = [(k, q) in waited for k, q in zip(sub[s.PG_KEY], sub[s.SEQ])]
    reopen = sub.index[at_last & np.asarray(held, dtype=bool) & sub[DONE].to_numpy(dtype=bool)]
    cells.loc[reopen, DONE] = False
    return {(str(k), int(r)): int(q) for k, r, q in sub.loc[reopen, [s.PG_KEY, s.RANK, s.SEQ]].itertuples(index=False)}
