"""Compare what the ranks of a group issued at the same collective sequence number.

At each (group, seq) the ranks should agree on op, input sizes, dtypes and call site.
The odd rank is the one outside the majority. In a two-rank group there is no
majority, so the sibling groups (same description, same seq: the other TP pairs, say)
vote instead.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import COLLECTIVE
from ..model.families import Families
from ..types import FailureClass
from .history import history_shift, history_vote, predecessor_vote, seen_call_vote
from .relatives_vote import relatives_vote
from .shift_vote import shift_vote
from .usual_call import issued_elsewhere, usual_call_vote

#: Ops whose sizes legitimately differ between ranks (uneven splits, root vs others).
_SIZE_VARIES = ("all_to_all", "alltoall", "gather", "scatter", "send", "recv", "coalesced")
_SIZE_SAME = ("all_gather", "allgather", "reduce_scatter", "_reduce_scatter_base", "_all_gather_base")

#: Attribute checked -> failure class when the ranks disagree on it, most telling first.
CHECKS: tuple[tuple[str, FailureClass], ...] = (
    (s.OP, FailureClass.DESYNC),
    (s.CALL_SITE, FailureClass.DESYNC),
    (s.INPUT_SIZES, FailureClass.SIZE_MISMATCH),
    (s.INPUT_DTYPES, FailureClass.DTYPE_MISMATCH),
)
"""A different op or call site puts the rank at another point of the program (a desync,
whatever its sizes); sizes and dtypes are compared as a mismatch of the same call."""

#: After a skipped collective every later seq is misaligned too; the first few tell the story.
MAX_PER_GROUP = 3


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
    """``majority`` of the group, ``siblings`` (its family) or ``history`` (its earlier steps) on a tie."""
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


def _groups_with_two_values(gid: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Groups whose rows hold more than one distinct code (min != max), in O(rows)."""
    low = np.full(n_groups, np.iinfo(np.int64).max)
    high = np.full(n_groups, -1, dtype=np.int64)
    np.minimum.at(low, gid, codes)
    np.maximum.at(high, gid, codes)
    return np.flatnonzero((high >= 0) & (low != high))


def find_mismatches(cells: pd.DataFrame, families: Families) -> list[Mismatch]:
    """``cells``: one row per (pg_key, seq, rank) with op, sizes, dtypes, call site."""
    found: list[Mismatch] = []
    if cells.empty:
        return found
    gid = cells[COLLECTIVE].to_numpy()
    op_ok = cells[s.OP].cat.categories.map(sizes_comparable).to_numpy(dtype=bool)
    op_codes = cells[s.OP].cat.codes.to_numpy()
    flagged: set[tuple[str, int, int]] = set()
    for attribute, failure_class in CHECKS:
        codes = cells[attribute].cat.codes.to_numpy().astype(np.int64)
        valid = codes >= 0
        if attribute == s.INPUT_SIZES:
            valid &= (op_codes >= 0) & op_ok[np.maximum(op_codes, 0)]
        divergent = _groups_with_two_values(gid[valid], codes[valid], int(gid.max()) + 1)
        if not len(divergent):
            continue
        rows = cells.loc[np.isin(gid, divergent) & valid, [s.PG_KEY, s.SEQ, s.RANK, attribute]]
        first = rows.drop_duplicates([s.PG_KEY, s.SEQ]).sort_values(s.SEQ)
        first = first.groupby(s.PG_KEY, sort=False, observed=True).head(MAX_PER_GROUP)
        wanted = set(zip(first[s.PG_KEY].astype(str), first[s.SEQ]))
        by_cell: dict[tuple[str, int], dict[int, str]] = {}
        for key, seq, rank, value in rows.itertuples(index=False):
            if (str(key), seq) in wanted:
                by_cell.setdefault((str(key), int(seq)), {})[int(rank)] = str(value)
        for (key, seq), values in sorted(by_cell.items(), key=lambda kv: kv[0][1]):
            mm = _odd_ones(key, seq, attribute, failure_class, values, cells, families)
            if not any((key, seq, r) not in flagged for r in mm.odd_ranks):
                continue  # already explained by a more telling attribute
            flagged.update((key, seq, r) for r in mm.odd_ranks)
            found.append(mm)
    found = [_at_another_point(_shifted(m, cells, families), cells, families) for m in found]
    found.sort(key=lambda m: (m.seq, m.pg_key))
    return found


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


