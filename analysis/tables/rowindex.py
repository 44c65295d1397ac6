"""One rank's rows of a big table without comparing every row.

Each file's entries are contiguous in the entries table, and so are a rank's cells (but
for folded coalesced cells at the end), so a rank's rows are a few blocks: found once
per table, they answer every later click in microseconds instead of a scan of tens of
millions of rows.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from .. import schema as s


def rank_blocks(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of equal values in a rank column: (rank, start, end) of each, as arrays."""
    change = np.flatnonzero(ranks[1:] != ranks[:-1]) + 1
    starts = np.concatenate(([0], change)) if len(ranks) else change
    ends = np.concatenate((change, [len(ranks)])) if len(ranks) else change
    return ranks[starts], starts, ends


class RankRows:
    """Row positions by rank, from the blocks of equal ranks in a rank column."""

    def __init__(self, ranks: np.ndarray) -> None:
        self._blocks: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for rank, start, end in zip(*(a.tolist() for a in rank_blocks(ranks))):
            self._blocks[rank].append((start, end))

    def of(self, rank: int) -> np.ndarray:
        """Positions (for ``iloc``) of ``rank``'s rows, in table order."""
        blocks = self._blocks.get(rank, [])
        if not blocks:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(start, end) for start, end in blocks])


def entry_positions(files: pd.DataFrame, rows: np.ndarray | None = None) -> np.ndarray:
    """Where each entry row (every row where ``rows`` is None) stood among its file's
    entries: the entries table holds each file's entries in turn, in the order of the files
    table, ``NUM_ENTRIES`` of them. Not kept as a column: two bytes a row (four while
    loading) for the one view that reads an entry back from its dump, and the export."""
    counts = files[s.NUM_ENTRIES].to_numpy(dtype=np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    if rows is None:
        return np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) - np.repeat(starts, counts)
    rows = np.asarray(rows, dtype=np.int64)
    return rows - starts[np.searchsorted(ends, rows, side="right")]
