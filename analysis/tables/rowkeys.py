"""Row tests over columns that stay fast at tens of millions of rows.

Equality with a value on categorical codes; distinct and duplicate rows over a few columns.

pandas' ``duplicated`` on several columns hashes tuples of Python-level values; here
each column becomes small non-negative integer codes (categorical codes, or ints
shifted by their minimum) and the columns one int64 key. Where the key's span is small
the work is a table of the span; otherwise one hash of an int64 array. Where the key
would overflow, the pandas path is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

_KEY_LIMIT = 1 << 62


def _codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Codes 0..n-1 for ``column`` (0 is missing) and n; the codes may be any integer type."""
    values = column.array
    if isinstance(values, pd.Categorical):
        return values.codes, len(values.categories) + 1  # -1 is missing: the caller adds 1
    if column.dtype.kind in "iub" or str(column.dtype).startswith(("int", "uint", "bool")):
        missing = column.isna().to_numpy()
        ints = column.to_numpy(dtype=_int_width(column.dtype), na_value=0)
        if not (ints.flags.owndata and ints.flags.writeable):
            ints = ints.copy()  # a view of the frame's own data: never change it in place
        if len(ints) and not missing.all():
            present = ints[~missing] if missing.any() else ints
            low, high = int(present.min()), int(present.max())
            if ints.dtype != np.int64 and high - low > np.iinfo(ints.dtype).max:
                ints = ints.astype(np.int64)  # the shifted codes would not fit
            if high - low < _KEY_LIMIT:
                ints -= low  # in place: a second full-length array would double the peak
                ints[missing] = -1
                return ints, high - low + 2
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return codes, len(uniques) + 1


def _int_width(dtype: object) -> type[np.signedinteger]:
    """int32 for a column of 32 bits or fewer that int32 holds (its codes then take half
    the bytes of int64: 23 MB less per column keyed at 4,096 ranks), else int64."""
    if isinstance(dtype, pd.ArrowDtype):
        arrow = dtype.pyarrow_dtype
        bits = arrow.bit_width if pa.types.is_integer(arrow) or pa.types.is_boolean(arrow) else 64
        signed = pa.types.is_signed_integer(arrow)
    else:
        kind, bits = getattr(dtype, "kind", "O"), getattr(dtype, "itemsize", 8) * 8
        signed = kind == "i"
    return np.int32 if bits <= 16 or (bits == 32 and signed) else np.int64


def _row_key(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, int] | None:
    """One int64 per row, equal exactly when the rows agree on ``columns``, and the span
    every key is below; None on overflow."""
    key = np.zeros(len(frame), dtype=np.int64)
    span = 1
    dense_limit = max(len(key), 1 << 20)
    for name in columns:
        codes, n = _codes(frame[name])
        if span * n > dense_limit and 1 < span <= dense_limit:
            key, span = _renumber(key, span)
        if span * n >= _KEY_LIMIT:
            return None
        key *= n
        key += codes
        key += 1
        span *= n
    return key, span