def _shifted(m: Mismatch, cells: pd.DataFrame, families: Families) -> Mismatch:
    """A size or dtype mismatch whose odd ranks are one collective off the others: a desync.

    A rank that skipped a collective issues at this seq what its peers issue at the next;
    one that added a collective issues at the next seq what its peers issued here. Only
    where the others issue different things at the two seqs does a shift show. A tie that
    nothing else decides is decided so too, when exactly one side is one collective off,
    and the other side's next call is the one sibling groups (same description) issue
    there, where they show it: in a pair, the side read against may be the shifted one.
    """
    if m.failure_class not in (FailureClass.SIZE_MISMATCH, FailureClass.DTYPE_MISMATCH):
        return m
    near = cells.loc[(cells[s.PG_KEY] == m.pg_key).to_numpy() & cells[s.SEQ].between(m.seq, m.seq + 1).to_numpy()]
    entry = {
        (int(r), int(q)): tuple(map(str, v)) for r, q, *v in near[[s.RANK, s.SEQ, *_WHOLE]].itertuples(index=False)
    }
    if m.decisive:
        shift = _shift_of(entry, set(m.odd_ranks), m.seq) or history_shift(cells, m.pg_key, m.seq, set(m.odd_ranks))
        return replace(m, failure_class=FailureClass.DESYNC, shift=shift) if shift else m
    at_seq = {r: v for (r, q), v in entry.items() if q == m.seq}
    sides: dict[tuple[str, ...], set[int]] = {}
    for r, v in at_seq.items():
        sides.setdefault(v, set()).add(r)
    if len(sides) != 2:
        return m
    shifted = {frozenset(side): shift for side in sides.values() if (shift := _shift_of(entry, side, m.seq))}
    if len(shifted) != 1:
        return m
    ((side, shift),) = shifted.items()
    others = set(at_seq) - side
    if shift > 0 and not _siblings_agree(cells, families.same_description(m.pg_key), m.seq + 1, entry, others):
        return m
    odd = tuple(sorted(side))
    expected = next(str(m.found[r]) for r in m.found if r not in side)
    found = {r: m.found[r] for r in odd}
    return replace(
        m,
        failure_class=FailureClass.DESYNC,
        shift=shift,
        odd_ranks=odd,
        expected=expected,
        found=found,
        decided_by="shift",
    )


def _at_another_point(m: Mismatch, cells: pd.DataFrame, families: Families) -> Mismatch:
    """A size or dtype mismatch whose odd ranks issued a whole call the program issues
    elsewhere (see :mod:`.usual_call`) is a desync: they are at another point of the program,
    even where the others' next seq is not there to show the shift."""
    if m.failure_class not in (FailureClass.SIZE_MISMATCH, FailureClass.DTYPE_MISMATCH) or not m.decisive:
        return m
    if not issued_elsewhere(cells, m.pg_key, m.seq, m.odd_ranks, families.same_description(m.pg_key)):
        return m
    return replace(m, failure_class=FailureClass.DESYNC)


def _siblings_agree(
    cells: pd.DataFrame, siblings: list[str], seq: int, entry: dict[tuple[int, int], tuple[str, ...]], ranks: set[int]
) -> bool:
    """Whether ``ranks``' call at ``seq`` is the one the ``siblings`` groups issue there (two or
    more ranks, all alike), or they do not show it."""
    rows = cells.loc[cells[s.PG_KEY].isin(siblings).to_numpy() & (cells[s.SEQ] == seq).to_numpy()]
    theirs = {tuple(map(str, v)) for v in rows[list(_WHOLE)].itertuples(index=False, name=None)}
    if len(rows) < 2 or len(theirs) != 1:
        return True
    return all(entry.get((r, seq)) in theirs for r in ranks)


