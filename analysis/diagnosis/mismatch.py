"""A mismatch: ranks whose call at (group, seq) differs from what their program issues there.

Found by the model (``model_mismatches``: roles -> program -> alignment -> departures);
this module holds what a mismatch is and what the evidence says of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..types import FailureClass

#: Ops whose sizes legitimately differ between ranks (uneven splits, root vs others).
_SIZE_VARIES = ("all_to_all", "alltoall", "gather", "scatter", "send", "recv", "coalesced")
_SIZE_SAME = ("all_gather", "allgather", "reduce_scatter", "_reduce_scatter_base", "_all_gather_base")


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Ranks whose entry at (group, seq) differs from what their peers issued."""

    pg_key: str
    seq: int
    attribute: str
    failure_class: FailureClass
    odd_ranks: tuple[int, ...]
    expected: str | None
    """What the odd ranks should have issued; None when nothing decides (every rank is odd)."""
    found: dict[int, str]
    decided_by: str
    """What chose the program's call: ``program`` (the other ranks at this point of the
    program), ``history`` (the same point of other steps), ``usual`` (the call the role
    issues elsewhere), ``shift`` / ``off_by_one`` (the other rank of a pair),
    ``pair_counts`` (of a pair equally far from each other, the rank off the count a group
    of their program stands at), ``counts`` (level peers' counts, for a collective stuck on
    every member), ``tie`` (nothing)."""
    shift: int = 0
    """+1: the odd ranks issued here what the others issue at the next seq (they skipped one);
    -1: they issue next what the others issued here (they added one); 0: neither."""

    @property
    def decisive(self) -> bool:
        return self.expected is not None


def sizes_comparable(op: str) -> bool:
    """Whether every rank of a collective passes the same input sizes."""
    parts = op.split("+")
    return all(any(x in p for x in _SIZE_SAME) or not any(x in p for x in _SIZE_VARIES) for p in parts)


_WHOLE = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)


def attributes_that_differ(cells: pd.DataFrame, m: Mismatch) -> dict[str, dict[str, object]]:
    """Every attribute (op, call site, sizes, dtypes) on which the odd ranks of ``m`` differ
    from the others at its (group, seq): ``{attribute: {"odd": {rank: value}, "others": value}}``
    (the others' most common value), whatever attribute decided the class. Sizes only where
    every rank passes the same sizes to that op."""
    here = cells.loc[(cells[s.PG_KEY] == m.pg_key).to_numpy() & (cells[s.SEQ] == m.seq).to_numpy()]
    odd = here[s.RANK].isin(m.odd_ranks).to_numpy()
    if not odd.any() or odd.all():
        return {}
    ops = here[s.OP].astype(str)
    out: dict[str, dict[str, object]] = {}
    for attribute in (s.OP, s.CALL_SITE, s.INPUT_SIZES, s.INPUT_DTYPES):
        if attribute == s.INPUT_SIZES and not all(sizes_comparable(op) for op in ops.unique()):
            continue
        values = here[attribute].astype(str).where(here[attribute].notna(), None)
        others = values[~odd].dropna()
        if others.empty:
            continue
        usual = others.mode().iloc[0]
        theirs = {int(r): v for r, v in zip(here[s.RANK][odd], values[odd]) if v is not None and v != usual}
        if theirs:
            out[attribute] = {"odd": theirs, "others": usual}
    return out
