"""Program order across process groups: which collective a job issues before which.

Each rank's ``record_id`` orders its own entries across all of its groups: what a rank
issued after a collective, who issued a collective, whether a lone collective's peers
moved on past it. Used by the lone-collective and left-behind passes that follow the
wait-for cycles, which are to be replaced by the model and deleted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from .cells import take_ints

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

    def issued_after(self, rank: int, token: Token) -> list[Token]:
        """What ``rank`` issued after ``token``, oldest first (nothing if it never issued it)."""
        at = self._records(token).get(rank)
        return [] if at is None else [t for rec, t in self._history(rank) if rec > at]

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