def _shift_of(entry: dict[tuple[int, int], tuple[str, ...]], odd: set[int], seq: int) -> int:
    """+1 or -1 where the ``odd`` ranks are one collective off the other ranks at ``seq``, else 0."""

    def usual(q: int) -> tuple[str, ...] | None:
        votes = Counter(v for (r, qq), v in entry.items() if qq == q and r not in odd)
        return votes.most_common(1)[0][0] if votes else None

    here, after = usual(seq), usual(seq + 1)
    if here is None or after is None or here == after:
        return 0  # the others issue the same thing twice in a row: a shift would not show
    for shift, mine_at, theirs in ((1, seq, after), (-1, seq + 1, here)):
        mine = [entry.get((r, mine_at)) for r in odd]
        if all(v == theirs for v in mine):
            return shift
    return 0


def _non_empty(tied: list[str]) -> str | None:
    """The one ``tied`` sizes value that moves any elements, where the other moves none: a
    program does not issue a collective to move nothing (an empty tensor is a bug upstream)."""
    counts = [_elements(v) for v in tied]
    if len(tied) != 2 or None in counts or sorted(c > 0 for c in counts) != [False, True]:
        return None
    return tied[counts.index(max(counts))]


def _elements(sizes: str) -> int | None:
    """How many elements the tensors of a sizes value hold (None if it is not a list of shapes)."""
    try:
        shapes = json.loads(sizes)
        if not isinstance(shapes, list) or not shapes or not all(isinstance(x, list) for x in shapes):
            return None
        return sum(math.prod(int(d) for d in shape) for shape in shapes)
    except (ValueError, TypeError, RecursionError):  # not sizes a writer of ours gives: no count
        return None


def _odd_ones(
    key: str,
    seq: int,
    attribute: str,
    failure_class: FailureClass,
    values: dict[int, str],
    cells: pd.DataFrame,
    families: Families,
) -> Mismatch:
    ranked = Counter(values.values()).most_common()
    decided_by = "majority"
    shift = 0
    expected: str | None = ranked[0][0]
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        # A tie: let the sibling groups at the same point of the program vote.
        votes: Counter = Counter()
        voters = families.siblings(key)
        if voters:
            sib = cells.loc[(cells[s.SEQ] == seq) & cells[s.PG_KEY].isin(voters), attribute]
            votes = Counter(str(v) for v in sib)
        tied = sorted((v for v, c in ranked if c == ranked[0][1]), key=lambda v: -votes.get(v, 0))
        relatives = families.same_description(key)
        if votes.get(tied[0], 0) != votes.get(tied[1], 0):
            expected, decided_by = tied[0], "siblings"
        elif not voters and (expected := relatives_vote(cells, key, seq, attribute, tied, relatives)):
            decided_by = "relatives"
        else:  # no sibling at this point of the program decides: the group's own earlier steps may
            expected = history_vote(cells, key, seq, attribute, tied)
            decided_by = "history"
            if expected is None and attribute == s.INPUT_SIZES:  # a call that moves nothing is no call of the program
                expected, decided_by = _non_empty(tied), "non_empty"
            if expected is None and (off := shift_vote(cells, key, seq, attribute, tied)):
                (expected, shift), decided_by = off, "off_by_one"  # one side one collective off the other all along
            if expected is None:  # no earlier step at this point: one side's call never follows this one
                expected, decided_by = predecessor_vote(cells, key, seq, attribute, tied), "predecessor"
            if expected is None:  # only one side's call was ever run
                expected, decided_by = seen_call_vote(cells, key, seq, attribute, tied), "seen"
            if expected is None:  # no history in the dumps: only one side's call is issued elsewhere
                expected, decided_by = usual_call_vote(cells, key, seq, attribute, tied, relatives), "usual"
    if expected is None:
        odd = tuple(sorted(values))
    else:
        odd = tuple(sorted(r for r, v in values.items() if v != expected))
    found = {r: values[r] for r in odd}
    return Mismatch(key, seq, attribute, failure_class, odd, expected, found, decided_by, shift)
