"""Compare what the ranks of a group issued at the same collective sequence number.

At each (group, seq) the ranks should agree on op, input sizes, dtypes and call site.
The odd rank is the one outside the majority. In a two-rank group there is no
majority, so the sibling groups (same description, same seq: the other TP pairs, say)
vote instead.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from . import schema as s

#: Ops whose sizes legitimately differ between ranks (uneven splits, root vs others).
_SIZE_VARIES = ("all_to_all", "alltoall", "gather", "scatter", "send", "recv", "coalesced")
_SIZE_SAME_EXCEPTIONS = ("all_gather", "allgather", "reduce_scatter", "_reduce_scatter_base", "_all_gather_base")

MAX_PER_GROUP = 3

#: Attribute checked -> failure class when the ranks disagree on it, most telling first.
CHECKS: tuple[tuple[str, str], ...] = (
    (s.OP, "desync"),
    (s.INPUT_SIZES, "size_mismatch"),
    (s.INPUT_DTYPES, "dtype_mismatch"),
    (s.CALL_SITE, "desync"),
)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Ranks whose entry at (group, seq) differs from what their peers issued."""

    pg_key: str
    seq: int
    attribute: str
    failure_class: str
    odd_ranks: tuple[int, ...]
    expected: str
    found: dict[int, str]
    decided_by: str
    """``majority`` of the group, or ``siblings`` (same-description groups) on a tie."""


def _sizes_comparable(op: str) -> bool:
    if any(x in op for x in _SIZE_SAME_EXCEPTIONS):
        return True
    return not any(x in op for x in _SIZE_VARIES)


def find_mismatches(cells: pd.DataFrame, desc_of: dict[str, str]) -> list[Mismatch]:
    """``cells``: one row per (pg_key, seq, rank) with op, sizes, dtypes, call site."""
    found: list[Mismatch] = []
    if cells.empty:
        return found
    flagged: set[tuple[str, int, int]] = set()
    for attribute, failure_class in CHECKS:
        col = cells[attribute]
        present = cells.loc[col.notna() & (col.astype(str) != "")]
        if attribute == s.INPUT_SIZES:
            ops = present[s.OP].astype(str)
            present = present.loc[ops.map(_sizes_comparable)]
        if present.empty:
            continue
        codes = present[attribute].astype("category").cat.codes
        spread = codes.groupby([present[s.PG_KEY], present[s.SEQ]], sort=False).nunique()
        divergent = spread[spread > 1].reset_index()
        # After a skipped collective every later seq is misaligned too: the first few
        # divergent seqs of each group tell the story.
        divergent = divergent.sort_values(s.SEQ).groupby(s.PG_KEY, sort=False).head(MAX_PER_GROUP)
        wanted = set(zip(divergent[s.PG_KEY], divergent[s.SEQ]))
        candidate = (
            present.loc[pd.Series(list(zip(present[s.PG_KEY], present[s.SEQ])), index=present.index).isin(wanted)]
            if wanted
            else present.iloc[:0]
        )
        by_cell = candidate.groupby([s.PG_KEY, s.SEQ], sort=False).indices
        for key, seq in zip(divergent[s.PG_KEY], divergent[s.SEQ]):
            rows = candidate.iloc[by_cell[(key, seq)]]
            values = {int(r): str(v) for r, v in zip(rows[s.RANK], rows[attribute])}
            mm = _odd_ones(key, int(seq), attribute, failure_class, values, present, desc_of)
            if mm is None:
                continue
            new = tuple(r for r in mm.odd_ranks if (key, int(seq), r) not in flagged)
            if not new:
                continue  # already explained by a more telling attribute
            flagged.update((key, int(seq), r) for r in mm.odd_ranks)
            found.append(mm)
    found.sort(key=lambda m: (m.seq, m.pg_key))
    return found


def _odd_ones(
    key: str,
    seq: int,
    attribute: str,
    failure_class: str,
    values: dict[int, str],
    present: pd.DataFrame,
    desc_of: dict[str, str],
) -> Mismatch | None:
    counts = Counter(values.values())
    ranked = counts.most_common()
    decided_by = "majority"
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        # A tie: let the sibling groups (same description, same seq) vote.
        desc = desc_of.get(key, "")
        siblings = [k for k, d in desc_of.items() if d == desc and k != key and desc]
        votes: Counter = Counter()
        if siblings:
            sib = present.loc[present[s.PG_KEY].isin(siblings) & (present[s.SEQ] == seq), attribute]
            votes = Counter(str(v) for v in sib)
        tied = [v for v, c in ranked if c == ranked[0][1]]
        best = sorted(tied, key=lambda v: -votes.get(v, 0))
        if len(best) < 2 or votes.get(best[0], 0) == votes.get(best[1], 0):
            expected = None
        else:
            expected = best[0]
            decided_by = "siblings"
    else:
        expected = ranked[0][0]
    if expected is None:
        odd = tuple(sorted(values))
        expected_text = "no majority"
    else:
        odd = tuple(sorted(r for r, v in values.items() if v != expected))
        expected_text = expected
    return Mismatch(key, seq, attribute, failure_class, odd, expected_text, {r: values[r] for r in odd}, decided_by)
