"""Program order across process groups: which collective a job issues before which.

Each rank's ``record_id`` orders its own entries across all of its groups. Ranks run
the same program, so when most ranks that issued both (family A, seq i) and
(family B, seq j) issued A first, A comes first in the program. That consensus tells a
rank that skipped a collective (it issued something that comes after the one it never
issued) from a rank that is merely blocked, and breaks wait-for cycles.
"""

from __future__ import annotations

import bisect

import numpy as np
import pandas as pd

from .. import schema as s
from .cells import take_ints

_NOT_ISSUED = np.iinfo(np.int64).min

Ranks = set[int] | frozenset[int]

Token = tuple[str, int]
"""(program family, collective seq): the same program point in every group of the family
(sibling groups whose history matches, see :mod:`.families`)."""


def _code_type(n: int) -> type[np.signedinteger]:
    """The narrowest signed type for codes 0..n-1 (and -1, an unknown code)."""
    return np.int16 if n <= np.iinfo(np.int16).max else np.int32


def _as_int(column: pd.Series) -> np.ndarray:
    """A column of plain integers as it is (int32 stays int32), else as int64."""
    values = column.to_numpy()
    return values if values.dtype.kind == "i" else column.to_numpy(dtype=np.int64)


def _bounds(ordered: np.ndarray, value: int) -> np.ndarray:
    """Where ``value``'s run starts and ends in the ascending ``ordered``. The values looked
    for take its type: searching an int32 array for Python ints converts the whole array
    to int64 at every call (24 ms at 16,384 ranks, once per rank asked about)."""
    return np.searchsorted(ordered, np.array([value, value + 1], dtype=ordered.dtype))


