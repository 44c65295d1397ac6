"""A pair of ranks that both depart: which of the two the other fits.

In a group of two ranks with no sibling group and no history to outvote either side, the
consensus of each position on its own may take one rank's call here and the other's
further on (when one rank is a call off the other), and then both seem to depart. Each
rank's history from the first departure on is then tried as the program and the other
rank aligned to it (``edit_distance``); the cheaper alignment says which rank departed and
how: a rank without a call the program issues elsewhere skipped it (the other adding it
would cost more), a rank with a call of its own added it. Where both cost alike, the
count of calls each issued in the group says it where one of the two stands where another
group of their program stands and the other does not (``pair_counts``): a skip leaves a
rank one call short of where the program stops, an extra one call over, so the rank off
the other's count by its own edit departed. Otherwise the dumps do not tell the two apart:
a tie. The same counts bring a pair to this test where one rank departs from a position's
consensus but the two are off each other's count that way (the hung step's few witnesses
may have put the consensus on the wrong side).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import schema as s
from ..model import costs
from ..model.progress import Progress
from .edit_distance import EXTRA, SKIP, SUBSTITUTE
from .edits import Edit

Fit = Callable[[list[int], list[int]], tuple[Edit | None, float]]
"""(the rows of one rank, the rows of the other as the program) -> the first edit of the
cheapest alignment of the one to the other, and its cost."""

PairCounts = Callable[[str, list[int]], dict[int, int] | None]
"""(group, its two ranks) -> each rank's count of calls in the group less that of the one
of the two whose count another group of their program holds too (0 for that one); None
where the counts do not single one out (both or neither held elsewhere, or unknown)."""

COUNT_CHANGE = {SKIP: -1, EXTRA: 1}
"""What an edit does to a rank's count of calls in the group."""


def settle_pairs(
    edits: list[Edit],
    ties: list[tuple[str, int]],
    even: set[tuple[str, int]],
    cells: pd.DataFrame,
    fit: Fit,
    pair_counts: PairCounts,
) -> tuple[list[Edit], list[tuple[str, int]]]:
    """``edits`` and ``ties`` with each pair's replaced by the two ranks' alignment to each
    other, where both its ranks depart, or its first departure is at a position the ranks
    split evenly on (``even``: only the weaker weights of ``call_support`` chose), or its
    first position is tied, or its two ranks are off each other's count (``_apart``). Groups
    that are not pairs there keep theirs; so does a pair the alignment leaves even where only
    one rank departed (the weaker weights, or the position's consensus, stand)."""
    ranks: dict[str, set[int]] = defaultdict(set)
    first: dict[str, int] = {}
    for e in edits:
        ranks[e.pg_key].add(e.rank)
        first[e.pg_key] = min(first.get(e.pg_key, e.seq), e.seq)
    tied = dict(ties)
    histories_at = functools.cache(lambda key, q0: _histories(key, q0, cells))  # each group's once
    settle = {
        k: q
        for k, q in first.items()
        if len(ranks[k]) == 2 or (k, q) in even or _apart(k, histories_at(k, q), pair_counts)
    }
    settle |= tied
    kept = [e for e in edits if e.pg_key not in settle]
    left = [t for t in ties if t[0] not in settle]
    for key, q0 in settle.items():
        q0 = min(q0, first.get(key, q0), tied.get(key, q0))
        histories = histories_at(key, q0)
        if histories is None:  # not a pair: what the program said stands
            kept += [e for e in edits if e.pg_key == key]
            left += [t for t in ties if t[0] == key]
            continue
        decided = _decide(histories, fit, pair_counts(key, list(histories)))
        if decided is not None:
            kept.append(decided)
        elif key in tied or len(ranks[key]) == 2:
            left.append((key, q0))
        else:  # the weaker weights chose, and the pair's alignment does not say otherwise
            kept += [e for e in edits if e.pg_key == key]
    return kept, left


def _apart(key: str, histories: dict[int, list[int]] | None, pair_counts: PairCounts) -> bool:
    """Whether the group is a pair (``histories``: its two ranks' rows) one of whose ranks is
    off the other's count, the other where another group of their program stands: one of the
    two skipped or added a call, which a position's consensus alone may put on the wrong side."""
    return histories is not None and pair_counts(key, list(histories)) is not None


