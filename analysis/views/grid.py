"""The rank x sequence view of one process group: the table the heatmap draws.

Cell codes double as severity, so aggregating blocks by ``max`` keeps the worst state
visible (a stuck cell never disappears when a large group is drawn at low resolution).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..diagnosis.analysis import Analysis
from ..diagnosis.compare import Comparison

OUTSIDE, COMPLETED, STARTED, SCHEDULED, NOT_ISSUED, MISMATCHED = range(6)
STATE_NAMES = ("outside buffer", "completed", "started", "scheduled", "not issued", "mismatched")


def shown_state(state: object, retired: object) -> str:
    """An entry's state as the heatmap shows it: finished work is 'completed' even where the
    dump left it 'scheduled' (gloo marks finished work retired, not completed)."""
    done = str(state) == "completed" or (retired is not None and not pd.isna(retired) and bool(retired))
    return "completed" if done else str(state)


@dataclass(frozen=True, slots=True)
class Grid:
    """``codes[i, j]`` is the state of rank ``ranks[i]`` at sequence ``seqs[j]``."""

    pg_key: str
    ranks: np.ndarray
    seqs: np.ndarray
    codes: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """Long form (rank, seq, state) for export and tests."""
        rr, cc = np.divmod(np.arange(self.codes.size), self.codes.shape[1] or 1)
        return pd.DataFrame(
            {
                s.RANK: self.ranks[rr] if self.codes.size else [],
                s.SEQ: self.seqs[cc] if self.codes.size else [],
                "state": pd.Categorical.from_codes(self.codes.ravel(), STATE_NAMES),
            }
        )


def group_grid(a: Analysis, pg_key: str, max_seqs: int | None = None) -> Grid:
    """Build the grid of ``pg_key``; ``max_seqs`` keeps only the newest columns."""
    group = a.groups.groups[pg_key]
    ranks = np.array(group.ranks, dtype=np.int64)
    progs = [a.progress.get((pg_key, int(r))) for r in ranks]
    cells = a.cells.loc[a.cells[s.PG_KEY] == pg_key]
    lo_candidates = [p.window_start for p in progs if p is not None and p.window_start is not None]
    if not cells.empty:
        lo_candidates.append(int(cells[s.SEQ].min()))
    hi_candidates = [p.enqueued for p in progs if p is not None and p.enqueued is not None]
    hi = max(hi_candidates, default=0)
    lo = min(lo_candidates, default=max(hi - 1, 0))
    lo = max(min(lo, hi), 0) if hi >= 0 else 0
    if max_seqs is not None and hi - lo + 1 > max_seqs:
        lo = hi - max_seqs + 1
    seqs = np.arange(lo, hi + 1, dtype=np.int64)
    codes = np.full((len(ranks), len(seqs)), OUTSIDE, dtype=np.int8)
    for i, p in enumerate(progs):
        if p is None or p.enqueued is None:
            continue
        done = p.completed if p.completed is not None else -1
        codes[i, seqs <= done] = COMPLETED
        codes[i, (seqs > done) & (seqs <= p.enqueued)] = SCHEDULED
        codes[i, seqs > p.enqueued] = NOT_ISSUED
        if p.window_start is not None and p.completed is None:
            codes[i, seqs < p.window_start] = OUTSIDE
    if not cells.empty and len(seqs):
        row_of = {int(r): i for i, r in enumerate(ranks)}
        sel = cells.loc[(cells[s.SEQ] >= lo) & (cells[s.SEQ] <= hi)]
        rows = sel[s.RANK].map(row_of)
        ok = rows.notna().to_numpy()
        ri = rows.to_numpy()[ok].astype(np.int64)
        ci = (sel[s.SEQ].to_numpy()[ok] - lo).astype(np.int64)
        state = sel[s.STATE].astype(str).to_numpy()[ok]
        done = sel["done"].to_numpy()[ok]
        code = np.where(done, COMPLETED, np.where(state == "started", STARTED, SCHEDULED)).astype(np.int8)
        codes[ri, ci] = code
    for m in a.mismatches:
        if m.pg_key == pg_key and lo <= m.seq <= hi:
            for r in m.odd_ranks:
                idx = np.nonzero(ranks == r)[0]
                if idx.size:
                    codes[idx[0], m.seq - lo] = MISMATCHED
    return Grid(pg_key, ranks, seqs, codes)


def aggregate(codes: np.ndarray, max_rows: int, max_cols: int) -> tuple[np.ndarray, int, int]:
    """Downsample by blocks keeping each block's most severe state; returns (grid, row_block, col_block)."""
    n_rows, n_cols = codes.shape
    rb = max(1, -(-n_rows // max_rows))
    cb = max(1, -(-n_cols // max_cols))
    if rb == 1 and cb == 1:
        return codes, 1, 1
    return block_max(codes, rb, cb), rb, cb


def block_max(codes: np.ndarray, rb: int, cb: int) -> np.ndarray:
    """The maximum of each ``rb`` x ``cb`` block (the last blocks padded with OUTSIDE, 0)."""
    if rb == 1 and cb == 1:
        return codes
    n_rows, n_cols = codes.shape
    pad_r, pad_c = (-n_rows) % rb, (-n_cols) % cb
    padded = np.pad(codes, ((0, pad_r), (0, pad_c)), constant_values=OUTSIDE)
    blocks = padded.reshape(padded.shape[0] // rb, rb, padded.shape[1] // cb, cb)
    return blocks.max(axis=(1, 3))


def moved_grid(grid: Grid, comparison: Comparison | None) -> np.ndarray | None:
    """1 where a rank completed the seq between the earlier and this snapshot, else 0; same
    shape as ``grid.codes``. None without a comparison."""
    if comparison is None:
        return None
    out = np.zeros(grid.codes.shape, dtype=np.int8)
    if not len(grid.seqs):
        return out
    d = comparison.deltas
    mine = d.loc[(d[s.PG_KEY] == grid.pg_key).to_numpy() & (d["completed_between"] > 0).to_numpy()]
    row_of = {int(r): i for i, r in enumerate(grid.ranks)}
    for rank, lo, hi in mine[[s.RANK, "completed_earlier", "completed_later"]].itertuples(index=False):
        i = row_of.get(int(rank))
        if i is not None:
            out[i, (grid.seqs > lo) & (grid.seqs <= hi)] = 1
    return out
