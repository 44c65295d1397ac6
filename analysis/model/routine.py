"""Each rank's own routine: what it issued after the same collectives in earlier steps.

A training loop repeats. A rank's ops (collectives and send/recv), in the order it
issued them, are a sequence of (program family, op, sizes, dtypes); after the same few
ops it issues the same next one in every step. A rank whose pending collective differs from
what its own earlier steps issued at that point added or skipped one, while a rank
that is merely blocked, or still on its way, waits in what its routine predicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd

from .. import schema as s
from ..opnames import is_exchange
from ..tables.rowkeys import equals, flag

CONTEXT = 8
"""Ops before a point that are matched against earlier points of the routine, at most."""
MIN_CONTEXT = 4
"""Ops that must match at least: a shorter match says little about where in the step it is."""

Step = tuple[str, str, str, str]
"""(program family, op, input sizes, dtypes): one collective as the routine sees it."""


@dataclass(frozen=True, slots=True)
class Departure:
    """An op of a rank that is not what its routine issues at that point."""

    pg_key: str
    seq: int
    issued: Step
    expected: Step


def _predict(steps: list[Step], at: int) -> Step | None:
    """What followed the longest earlier match of the collectives before ``at``, if unanimous."""
    for k in range(min(CONTEXT, at), MIN_CONTEXT - 1, -1):
        context = steps[at - k : at]
        followers = {steps[j] for j in range(k, at) if steps[j - k : j] == context}
        if followers:
            return followers.pop() if len(followers) == 1 else None
    return None


WINDOW = 48
"""Collectives before the pending one searched for a departure (a step or two of a real job)."""


@dataclass(frozen=True, slots=True)
class Routine:
    """One rank's ops in the order it issued them, up to its earliest pending one (the head)."""

    steps: list[Step]
    keys: list[str]
    seqs: list[int]
    head: int


def routine(
    entries: pd.DataFrame, rows: np.ndarray, key_of: dict[tuple[int, str], str], family_of: dict[str, str], rank: int
) -> Routine | None:
    """``rank``'s routine from its rows of ``entries``; None when it has nothing pending or
    its entries carry no record ids (their order is then unknown)."""
    mine = entries.iloc[rows]
    if mine.empty:
        return None
    rid = mine[s.RECORD_ID].to_numpy(dtype=np.int64, na_value=-1)
    if (rid < 0).any():
        return None
    mine = mine.iloc[np.argsort(rid, kind="stable")]
    pending = ~(equals(mine[s.STATE], "completed") | flag(mine[s.RETIRED]))
    if not pending.any():
        return None
    head = int(np.flatnonzero(pending)[0])
    mine = mine.iloc[: head + 1]
    keys = [key_of.get((rank, n), n) for n in mine[s.PG_NAME].astype(str)]
    columns = [mine[c].astype(str).to_numpy() for c in (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)]
    steps = [
        (family_of.get(k, k), op, "" if is_exchange(op) else sz, dt)
        for k, op, sz, dt in zip(keys, *columns, strict=True)
    ]
    p2p = flag(mine[s.IS_P2P])
    seqs = np.where(
        p2p, mine[s.P2P_SEQ].to_numpy(dtype=np.int64, na_value=-1), mine[s.SEQ].to_numpy(dtype=np.int64, na_value=-1)
    )
    return Routine(steps, keys, [int(q) for q in seqs], head)


def departures(r: Routine, window: int = WINDOW) -> list[Departure]:
    """Where the rank issued something else than its routine predicts, among its last
    ``window`` ops up to its head, oldest first."""
    found = []
    for at in range(max(1, r.head - window), r.head + 1):
        expected = _predict(r.steps, at)
        if expected is not None and expected != r.steps[at]:
            found.append(Departure(r.keys[at], r.seqs[at], r.steps[at], expected))
    return found


def within_step(r: Routine, marker: tuple[str, str]) -> bool | None:
    """Whether the rank's head lies before the next ``marker`` (a (family, op) its routine
    issues once a step) that it has not issued yet: since its last marker it issued no more
    ops of the head's kind than in any whole step before. None where its history shows no
    whole step."""
    at = [i for i, step in enumerate(r.steps[: r.head]) if step[:2] == marker]
    if len(at) < 2:
        return None
    kind = r.steps[r.head]
    per_step = [sum(1 for step in r.steps[a + 1 : b] if step == kind) for a, b in pairwise(at)]
    if not any(per_step) and kind in r.steps[: at[0]]:
        return None  # issued before, never between two markers: those seen recur within one step
    now = sum(1 for step in r.steps[at[-1] + 1 : r.head + 1] if step == kind)
    return now <= max(per_step)
