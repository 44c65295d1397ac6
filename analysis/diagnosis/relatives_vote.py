"""A tie decided by the groups of the same description, where no sibling's history is known.

Where the dumps hold no common history for the groups of a description (small ring
buffers: each stage's window covers other seqs), no group is known to be at the same
point of the program, and the siblings cannot vote. What every other group of the
description issued at each seq still says what the program issues there, where they all
agree: one side of the tie that issued that at each of its seqs is in step with the
program, and a side that issued something else at each is not (it skipped or added a
collective). Where the other groups differ at a seq (another stage, other buckets), that
seq says nothing.
"""

from __future__ import annotations

import pandas as pd

from .. import schema as s
from .history import calls_by_seq

MIN_IN_STEP = 2
"""Seqs at which the side in step must match the other groups, every one of them."""


def relatives_vote(
    cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str], relatives: list[str]
) -> str | None:
    """The one ``tied`` value whose side issued, at each of its seqs, what all the
    ``relatives`` (groups of the same description) agree on there, while the other side
    matched them at none."""
    if not relatives:
        return None
    program = {
        q: c for q, c in calls_by_seq(cells.loc[cells[s.PG_KEY].isin(relatives).to_numpy()]).items() if len(c) == 1
    }
    group = cells.loc[(cells[s.PG_KEY] == key).to_numpy()]
    here = group.loc[group[s.SEQ] == seq]
    in_step: list[str] = []
    for value in tied:
        ranks = set(here.loc[(here[attribute].astype(str) == value).to_numpy(), s.RANK])
        mine = calls_by_seq(group.loc[group[s.RANK].isin(ranks).to_numpy()])
        compared = [q for q, c in mine.items() if q in program and len(c) == 1]
        matched = [q for q in compared if mine[q] == program[q]]
        if seq not in compared:
            return None
        if len(matched) == len(compared) >= MIN_IN_STEP:
            in_step.append(value)
        elif matched:
            return None  # in step at some seqs, not at others: the vote says nothing
    return in_step[0] if len(in_step) == 1 else None
