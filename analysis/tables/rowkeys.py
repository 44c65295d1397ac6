"""Row tests over columns that stay fast at tens of millions of rows.

Equality with a value on categorical codes; distinct and duplicate rows over a few columns.

pandas' ``duplicated`` on several columns hashes tuples of Python-level values; here
each column becomes small non-negative integer codes (categorical codes, or ints
shifted by their minimum) and the columns one integer key (int32 while its span fits). Where
the key's span is small the work is a table of the span; otherwise one hash of the key. Where the key
would overflow, the pandas path is used.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

_KEY_LIMIT = 1 << 62


class _Codes(NamedTuple):
    """A column's codes without a copy of the column: row i's code (-1 if missing) is
    ``values[i] - low``, or -1 where ``missing[i]``; they are below ``n - 1``."""

    values: np.ndarray
    low: int
    missing: np.ndarray | None
    n: int


def _codes(column: pd.Series) -> _Codes:
    """Codes 0..n-2 for ``column`` (-1 missing), read from the column itself where it is
    integers: its values are shifted a slice at a time as they join the key, not copied
    whole (the ranks of the cells: 4 bytes a cell more at the peak of a grouping)."""
    values = column.array
    if isinstance(values, pd.Categorical):
        return _Codes(values.codes, 0, None, len(values.categories) + 1)
    if column.dtype.kind in "iub" or str(column.dtype).startswith(("int", "uint", "bool")):
        ints, missing = _int_column(column)
        if len(ints) and (missing is None or not missing.all()):
            present = True if missing is None else ~missing
            top, bottom = np.iinfo(ints.dtype).max, np.iinfo(ints.dtype).min
            low, high = int(ints.min(where=present, initial=top)), int(ints.max(where=present, initial=bottom))
            if high - low < _KEY_LIMIT:
                return _Codes(ints, low, missing, high - low + 2)
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return _Codes(codes, 0, None, len(uniques) + 1)


def _int_column(column: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer or boolean column's values (read-only: the column's own memory where it
    can be) and where they are missing (None where none is)."""
    dtype = column.dtype
    own = dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8)  # int64 holds every value
    if own and isinstance(dtype, pd.ArrowDtype):
        arrow = column.array.__arrow_array__()
        if not arrow.null_count:
            return arrow.to_numpy(), None
    elif own and isinstance(dtype, np.dtype):
        return column.to_numpy(), None
    missing = column.isna().to_numpy()
    ints = column.to_numpy(dtype=_int_width(column.dtype), na_value=0)
    return ints, missing if missing.any() else None


def _int_width(dtype: object) -> type[np.signedinteger]:
    """int32 for a column of 32 bits or fewer that int32 holds (a copy of it then takes half
    the bytes of int64), else int64."""
    if isinstance(dtype, pd.ArrowDtype):
        arrow = dtype.pyarrow_dtype
        bits = arrow.bit_width if pa.types.is_integer(arrow) or pa.types.is_boolean(arrow) else 64
        signed = pa.types.is_signed_integer(arrow)
    else:
        kind, bits = getattr(dtype, "kind", "O"), getattr(dtype, "itemsize", 8) * 8
        signed = kind == "i"
    return np.int32 if bits <= 16 or (bits == 32 and signed) else np.int64


def _row_key(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, int] | None:
    """One integer per row, equal exactly when the rows agree on ``columns``, and the span
    every key is below; None on overflow. The key is int32 while its span fits, int64 once
    it does not: a grouping of few distinct rows (the cells' members, their collectives)
    then holds four bytes a row, not eight."""
    key = np.zeros(len(frame), dtype=np.int32)
    span = 1
    dense_limit = max(len(key), 1 << 20)
    for name in columns:
        codes = _codes(frame[name])
        if span * codes.n > dense_limit and 1 < span <= dense_limit:
            key, span = _renumber(key, span)
        if span * codes.n >= _KEY_LIMIT:
            return None
        if span * codes.n > np.iinfo(np.int32).max and key.dtype != np.int64:
            key = key.astype(np.int64)
        _add_codes(key, codes)
        span *= codes.n
    return key, span


def _add_codes(key: np.ndarray, codes: _Codes) -> None:
    """``key = key * n + code + 1`` in place, a slice of rows at a time: the shifted codes
    are a slice long, and computed in 64 bits whatever the column's width."""
    for start in range(0, len(key), SLICE_ROWS):
        part = key[start : start + SLICE_ROWS]
        part *= codes.n
        shifted = codes.values[start : start + SLICE_ROWS].astype(np.int64)
        if codes.low:
            shifted -= codes.low
        if codes.missing is not None:
            shifted[codes.missing[start : start + SLICE_ROWS]] = -1
        shifted += 1
        part += shifted.astype(key.dtype, copy=False)


def _renumber(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """The same partition with keys 0..k-1 for the k values present: keeps the span of
    several columns' key near the number of distinct rows, not the product of ranges.

    ``key`` (the caller's own array) is renumbered in place, a chunk at a time: a
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


def group_ids(frame: pd.DataFrame, columns: list[str], first_seen: bool = True, narrow: bool = False) -> np.ndarray:
    """Dense ids 0..n-1 per distinct combination of ``columns``, as int64; with ``narrow``
    as int32 where every id fits (the key itself where it is int32: no 8-byte copy).

    In first-seen order; with ``first_seen=False`` in any order, which for a small key
    span costs one table of the span instead of a hash table of every row.
    """
    keyed = _row_key(frame, columns)
    if keyed is None:
        ids = frame.groupby(columns, sort=False, observed=True, dropna=False).ngroup().to_numpy(dtype=np.int64)
    else:
        key, span = keyed
        if not first_seen and _small_span(key, span):
            ids = _renumber(key, span)[0]
        else:
            ids = pd.factorize(key)[0]
    fits = narrow and (not len(ids) or int(ids.max()) <= np.iinfo(np.int32).max)
    return ids.astype(np.int32 if fits else np.int64, copy=False)


def member_ids(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """:func:`group_ids` with ``first_seen=False, narrow=True``, for few distinct rows over a
    wide key span (the cells' (group, rank) members at 16,384 ranks: a span of 10**8 for
    50,000 members): the ids number the distinct keys in ascending order, found a slice at
    a time, where a hash of every row returned 8 bytes a row (0.2 GB at once)."""
    keyed = _row_key(frame, columns)
    if keyed is None or _small_span(*keyed) or len(keyed[0]) <= SLICE_ROWS:
        return group_ids(frame, columns, first_seen=False, narrow=True)
    key = keyed[0]
    distinct = np.zeros(0, dtype=key.dtype)
    for start in range(0, len(key), SLICE_ROWS):
        distinct = np.union1d(distinct, key[start : start + SLICE_ROWS])
        if len(distinct) > _FEW_DISTINCT:
            return group_ids(frame, columns, first_seen=False, narrow=True)
    for start in range(0, len(key), SLICE_ROWS):  # in place: each id is below the key it replaces' count
        part = key[start : start + SLICE_ROWS]
        part[:] = np.searchsorted(distinct, part)
    return key.astype(np.int32, copy=False)


_FEW_DISTINCT = 1 << 22
"""Distinct keys past which :func:`member_ids` hashes the rows instead (the union of the
slices' keys would be re-sorted at every slice)."""


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