def _histories(key: str, q0: int, cells: pd.DataFrame) -> dict[int, list[int]] | None:
    """rank -> its rows in group ``key`` from ``q0`` on, in seq order; None unless the group
    shows exactly two ranks there."""
    rows = np.flatnonzero((cells[s.PG_KEY] == key).to_numpy() & (cells[s.SEQ] >= q0).to_numpy())
    rank = cells[s.RANK].to_numpy()[rows]
    if len(set(rank.tolist())) != 2:
        return None
    rows = rows[np.lexsort((cells[s.SEQ].to_numpy()[rows], rank))]
    out: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        out[int(cells[s.RANK].iat[r])].append(int(r))
    return {r: v[: costs.HORIZON] for r, v in out.items()}


def _decide(histories: dict[int, list[int]], fit: Fit, offs: dict[int, int] | None) -> Edit | None:
    """The edit of the rank that departed, or None where neither fits the other better."""
    (_, a), (_, b) = histories.items()
    b_to_a, a_to_b = fit(b, a), fit(a, b)
    if b_to_a[1] == a_to_b[1]:
        edit = _by_count([b_to_a[0], a_to_b[0]], offs)
        return None if edit is None else replace(edit, decided_by="pair_counts")
    edit = b_to_a[0] if b_to_a[1] < a_to_b[1] else a_to_b[0]
    return None if edit is None else replace(edit, decided_by="shift" if edit.kind == SUBSTITUTE else "off_by_one")


def _by_count(edits: list[Edit | None], offs: dict[int, int] | None) -> Edit | None:
    """Of two equally cheap edits, one for each rank of a pair, the one whose rank is off the
    other's count by what the edit does to it (see ``PairCounts``)."""
    if offs is None:
        return None
    fits = [e for e in edits if e is not None and offs.get(e.rank, 0) == COUNT_CHANGE.get(e.kind, 0) != 0]
    return fits[0] if len(fits) == 1 else None


@dataclass(frozen=True, slots=True)
class Counts:
    """How many calls each rank issued in each group, as the dumps keep them; read only where a
    pair is in doubt."""

    progress: Mapping[tuple[str, int], Progress]
    """(group, rank) -> its progress there (``enqueued``: the newest seq it issued)."""
    family_of: Mapping[str, str]
    """group -> its family (``model/families``)."""
    mates: Callable[[], Mapping[int, frozenset[int]]]
    """rank -> the ranks that run its program (``model.counts.count_mates``), when asked."""


def pair_counts(cells: pd.DataFrame, role_of_key: dict[str, str], counts: Counts | None) -> PairCounts:
    """See ``PairCounts``: the ranks' newest seqs in the group, against those other
    groups of the same family (where ``counts`` gives them, of the ranks that run the same
    program: a pipeline's stages issue different numbers) hold. Without ``counts``, the
    newest seqs of the cells, read only when first asked (a pair is rarely in doubt)."""
    newest: dict[tuple[str, int], int] = {}  # these three filled when first asked
    mates: dict[int, frozenset[int]] = {}
    by_family: dict[str, list[tuple[str, int]]] = {}
    family_of = counts.family_of if counts else role_of_key

    def offs(key: str, ranks: list[int]) -> dict[int, int] | None:
        if not newest and counts is not None:
            newest.update(
                {m: p.enqueued for m, p in counts.progress.items() if p.enqueued is not None and p.enqueued >= 0}
            )
            mates.update(counts.mates())
        elif not newest:
            frame = cells[[s.PG_KEY, s.RANK, s.SEQ]]
            maxima = frame.groupby([frame[s.PG_KEY].astype(str), frame[s.RANK].to_numpy()])[s.SEQ].max()
            newest.update({(str(k), int(r)): int(q) for (k, r), q in maxima.items()})
        if not by_family:
            for k, r in newest:
                by_family.setdefault(family_of.get(k, k), []).append((k, r))
        mine = [newest.get((key, r)) for r in ranks]
        if None in mine or len(set(mine)) != len(mine):
            return None
        near = set().union(*(mates.get(r, ()) for r in ranks))
        held = {
            newest[m] for m in by_family.get(family_of.get(key, key), []) if m[0] != key and (not near or m[1] in near)
        }
        standing = [r for r, q in zip(ranks, mine) if q in held]
        if len(standing) != 1:
            return None
        at = newest[(key, standing[0])]
        return {r: q - at for r, q in zip(ranks, mine) if q is not None}

    return offs