class ProgramOrder:
    """Lookups over the collective cells of one analysis, computed per token on demand."""

    def __init__(self, cells: pd.DataFrame, entries: pd.DataFrame, family_of: dict[str, str]) -> None:
        desc_of = family_of
        self._desc_of = desc_of
        keys = cells[s.PG_KEY].astype("category")
        desc_per_key = np.array([desc_of.get(str(k), str(k)) for k in keys.cat.categories] + [""], dtype=object)
        desc_names, desc_codes = np.unique(desc_per_key, return_inverse=True)
        self._desc_index = {str(d): i for i, d in enumerate(desc_names)}
        # per cell, in the narrowest width that holds them (tens of millions of cells at
        # scale: four 8-byte arrays were 0.25 GB at 4,096 ranks)
        self._desc = desc_codes.astype(_code_type(len(desc_names)))[keys.cat.codes.to_numpy()]
        self._seq = _as_int(cells[s.SEQ])
        self._rank = _as_int(cells[s.RANK])
        self._rank_sorted = bool(np.all(self._rank[1:] >= self._rank[:-1]))
        self._rid = take_ints(entries[s.RECORD_ID], cells["row"].to_numpy(), -1)
        self._tokens: dict[Token, dict[int, int]] = {}
        self._issuers: dict[Token, frozenset[int]] = {}
        self._arrays: dict[Token, np.ndarray] = {}
        self._world = int(self._rank.max()) + 1 if len(self._rank) else 0
        self._ranks: dict[int, list[tuple[int, Token]]] = {}
        self._sorted: dict[int, np.ndarray] = {}
        self._family_records: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        """family -> its cells' ranks and record ids, by rank, then record id"""
        self._desc_names = [str(d) for d in desc_names]

    def _records(self, token: Token) -> dict[int, int]:
        """rank -> record_id of its entry at ``token``."""
        if token not in self._tokens:
            code = self._desc_index.get(token[0], -1)
            hit = np.flatnonzero((self._desc == code) & (self._seq == token[1]))
            self._tokens[token] = dict(zip(self._rank[hit].tolist(), self._rid[hit].tolist()))
        return self._tokens[token]

    def _rows_of(self, rank: int) -> np.ndarray:
        """The cells of ``rank``: a slice where cells come rank by rank (as loaded), else a scan."""
        if self._rank_sorted:
            return np.arange(*_bounds(self._rank, rank))
        return np.flatnonzero(self._rank == rank)

    def _in_order(self, rank: int) -> np.ndarray:
        """The cells of ``rank`` in its record order."""
        if rank not in self._sorted:
            hit = self._rows_of(rank)
            self._sorted[rank] = hit[np.lexsort((self._seq[hit], self._desc[hit], self._rid[hit]))]
        return self._sorted[rank]

    def _tokens_at(self, cells: np.ndarray) -> list[Token]:
        return list(zip([self._desc_names[d] for d in self._desc[cells].tolist()], self._seq[cells].tolist()))

    def _history(self, rank: int) -> list[tuple[int, Token]]:
        if rank not in self._ranks:
            cells = self._in_order(rank)
            self._ranks[rank] = list(zip(self._rid[cells].tolist(), self._tokens_at(cells)))
        return self._ranks[rank]

    def token(self, pg_key: str, seq: int) -> Token:
        return (self._desc_of.get(pg_key, pg_key), seq)

    def issuers(self, token: Token) -> frozenset[int]:
        if token not in self._issuers:
            self._issuers[token] = frozenset(self._records(token))
        return self._issuers[token]

    def before(self, first: Token, second: Token, leave_out: Ranks = frozenset(), only: Ranks | None = None) -> int:
        """+1 if most ranks that issued both issued ``first`` earlier, -1 if later, 0 if
        unknown; the ranks ``leave_out`` do not vote, nor, where ``only`` is given, any other."""
        a, b = self._record_array(first), self._record_array(second)
        both = (a != _NOT_ISSUED) & (b != _NOT_ISSUED)
        if leave_out:
            both &= ~self._rank_mask(leave_out)
        if only is not None:
            both &= self._rank_mask(only)
        votes = int(np.count_nonzero(a[both] < b[both])) * 2 - int(np.count_nonzero(both))
        return (votes > 0) - (votes < 0)

    def _rank_mask(self, ranks: Ranks) -> np.ndarray:
        """True at each of ``ranks`` (those below the world size), by rank."""
        mask = np.zeros(self._world, dtype=bool)
        at = np.fromiter(ranks, dtype=np.int64, count=len(ranks))
        mask[at[(at >= 0) & (at < self._world)]] = True
        return mask

    def _record_array(self, token: Token) -> np.ndarray:
        """record_id by rank (_NOT_ISSUED where none), for array-wide votes; the newest few are kept."""
        if token not in self._arrays:
            if len(self._arrays) >= 256:
                self._arrays.pop(next(iter(self._arrays)))
            out = np.full(self._world, _NOT_ISSUED, dtype=np.int64)
            records = self._records(token)
            out[list(records)] = list(records.values())
            self._arrays[token] = out
        return self._arrays[token]

    def history(self, rank: int) -> list[Token]:
        """The rank's collectives in its record order, oldest first."""
        return [t for _, t in self._history(rank)]

    def recent(self, rank: int, n: int = 8) -> list[Token]:
        """The rank's newest collectives, newest first (the whole history is not built for it)."""
        return self._tokens_at(self._in_order(rank)[-n:][::-1])

    def passed_without(self, rank: int, pending: Token, peers: list[int]) -> Token | None:
        """A collective ``rank`` issued after ``pending`` that every one of ``peers`` issued
        without ever issuing ``pending``: they went past the point where it stands."""
        issued = self._records(pending)
        if rank not in issued or not peers or any(p in issued for p in peers):
            return None
        for rec, token in self._history(rank):
            if rec > issued[rank] and set(peers) <= self.issuers(token):
                return token
        return None

    def count_after(self, rank: int, token: Token, family: str) -> int:
        """How many collectives of ``family`` ``rank`` issued after ``token`` (0 if it never issued it)."""
        at = self._records(token).get(rank)
        if at is None:
            return 0
        if family not in self._family_records:  # every rank's, at once: ranks are asked about by the hundred
            hit = np.flatnonzero(self._desc == self._desc_index.get(family, -1))
            hit = hit[np.lexsort((self._rid[hit], self._rank[hit]))]
            self._family_records[family] = (self._rank[hit], self._rid[hit])
        ranks, rids = self._family_records[family]
        start, end = _bounds(ranks, rank)
        return int(end - start - np.searchsorted(rids[start:end], rids.dtype.type(at), side="right"))

    def first_after(self, rank: int, record_id: int) -> tuple[int, Token] | None:
        """The first collective ``rank`` issued after its record ``record_id``, with its record id."""
        history = self._history(rank)
        i = bisect.bisect_right(history, record_id, key=lambda h: h[0])
        return history[i] if i < len(history) else None

    def issued_after(self, rank: int, token: Token) -> list[Token]:
        """What ``rank`` issued after ``token``, oldest first (nothing if it never issued it)."""
        at = self._records(token).get(rank)
        return [] if at is None else [t for rec, t in self._history(rank) if rec > at]

    def skipped_to(
        self, rank: int, missing: Token, waiters: Ranks = frozenset(), voters: Ranks | None = None
    ) -> Token | None:
        """A collective ``rank`` issued that the program runs after ``missing``, if any; only
        ``voters`` (the ranks of its program, where given) say what the program runs.

        ``waiters`` are the ranks blocked at ``missing``: what they issued before it comes
        before it in their program, so it cannot show that ``rank`` went past ``missing`` (a
        rank that completed the same collectives as everyone else has skipped nothing). What
        they issued after it (queued behind it) can, where other ranks too issued it after
        ``missing`` (a collective only the waiters issued is theirs, not the program's).
        """
        at = self._records(missing)
        for token in self.recent(rank):
            if token == missing or self.before(missing, token, only=voters) <= 0:
                continue
            theirs = self._records(token)
            if any(w in theirs and (w not in at or theirs[w] < at[w]) for w in waiters):
                continue
            if any(w in theirs for w in waiters) and self.before(missing, token, waiters, voters) <= 0:
                continue
            return token
        return None

    def is_extra(self, rank: int, pending: Token, peers: list[int]) -> bool:
        """``pending`` exists on no other rank, and its group peers have all moved on past it:
        past its group's previous seq, or, for a group's first collective, past the one the
        rank issued just before it."""
        if not peers or self.issuers(pending) != {rank}:
            return False
        desc, seq = pending
        anchor = self._anchor(rank, pending) if seq <= 1 else (desc, seq - 1)
        previous = self._records(anchor)
        for p in peers:
            if p in previous:
                if not any(rec > previous[p] for rec, _ in self._history(p)):
                    return False
            elif not any(fam == anchor[0] and q > anchor[1] for _, (fam, q) in self._history(p)):
                return False  # no record of it, nor of a later seq of its family (a wrapped buffer's)
        return True

    def _anchor(self, rank: int, pending: Token) -> Token:
        """The collective ``rank`` issued just before ``pending`` (itself if none): where a
        group's first collective stands in the program, there being no earlier seq of it."""
        history = self._history(rank)
        at = next((i for i, (_, t) in enumerate(history) if t == pending), 0)
        return history[at - 1][1] if at > 0 else pending

    def reached_early(self, rank: int, pending: Token, mates: dict[int, tuple[Token, int]]) -> bool:
        """``rank`` issued ``pending`` at an earlier point of its program than its step-mates did.

        ``mates``: step-mate -> (the first collective of their shared step group that
        ``rank`` never issued, how many of that group's collectives the mate issued beyond
        ``rank``). Mates that each issued two or more of them, that one first, before their
        own ``pending``, ran them before ``pending`` in the program ``rank`` runs too: ``rank``
        got to ``pending`` with one collective more of its group than the mate had there (an
        added one), or had skipped all of them; one added collective is the simpler account.
        """
        issued = self._records(pending)
        if rank not in issued:
            return False

        def early(mate: int, first_missed: Token, beyond: int) -> bool:
            rec = self._records(first_missed).get(mate)
            return beyond >= 2 and mate in issued and rec is not None and rec < issued[mate]

        return bool(mates) and all(early(m, t, n) for m, (t, n) in mates.items())
