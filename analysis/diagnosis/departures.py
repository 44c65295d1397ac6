"""The class of each departure from the program, from the edit the alignment needs.

- a substitution of another op, a skip or an extra call: the rank is at another point of
  the program, a desync (the attribute that shows it named: the op, else the call site);
- a substitution of sizes or dtypes, whatever the call site: one wrong tensor, the rank at
  the right point, a size or dtype mismatch (sizes first: a wrong dtype of another size is
  a wrong tensor of another size);
- a substitution of the call site alone: another line of the program, a desync;
- a substitution by a call the program issues at another point: a desync.

Ranks that depart at the same (group, seq) in the same way are one mismatch; a tie of the
program at a group's position is a mismatch that names no side (``expected`` None).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from .. import schema as s
from ..types import FailureClass
from .alignment import Alignment
from .edit_distance import EXTRA, SKIP
from .edits import Edit
from .mismatch import Mismatch, sizes_comparable

SHIFT = {SKIP: 1, EXTRA: -1}
"""+1: the rank issued here what the program issues at the next seq; -1: the next seq
(said only where a later call of the rank shows it)."""

ORDER = (s.OP, s.CALL_SITE, s.INPUT_SIZES, s.INPUT_DTYPES)
"""The attribute named for a shift: the first of these that differs."""


def classify(edit: Edit) -> tuple[FailureClass, str]:
    """The failure class of one edit, and the attribute that shows it."""
    d = edit.differs
    if edit.kind in SHIFT or s.OP in d or edit.elsewhere:
        return FailureClass.DESYNC, next((a for a in ORDER if a in d), s.CALL_SITE)
    if s.INPUT_SIZES in d:
        return FailureClass.SIZE_MISMATCH, s.INPUT_SIZES
    if s.INPUT_DTYPES in d:
        return FailureClass.DTYPE_MISMATCH, s.INPUT_DTYPES
    return FailureClass.DESYNC, s.CALL_SITE


def departures(alignment: Alignment, cells: pd.DataFrame) -> list[Mismatch]:
    """One mismatch per (group, seq, class) where ranks depart, and one per tie."""
    grouped: dict[tuple[str, int, FailureClass, str, int], list[Edit]] = defaultdict(list)
    for e in alignment.edits:
        klass, attribute = classify(e)
        grouped[(e.pg_key, e.seq, klass, attribute, SHIFT.get(e.kind, 0) if e.shown else 0)].append(e)
    found = [_mismatch(key, edits, cells) for key, edits in grouped.items()]
    found += [_tie(key, seq, cells) for key, seq in alignment.ties]
    found = [m for m in found if m is not None]
    found.sort(key=lambda m: (m.seq, m.pg_key))
    return found


def _value(cells: pd.DataFrame, row: int, attribute: str) -> str:
    return str(cells[attribute].iat[row])


def _mismatch(key: tuple[str, int, FailureClass, str, int], edits: list[Edit], cells: pd.DataFrame) -> Mismatch:
    pg_key, seq, klass, attribute, shift = key
    expected_row = next((e.expected_row for e in edits if e.expected_row is not None), None)
    expected = None if expected_row is None else _value(cells, expected_row, attribute)
    found = {e.rank: _value(cells, e.row, attribute) for e in edits}
    return Mismatch(pg_key, seq, attribute, klass, tuple(sorted(found)), expected, found, edits[0].decided_by, shift)


def _tie(pg_key: str, seq: int, cells: pd.DataFrame) -> Mismatch | None:
    """Every rank of a tied position, the class read from what the two sides differ in."""
    here = np.flatnonzero((cells[s.PG_KEY] == pg_key).to_numpy() & (cells[s.SEQ] == seq).to_numpy())
    if len(here) < 2:
        return None
    for attribute, klass in (
        (s.OP, FailureClass.DESYNC),
        (s.INPUT_SIZES, FailureClass.SIZE_MISMATCH),
        (s.INPUT_DTYPES, FailureClass.DTYPE_MISMATCH),
        (s.CALL_SITE, FailureClass.DESYNC),
    ):
        if attribute == s.INPUT_SIZES and not all(sizes_comparable(_value(cells, r, s.OP)) for r in here):
            continue  # an exchange's splits differ by rank
        values = {int(cells[s.RANK].iat[r]): _value(cells, r, attribute) for r in here}
        if len(set(values.values())) > 1:
            return Mismatch(pg_key, seq, attribute, klass, tuple(sorted(values)), None, values, "tie")
    return None
