"""Each rank's own routine: what it issued after the same collectives in earlier steps.

A training loop repeats. A rank's collectives, in the order it issued them, are a
sequence of (program family, op, sizes, dtypes); after the same few collectives it
issues the same next one in every step. A rank whose pending collective differs from
what its own earlier steps issued at that point added or skipped one, while a rank
that is merely blocked, or still on its way, waits in what its routine predicts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from .cells import DONE, ROW, _take_int

CONTEXT = 8
"""Collectives before the pending one that must match an earlier point of the routine."""

Step = tuple[str, str, str, str]
"""(program family, op, input sizes, dtypes): one collective as the routine sees it."""


@dataclass(frozen=True, slots=True)
class Departure:
    """A rank's pending collective that is not what its routine issues at that point."""

    rank: int
    pg_key: str
    seq: int
    issued: Step
    expected: Step


def _predict(steps: list[Step], at: int) -> Step | None:
    """What followed the longest earlier match of the collectives before ``at``, if unanimous."""
    for k in range(min(CONTEXT, at), 0, -1):
        context = steps[at - k : at]
        followers = {steps[j] for j in range(k, at) if steps[j - k : j] == context}
        if followers:
            return followers.pop() if len(followers) == 1 else None
    return None


WINDOW = 48
"""Collectives before the pending one searched for a departure (a step or two of a real job)."""


def departures(
    cells: pd.DataFrame, entries: pd.DataFrame, family_of: dict[str, str], rank: int, window: int = WINDOW
) -> list[Departure]:
    """Where ``rank`` issued something else than its routine predicts, among its last
    ``window`` collectives up to its earliest pending one, oldest first (none for a rank
    with nothing pending, or whose entries carry no record ids)."""
    mine = cells.loc[(cells[s.RANK] == rank).to_numpy()]
    if mine.empty or mine[DONE].all():
        return []
    rid = _take_int(entries[s.RECORD_ID], mine[ROW].to_numpy(), -1)
    if (rid < 0).any():
        return []  # no record ids: the order of the rank's collectives is unknown
    mine = mine.iloc[np.argsort(rid, kind="stable")]
    steps = [
        (family_of.get(str(k), str(k)), str(op), str(sz), str(dt))
        for k, op, sz, dt in mine[[s.PG_KEY, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]].itertuples(index=False)
    ]
    head = int(np.flatnonzero(~mine[DONE].to_numpy())[0])
    found = []
    for at in range(max(1, head - window), head + 1):
        expected = _predict(steps, at)
        if expected is not None and expected != steps[at]:
            row = mine.iloc[at]
            found.append(Departure(rank, str(row[s.PG_KEY]), int(row[s.SEQ]), steps[at], expected))
    return found