def _renumber(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """The same partition with keys 0..k-1 for the k values present: keeps the span of
    several columns' key near the number of distinct rows, not the product of ranges.

    ``key`` (the caller's own int64 array) is renumbered in place, a chunk at a time: a
    second key-long array beside it and the span's table was the peak of building the
    cells (4,096 ranks: three 47 MB arrays at once)."""
    present = np.zeros(span, dtype=bool)
    present[key] = True
    number = present.astype(np.int32 if span < 2**31 else np.int64)  # the numbers are below the span
    del present
    np.cumsum(number, out=number)  # in place: a cumsum that casts copies the whole input first
    number -= 1
    for start in range(0, len(key), _RENUMBER_CHUNK):
        part = key[start : start + _RENUMBER_CHUNK]
        part[:] = number[part]
    return key, int(number[-1]) + 1


_RENUMBER_CHUNK = 1 << 20


def _small_span(key: np.ndarray, span: int) -> bool:
    """Whether a table of the key span costs no more than the rows themselves."""
    return span <= max(len(key), 1 << 16)


def first_rows(ids: np.ndarray, n: int) -> np.ndarray:
    """The first row of each id 0..n-1 (ids that never occur are left undefined)."""
    first = np.empty(n, dtype=np.int64)
    for start in reversed(range(0, len(ids), SLICE_ROWS)):  # a slice at a time, the last slice first
        stop = min(start + SLICE_ROWS, len(ids))
        first[ids[start:stop][::-1]] = np.arange(stop - 1, start - 1, -1)  # the last write wins: the first row
    return first


def group_ids(frame: pd.DataFrame, columns: list[str], first_seen: bool = True) -> np.ndarray:
    """Dense ids 0..n-1 per distinct combination of ``columns``.

    In first-seen order; with ``first_seen=False`` in any order, which for a small key
    span costs one table of the span instead of a hash table of every row.
    """
    keyed = _row_key(frame, columns)
    if keyed is None:
        return frame.groupby(columns, sort=False, observed=True, dropna=False).ngroup().to_numpy(dtype=np.int64)
    key, span = keyed
    if not first_seen and _small_span(key, span):
        return _renumber(key, span)[0]
    return pd.factorize(key)[0].astype(np.int64)


def duplicated(frame: pd.DataFrame, columns: list[str], keep: str | bool = "first") -> np.ndarray:
    """``frame.duplicated(columns, keep=keep)`` as a boolean array."""
    keyed = _row_key(frame, columns)
    if keyed is None:
        return frame.duplicated(columns, keep=keep).to_numpy()
    key, span = keyed
    if keep in ("first", False) and len(key) and _small_span(key, span):
        if keep is False:
            return np.bincount(key, minlength=span)[key] > 1
        return first_rows(key, span)[key] != np.arange(len(key))
    if keep != "first" or not len(key):
        return pd.Series(key).duplicated(keep=keep).to_numpy()
    # A first occurrence starts a run of equal keys; tables grouped by rank have few runs.
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    firsts = starts[~pd.Series(key[starts]).duplicated().to_numpy()]
    out = np.ones(len(key), dtype=bool)
    out[firsts] = False
    return out


DISTINCT_CHUNK_ROWS = 1 << 20
"""Rows :func:`distinct` keys at a time: its temporaries (a few int64 per row) stay this
small whatever the table's size (the entries' group names at 4,096 ranks: 0.2 GB at once)."""


def distinct(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame[columns].drop_duplicates()``, first occurrences in order.

    A long frame is done a chunk of rows at a time: each chunk's first occurrences, then the
    first occurrences among those (the first of a row in the frame is the first in its
    chunk), so the temporaries grow with a chunk and the distinct rows, not the frame."""
    if len(frame) <= 2 * DISTINCT_CHUNK_ROWS:
        return frame.loc[~duplicated(frame, columns), columns]
    part = frame[columns]
    firsts = [
        start + np.flatnonzero(~duplicated(part.iloc[start : start + DISTINCT_CHUNK_ROWS], columns))
        for start in range(0, len(part), DISTINCT_CHUNK_ROWS)
    ]
    rows = np.concatenate(firsts)
    candidates = part.iloc[rows]
    return candidates.loc[~duplicated(candidates, columns)] if len(rows) else candidates


def equals(column: pd.Series, value: str) -> np.ndarray:
    """``column == value`` as a boolean array; on a categorical, compared on codes, not strings."""
    values = column.array
    if isinstance(values, pd.Categorical):
        where = np.flatnonzero(values.categories == value)
        return values.codes == where[0] if len(where) else np.zeros(len(values), dtype=bool)
    return (column.astype(str) == value).to_numpy()


def flag(column: pd.Series) -> np.ndarray:
    """A nullable boolean column as a plain array, missing as False."""
    return column.to_numpy(dtype=bool, na_value=False)


def pair_ids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense ids 0..n-1 per distinct (a, b) pair of two integer arrays, whatever their values
    (a product key of hostile seqs or ranks would overflow int64)."""
    return group_ids(pd.DataFrame({"a": a, "b": b}), ["a", "b"], first_seen=False)


SLICE_ROWS = 1 << 20
"""Rows taken at a time by :func:`counts_of` and :func:`reduce_at`."""


def counts_of(ids: np.ndarray, n: int, where: np.ndarray | None = None) -> np.ndarray:
    """``np.bincount(ids[where], minlength=n)``, a slice of rows at a time: bincount takes
    its input as 64-bit, a copy twice the size of int32 ids if made of them all at once."""
    out = np.zeros(n, dtype=np.intp)
    for start in range(0, len(ids), SLICE_ROWS):
        part = ids[start : start + SLICE_ROWS]
        if where is not None:
            part = part[where[start : start + SLICE_ROWS]]
        out += np.bincount(part, minlength=n)
    return out


def reduce_at(ufunc: np.ufunc, out: np.ndarray, ids: np.ndarray, values: np.ndarray, where: np.ndarray) -> None:
    """``ufunc.at(out, ids[where], values[where])``, a slice of rows at a time: the
    selections are a slice long, not as long as the rows."""
    for start in range(0, len(ids), SLICE_ROWS):
        chosen = where[start : start + SLICE_ROWS]
        ufunc.at(out, ids[start : start + SLICE_ROWS][chosen], values[start : start + SLICE_ROWS][chosen])
