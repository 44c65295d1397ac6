"""Layer 3 of the one model: which members of a wait-for cycle explain it (``docs/one-model.md``).

In a cycle every member waits on another, so each looks like a cause. Ranks that follow
their program cannot wait on each other in a cycle: one of them is always the furthest
behind, and nobody it waits on. A cycle therefore holds a rank that left its program. Each
member's newest records are aligned to the program of the ranks that run its program (in
record order, see ``model/records``), with the edits and costs of ``model/costs``; the
members whose records depart from it are the causes, and the others (in step, merely
blocked where the departing ones left them) are explained by them. Where every member
departs, only the cheapest are named; where equally cheap, none (the cycle is left to what
else the dumps show).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..model import costs
from ..model.records import Records, record_program
from .alignment import function_of
from .edit_distance import FUNCTION, MATCH, SKIP, Calls, differs, first_departure

MATES = 8
"""Ranks of a member's program whose records make its program, at most."""


@dataclass(frozen=True, slots=True)
class RecordEdit:
    """Where one rank's records first depart from the program of its program's ranks."""

    rank: int
    kind: str
    """``skip``, ``extra`` or ``substitute``."""
    record_id: int
    row: int
    """The rank's record there (for a skip: the one it issued instead)."""
    expected_row: int | None
    """A record of another rank holding the program's call there."""
    differs: tuple[str, ...]
    cost: float
    against: tuple[int, ...]
    shown: bool


def record_codes(records: Records) -> dict[str, np.ndarray]:
    """Per attribute of a call, one int per record, equal where the values are."""
    t = records.table
    out = {col: pd.factorize(t[col])[0].astype(np.int64) for col in (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES)}
    out[s.CALL_SITE] = pd.factorize(t[s.CALL_SITE])[0].astype(np.int64)
    out[FUNCTION] = pd.factorize(pd.Series([function_of(site) for site in t[s.CALL_SITE]]))[0].astype(np.int64)
    family = pd.factorize(t["family"])[0].astype(np.int64)
    out[s.OP] = out[s.OP] * (int(family.max(initial=0)) + 1) + family  # another group's call is another call
    return out


def call_points(records: Records) -> pd.Series:
    """token -> at how many record numbers (of any rank) the call stands."""
    t = records.table
    return t.drop_duplicates(["token", s.RECORD_ID])["token"].value_counts()


def record_departure(
    records: Records, codes: dict[str, np.ndarray], rank: int, mates: list[int], points: pd.Series | None = None
) -> RecordEdit | None | bool:
    """The first edit of ``rank``'s newest records against the program of ``mates``; None
    where they line up; False where nothing can tell: no record both hold; no record before
    the first that differs where both hold the same call of the same seq (the numbering may
    be offset, or a run of like calls shifted before the records begin); records left out."""
    t = records.table
    mine = t.loc[(t[s.RANK] == rank).to_numpy()]
    theirs = t.loc[t[s.RANK].isin(mates).to_numpy()]
    program = record_program(theirs)
    rids = mine[s.RECORD_ID].to_numpy()
    tokens = mine["token"].to_numpy()
    known = [program.at(int(q)) for q in rids]
    first = next((i for i, (k, tok) in enumerate(zip(known, tokens)) if k is not None and k[0] != tok), None)
    if first is None:
        return None if any(k is not None for k in known) else False
    seqs, held = mine[s.SEQ].to_numpy(), t[s.SEQ].to_numpy()
    agreed = [i for i in range(first) if known[i] is not None and known[i][0] == tokens[i]]
    if not agreed or held[known[agreed[-1]][1]] != seqs[agreed[-1]]:
        return False  # like calls one seq apart: the records were shifted before any both hold
    if (np.diff(rids) != 1).any():
        return False  # records left out (only pending ones dumped): where a call was skipped is unseen
    rows = mine.index.to_numpy()[first : first + costs.HORIZON]
    start = int(rids[first])
    ahead = [program.at(start + j) for j in range(len(rows) + costs.BAND + 1)]
    points = call_points(records) if points is None else points
    mine_calls = [int(tok) for tok in tokens[first : first + costs.HORIZON]]
    calls = Calls(
        mine_calls,
        rows,
        ahead,
        [points.get(tok, 0) > 1 for tok in mine_calls],
        [p is not None and points.get(p[0], 0) > 1 for p in ahead],
        whole_steps=program.period is not None or bool((points > 1).mean() >= 0.5),
    )
    d = first_departure(calls, codes)
    if d.kind == MATCH:
        return None
    if d.cost > costs.ONE_EDIT:
        return False  # more than one edit: these ranks do not run its program, nothing to tell
    here = ahead[d.theirs] if d.theirs < len(ahead) else None
    row = int(rows[d.mine])
    return RecordEdit(
        rank,
        d.kind,
        start + d.theirs if d.kind == SKIP else int(t[s.RECORD_ID].iat[row]),
        row,
        None if here is None else here[1],
        () if here is None else differs(codes, row, here[1]),
        d.cost,
        tuple(sorted(mates)),
        d.shown,
    )


def cycle_causes(
    records: Records, comp: list[int], mates_of: dict[int, list[int]], explains: Callable[[RecordEdit], bool]
) -> dict[int, RecordEdit] | None:
    """The members of cycle ``comp`` whose records explain it: those that depart from their
    program by an edit that ``explains`` a wait of the cycle, where some member does not
    depart (it is in step: blocked where they left it); where every member departs, the
    strictly cheapest. None where the records do not decide."""
    codes, points = record_codes(records), call_points(records)
    edits: dict[int, RecordEdit] = {}
    undecided: set[int] = set()
    for r in comp:
        found = record_departure(records, codes, r, mates_of.get(r, []), points)
        if isinstance(found, RecordEdit):
            edits[r] = found
        elif found is False:
            undecided.add(r)
    alike = Counter(_how(records, e) for e in edits.values())
    named = {
        r: e
        for r, e in edits.items()
        if alike[_how(records, e)] == 1 and _stands(r, e, edits, undecided, mates_of) and explains(e)
    }
    if not named or (len(comp) > 1 and (len(named) == len(comp) or len(named) + len(undecided) == len(comp))):
        return None
    return named


def _how(records: Records, e: RecordEdit) -> tuple[int, str, int]:
    """A departure as (record, edit, the call the rank issued there): ranks that depart alike
    run another program than the ranks they were measured against (another pipeline stage
    the dumps did not tell apart), not one fault each."""
    return e.record_id, e.kind, int(records.table["token"].iat[e.row])


def _stands(
    rank: int, edit: RecordEdit, edits: dict[int, RecordEdit], undecided: set[int], mates_of: dict[int, list[int]]
) -> bool:
    """Whether ``rank``'s departure stands: some rank of its program is in step, or, where each
    of them departs too (measured against each other, as a pair is), it is strictly the
    cheapest of them."""
    mates = mates_of.get(rank, [])
    if not mates or not all(m in edits or m in undecided for m in mates):
        return True
    return all(m in edits and edit.cost < edits[m].cost for m in mates)
