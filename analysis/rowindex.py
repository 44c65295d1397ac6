"""One rank's rows of a big table without comparing every row.

Each file's entries are contiguous in the entries table, and so are a rank's cells (but
for folded coalesced cells at the end), so a rank's rows are a few blocks: found once
per table, they answer every later click in microseconds instead of a scan of tens of
millions of rows.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


class RankRows:
    """Row positions by rank, from the blocks of equal ranks in a rank column."""

    def __init__(self, ranks: np.ndarray) -> None:
        change = np.flatnonzero(ranks[1:] != ranks[:-1]) + 1
        starts = np.concatenate(([0], change)) if len(ranks) else change
        ends = np.concatenate((change, [len(ranks)])) if len(ranks) else change
        self._blocks: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for rank, start, end in zip(ranks[starts].tolist(), starts.tolist(), ends.tolist()):
            self._blocks[rank].append((start, end))

    def of(self, rank: int) -> np.ndarray:
        """Positions (for ``iloc``) of ``rank``'s rows, in table order."""
        blocks = self._blocks.get(rank, [])
        if not blocks:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(start, end) for start, end in blocks])
