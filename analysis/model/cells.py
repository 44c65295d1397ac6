"""One row per (group, seq, rank) collective: the unit every check and view works on.

Built from the entries table with array operations only (categorical codes and numpy
slices), because at 16k ranks x 2,000 entries it has tens of millions of rows.
Coalesced collectives (several entries sharing one seq, closed by ``coalesced``)
are folded into one row whose op, sizes and dtypes join their members'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowindex import rank_blocks
from ..tables.rowkeys import duplicated, equals, flag, group_ids
from ..types import DumpSet
from .callsites import cell_call_sites
from .groups import GroupIndex

DONE = "done"
ROW = "row"
COLLECTIVE = "collective"
"""An id per (group, seq), the same in every cell of one collective: most checks compare a
collective's members, and finding them once here saves each a grouping of every cell
(10 ms apiece at 256 ranks). Four bytes a cell, where not more than 2**31 cells."""
COLUMNS = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE, s.STATE)


def _take_cat(series: pd.Series, idx: np.ndarray) -> pd.Categorical:
    cat = series.array
    if not isinstance(cat, pd.Categorical):
        cat = pd.Categorical(series.astype(str))
    return pd.Categorical.from_codes(cat.codes[idx], cat.categories)


def _take_int(series: pd.Series, idx: np.ndarray, na: int) -> np.ndarray:
    """``series[idx]`` as int64 (``na`` for nulls), with no full-length temporary."""
    return take_ints(series, idx, na).astype(np.int64, copy=False)


def take_ints(series: pd.Series, idx: np.ndarray | None, na: int) -> np.ndarray:
    """``series[idx]`` (every row where ``idx`` is None; ``na`` for nulls) in the column's
    own integer width, with no full-length temporary: an int32 column gives four bytes a
    row, not eight."""
    if not isinstance(series.dtype, pd.ArrowDtype):
        values = series.to_numpy(dtype=np.int64, na_value=na)
        return values if idx is None else values[idx]
    values = series.array.__arrow_array__()  # the column's own Arrow data, no copy
    if idx is not None and not values.null_count and values.num_chunks == 1:
        # indexed through a view of the column: one copy of the rows taken, where Arrow's
        # take and a writable copy of it were two (the report's record ids: 47 MB at 4,096 ranks)
        return values.chunk(0).to_numpy(zero_copy_only=False)[idx]
    taken = (values if idx is None else values.take(idx)).fill_null(na).to_numpy()
    return taken if taken.flags.writeable else taken.copy()  # a view of Arrow's buffer is read-only


def int_values(series: pd.Series, na: int) -> np.ndarray:
    """Every value of an integer column (``na`` for nulls) in its own width, read-only: the
    column's own memory where it has no nulls, not an 8-byte copy of every row (the newest
    entry time, each rank's rows: 66 MB apiece at 4,096 ranks)."""
    if not isinstance(series.dtype, pd.ArrowDtype):
        if series.dtype.kind in "iu":
            return series.to_numpy()  # a numpy column (the cells'): its own array
        return series.to_numpy(dtype=np.int64, na_value=na)
    values = series.array.__arrow_array__()
    if values.null_count:
        values = values.fill_null(na)
    return values.to_numpy()


def created_ns(entries: pd.DataFrame, cells: pd.DataFrame) -> pd.Series:
    """When each cell's entry was created (ns; null if unknown), read from its entry row.

    Kept out of the cells table: most views never need it, and it would add 9 bytes to
    each of tens of millions of cells.
    """
    values = _take_int(entries[s.T_CREATED], cells[ROW].to_numpy(), -1)
    return pd.Series(_masked(values, below=1), index=cells.index, name=s.T_CREATED)


def _masked(values: np.ndarray, below: int) -> pd.arrays.IntegerArray:
    """A nullable integer array over ``values`` (no copy), missing where a value is below ``below``."""
    return pd.arrays.IntegerArray(values, values < below)


def group_keys(dumps: DumpSet, index: GroupIndex, idx: np.ndarray) -> pd.Categorical:
    """The group key of each selected entry: its name, unless one name maps to two groups."""
    names = _take_cat(dumps.entries[s.PG_NAME], idx)
    if all(key == name for (_, name), key in index.key_of.items()):
        return names
    ranks = dumps.entries[s.RANK].to_numpy(dtype=np.int64)[idx]
    keys = [index.key_of.get((int(r), str(n)), str(n)) for r, n in zip(ranks, names)]
    return pd.Categorical(keys)


