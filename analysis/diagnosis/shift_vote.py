"""Two sides one collective off each other: the call one side has in excess says which.

Where the two sides of a tie at (group, seq) are not in step again later, and one
side's call at each later seq (two or more) is the other side's at the next, one side
has a call the other does not: the other skipped it, or this one added it. An added collective comes
from a call of its own (a debug metric, a stray barrier): a call site the group calls
from nowhere else. A call from a site the group calls from at other seqs is a call of
the program, so the side without it at ``seq`` skipped it (the record may not reach the
step where the short side issues that very call again).
"""

from __future__ import annotations

import pandas as pd

from .. import schema as s
from .history import calls_by_seq, known_site

MIN_SHIFTED = 2
"""Later seqs that must show the shift, every one of them, before it decides (and the two
sides must not be in step at every later seq both recorded)."""

_WHOLE = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)
Call = tuple[str, ...]
"""A whole call: op, sizes, dtypes, call site (last)."""


def _side_calls(group_cells: pd.DataFrame, ranks: set[int]) -> dict[int, Call]:
    """seq -> the whole call ``ranks`` issued there, where all that recorded it agree."""
    rows = group_cells.loc[group_cells[s.RANK].isin(ranks).to_numpy()]
    return {q: next(iter(c)) for q, c in calls_by_seq(rows, _WHOLE).items() if len(c) == 1}


def _of_the_program(mine: dict[int, Call], theirs: dict[int, Call], seq: int) -> bool | None:
    """Whether the call ``mine`` has in excess at ``seq`` is a call of the program: its call
    site is one the group calls from at other seqs too (on either side); a site called from
    nowhere else is a call of its own. Without a known site, it is the program's where the
    other side issues the whole call later, and nothing is said otherwise."""
    call = mine.get(seq)
    if call is None:
        return None
    site = call[-1]
    if known_site(site):
        return any(c[-1] == site for c in theirs.values()) or any(c[-1] == site for q, c in mine.items() if q != seq)
    return True if any(c == call for q, c in theirs.items() if q > seq) else None


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
    a, b = (calls[v] for v in tied)
    later = [q for q in a if q > seq and q in b]
    if later and all(a[q] == b[q] for q in later):
        return None  # in step again after ``seq`` (a run of like calls): one off or not, it does not show
    decided: set[tuple[str, int]] = set()
    for extra, other in (tied, tied[::-1]):
        mine, theirs = calls[extra], calls[other]
        shifted = [q for q in theirs if q >= seq and q + 1 in mine]
        if len(shifted) < MIN_SHIFTED or any(theirs[q] != mine[q + 1] for q in shifted):
            continue
        program = _of_the_program(mine, theirs, seq)
        if program is not None:
            decided.add((extra, 1) if program else (other, -1))
    return decided.pop() if len(decided) == 1 else None
