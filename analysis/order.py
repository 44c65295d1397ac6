"""Program order across process groups: which collective a job issues before which.

Each rank's ``record_id`` orders its own entries across all of its groups. Ranks run
the same program, so when most ranks that issued both (desc A, seq i) and
(desc B, seq j) issued A first, A comes first in the program. That consensus tells a
rank that skipped a collective (it issued something that comes after the one it never
issued) from a rank that is merely blocked, and breaks wait-for cycles.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from . import schema as s

Token = tuple[str, int]
"""(group description, collective seq): the same program point in every sibling group."""


class ProgramOrder:
    """Lookups over the collective cells of one analysis."""

    def __init__(self, cells: pd.DataFrame, entries: pd.DataFrame, desc_of: dict[str, str]) -> None:
        self._cells = cells
        self._desc_of = desc_of
        self._record = entries[s.RECORD_ID].to_numpy(dtype=np.int64, na_value=-1)
        self._by_token: dict[Token, dict[int, int]] | None = None
        self._by_rank: dict[int, list[tuple[int, Token]]] | None = None

    def _index(self) -> None:
        if self._by_token is not None:
            return
        c = self._cells
        desc = c[s.PG_KEY].astype(str).map(self._desc_of).to_numpy()
        rid = self._record[c["row"].to_numpy()]
        by_token: dict[Token, dict[int, int]] = defaultdict(dict)
        by_rank: dict[int, list[tuple[int, Token]]] = defaultdict(list)
        for d, q, r, rec in zip(desc, c[s.SEQ].to_numpy(), c[s.RANK].to_numpy(), rid):
            token = (str(d), int(q))
            by_token[token][int(r)] = int(rec)
            by_rank[int(r)].append((int(rec), token))
        for items in by_rank.values():
            items.sort()
        self._by_token, self._by_rank = by_token, by_rank

    def token(self, pg_key: str, seq: int) -> Token:
        return (self._desc_of.get(pg_key, pg_key), seq)

    def issuers(self, token: Token) -> set[int]:
        self._index()
        return set(self._by_token.get(token, {}))

    def before(self, first: Token, second: Token) -> int:
        """+1 if most ranks that issued both issued ``first`` earlier, -1 if later, 0 if unknown."""
        self._index()
        a, b = self._by_token.get(first, {}), self._by_token.get(second, {})
        votes = sum(1 if a[r] < b[r] else -1 for r in a.keys() & b.keys())
        return (votes > 0) - (votes < 0)

    def recent(self, rank: int, n: int = 8) -> list[Token]:
        """The rank's newest collectives, newest first."""
        self._index()
        return [t for _, t in reversed(self._by_rank.get(rank, [])[-n:])]

    def skipped_to(self, rank: int, missing: Token) -> Token | None:
        """A collective ``rank`` issued that the program runs after ``missing``, if any."""
        for token in self.recent(rank):
            if token != missing and self.before(missing, token) > 0:
                return token
        return None

    def is_extra(self, rank: int, pending: Token, peers: list[int]) -> bool:
        """``pending`` exists on no other rank, and its group peers have all moved on past it."""
        self._index()
        if self.issuers(pending) != {rank}:
            return False
        desc, seq = pending
        previous = self._by_token.get((desc, seq - 1), {})
        for p in peers:
            if p not in previous:
                return False
            later = [rec for rec, _ in self._by_rank.get(p, []) if rec > previous[p]]
            if not later:
                return False
        return bool(peers)
