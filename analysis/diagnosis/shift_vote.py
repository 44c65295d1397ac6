"""Two sides one collective off each other: the call one side has in excess says which.

Where the two sides of a tie at (group, seq) stay apart at every later seq, and one
side's call at each later seq is the other side's at the next, one side has a call the
other does not: the other skipped it, or this one added it. An added collective comes
from a call of its own (a debug metric, a stray barrier); a call the other side also
issues later, in its turn, is a call of the program, so the side without it at ``seq``
skipped it. Where the other side never issues it, it was added.
"""

from __future__ import annotations

import pandas as pd

from .. import schema as s
from .history import call_text

MIN_SHIFTED = 3
"""Later seqs that must show the shift, every one of them, before it decides."""

_WHOLE = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)


def _side_calls(group_cells: pd.DataFrame, ranks: set[int]) -> dict[int, tuple[str, ...]]:
    """seq -> the whole call ``ranks`` issued there, where all that recorded it agree."""
    rows = group_cells.loc[group_cells[s.RANK].isin(ranks).to_numpy()]
    calls: dict[int, set[tuple[str, ...]]] = {}
    for q, call in zip(rows[s.SEQ].astype(int), call_text(rows, _WHOLE).itertuples(index=False, name=None)):
        calls.setdefault(q, set()).add(call)
    return {q: next(iter(c)) for q, c in calls.items() if len(c) == 1}


def shift_vote(cells: pd.DataFrame, key: str, seq: int, attribute: str, tied: list[str]) -> tuple[str, int] | None:
    """The ``tied`` value of the side that issued the program's call at ``seq``, where the
    two sides are one collective off each other from ``seq`` on, and the other side's shift
    (+1: it skipped the call, -1: it added its own); None otherwise."""
    if len(tied) != 2:
        return None
    group_cells = cells.loc[(cells[s.PG_KEY] == key).to_numpy() & (cells[s.SEQ] >= seq).to_numpy()]
    here = group_cells.loc[group_cells[s.SEQ] == seq]
    sides = {v: {int(r) for r, x in zip(here[s.RANK], here[attribute].astype(str)) if x == v} for v in tied}
    if not all(sides.values()):
        return None
    calls = {v: _side_calls(group_cells, ranks) for v, ranks in sides.items()}
    decided: set[tuple[str, int]] = set()
    for extra, other in (tied, tied[::-1]):
        mine, theirs = calls[extra], calls[other]
        shifted = [q for q in theirs if q >= seq and q + 1 in mine]
        if len(shifted) < MIN_SHIFTED or any(theirs[q] != mine[q + 1] for q in shifted):
            continue
        call = mine.get(seq)
        again = call is not None and any(c == call for q, c in theirs.items() if q > seq)
        decided.add((extra, 1) if again else (other, -1))
    return decided.pop() if len(decided) == 1 else None