def build_cells(dumps: DumpSet, index: GroupIndex) -> pd.DataFrame:
    """Collective (non-P2P) entries as cells, coalesced groups folded."""
    e = dumps.entries
    is_p2p = flag(e[s.IS_P2P])
    idx = np.flatnonzero(~is_p2p & ~equals(e[s.OP], "coalesced"))
    if len(e) < 2**31:
        idx = idx.astype(np.int32)  # half the size of each temporary taken with it
    done = equals(e[s.STATE], "completed") | flag(e[s.RETIRED])
    # taken in the columns' own widths (int32 as loaded): no 8-byte copy of any column
    seq = take_ints(e[s.SEQ], idx, -1)
    if len(seq) and -(2**31) <= seq.min() and seq.max() < 2**31:
        seq = seq.astype(np.int32, copy=False)  # ids are far below 2**31 in real dumps
    cells = pd.DataFrame(
        {
            s.PG_KEY: group_keys(dumps, index, idx),
            s.RANK: take_ints(e[s.RANK], idx, -1).astype(np.int32, copy=False),
            s.SEQ: seq,
            DONE: done[idx],
            ROW: idx,
            **{c: _take_cat(e[c], idx) for c in COLUMNS},
            s.STACK_ID: _masked(take_ints(e[s.STACK_ID], idx, -1).astype(np.int32, copy=False), below=0),
        },
        copy=False,  # every array is new here: no second copy into consolidated blocks
    )
    cells[s.CALL_SITE] = cell_call_sites(cells[s.STACK_ID], dumps.stacks, cells[s.CALL_SITE].array)
    dup, collective = _shared_cells(cells)
    if dup.any():
        cells = pd.concat([cells.loc[~dup], _fold(cells.loc[dup])], ignore_index=True)
        for col in (s.PG_KEY, *COLUMNS):
            cells[col] = cells[col].astype("category")
        collective = None  # rows folded: found again below
    return with_collective_ids(cells, collective)


def with_collective_ids(cells: pd.DataFrame, ids: np.ndarray | None = None) -> pd.DataFrame:
    """``cells`` with the COLLECTIVE column: ``ids`` where the caller found them already."""
    if ids is None:
        ids = group_ids(cells, [s.PG_KEY, s.SEQ], first_seen=False, narrow=True)
    cells[COLLECTIVE] = ids.astype(np.int32 if len(cells) < 2**31 else np.int64, copy=False)
    return cells


def _shared_cells(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows whose (group, seq, rank) another row has too: the members of coalesced ops;
    and each row's collective id (see COLLECTIVE) where it was found on the way.

    A rank's rows are contiguous (one file each), so each rank's few thousand rows are
    sorted on their own instead of hashing every row of the job together.
    """
    block_ranks, starts, ends = rank_blocks(cells[s.RANK].to_numpy())
    if len(np.unique(block_ranks)) != len(block_ranks):  # a rank's rows are split: count them all together
        return duplicated(cells, [s.PG_KEY, s.SEQ, s.RANK], keep=False), None
    pair = group_ids(cells, [s.PG_KEY, s.SEQ], first_seen=False, narrow=True)
    pair = pair.astype(np.int32 if len(pair) < 2**31 else np.int64, copy=False)  # the COLLECTIVE column's width
    shared = np.zeros(len(pair), dtype=bool)
    for start, end in zip(starts.tolist(), ends.tolist()):
        mine = np.sort(pair[start:end])
        repeated = mine[1:][mine[1:] == mine[:-1]]
        if len(repeated):
            shared[start:end] = np.isin(pair[start:end], repeated)
    return shared, pair


def _fold(rows: pd.DataFrame) -> pd.DataFrame:
    """Entries of one coalesced collective become one cell."""
    text = rows.astype({s.OP: str, s.INPUT_SIZES: str, s.INPUT_DTYPES: str})
    folded = (
        text.groupby([s.PG_KEY, s.SEQ, s.RANK], sort=False, observed=True)
        .agg(
            {
                DONE: "all",
                ROW: "first",
                s.OP: "+".join,
                s.INPUT_SIZES: "+".join,
                s.INPUT_DTYPES: "+".join,
                s.CALL_SITE: "first",
                s.STATE: "first",
                s.STACK_ID: "first",
            }
        )
        .reset_index()
    )
    return folded


def queue_heads(cells: pd.DataFrame, entries: pd.DataFrame, p2p: pd.DataFrame) -> dict[int, tuple[bool, str, int]]:
    """Each rank's earliest pending op by the record id its dump gave it: (is send/recv, group
    key, seq or p2p seq). ``p2p`` holds the pending send/recv rows (``model.p2p``); ranks whose
    pending entries carry no record id are left out."""
    pending = cells.loc[~cells[DONE].to_numpy(), [s.PG_KEY, s.RANK, s.SEQ, ROW]]
    rid = _take_int(entries[s.RECORD_ID], pending[ROW].to_numpy(), -1)
    frames = [
        pd.DataFrame(
            {
                "p2p": False,
                "key": pending[s.PG_KEY].astype(str).to_numpy(),
                "rank": pending[s.RANK].to_numpy(),
                "seq": pending[s.SEQ].to_numpy(),
                "rid": rid,
            }
        )
    ]
    if len(p2p):
        frames.append(
            pd.DataFrame(
                {
                    "p2p": True,
                    "key": p2p[s.PG_KEY].astype(str).to_numpy(),
                    "rank": p2p[s.RANK].to_numpy(dtype=np.int64),
                    "seq": p2p[s.P2P_SEQ].to_numpy(dtype=np.int64, na_value=-1),
                    "rid": p2p[s.RECORD_ID].to_numpy(dtype=np.int64, na_value=-1),
                }
            )
        )
    ops = pd.concat(frames, ignore_index=True)
    ops = ops.loc[ops["rid"] >= 0].sort_values("rid", kind="stable").drop_duplicates("rank")
    return {
        int(r): (bool(p), str(k), int(q)) for p, k, r, q in ops[["p2p", "key", "rank", "seq"]].itertuples(index=False)
    }
