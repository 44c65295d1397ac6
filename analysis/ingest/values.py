"""Checked conversion of decoded dump values into Arrow columns.

All checking and converting (integers, times, shapes, dtypes, strings) happens once per
distinct value, not once per entry: a 2,000-entry dump holds a few dozen distinct values
per column. Anything malformed raises :class:`DumpFormatError` naming the entry and field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from ..types import DumpFormatError, Limits


def describe(value: Any) -> str:
    if type(value) is int and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"  # str() refuses > 4300 digits
    text = repr(value) if isinstance(value, (int, float, bool, type(None))) else type(value).__name__
    return text[:40]


def require_int(value: Any, what: str) -> int:
    if type(value) is bool or not isinstance(value, int):
        if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) < 20:
            return int(value)
        raise DumpFormatError(f"{what} is {describe(value)}, expected an integer")
    if not -(2**63) <= value < 2**63:
        raise DumpFormatError(f"{what} = {describe(value)} does not fit in 64 bits")
    return value


def column(entries: list, key: str, default: Any = None) -> list:
    """One field of every entry (entries are known to be dicts); ``default`` where absent."""
    try:
        return list(map(itemgetter(key), entries))  # C loop: the common case, key everywhere
    except KeyError:
        return [e.get(key, default) for e in entries]


def required_column(entries: list, key: str) -> list:
    try:
        return list(map(itemgetter(key), entries))
    except KeyError:
        i = first_bad(entries, lambda e: key in e)
        raise DumpFormatError(f"entry {i} has no '{key}'") from None


def first_bad(values: list, ok: Callable[[Any], bool]) -> int:
    return next((i for i, v in enumerate(values) if not ok(v)), 0)


def int_array(values: list, key: str, nullable: bool) -> pa.Array:
    """Integers, checked by type: no bools, no silent float or string coercion."""
    types = set(map(type, values))
    if types <= {int} or (nullable and types <= {int, type(None)}):
        try:
            return pa.array(values, type=pa.int64())
        except (OverflowError, pa.ArrowException):
            i = first_bad(values, lambda v: v is None or -(2**63) <= v < 2**63)
            raise DumpFormatError(f"entry {i} '{key}' = {describe(values[i])} does not fit in 64 bits") from None
    out = []  # JSON writers sometimes quote integers; anything else names the entry
    for i, v in enumerate(values):
        if v is None:
            if not nullable:
                raise DumpFormatError(f"entry {i} '{key}' is missing or None, expected an integer")
            out.append(None)
        else:
            out.append(require_int(v, f"entry {i} '{key}'"))
    return pa.array(out, type=pa.int64())


def int32_array(wide: pa.Array, key: str) -> pa.Array:
    """Small integers (a process-local group id); refuses what does not fit in 32 bits."""
    try:
        return wide.cast(pa.int32())
    except pa.ArrowInvalid:
        i = first_bad(wide.to_pylist(), lambda v: -(2**31) <= v < 2**31)
        raise DumpFormatError(f"entry {i} '{key}' = {wide[i].as_py()} does not fit in 32 bits") from None


def time_array(values: list, key: str) -> pa.Array:
    """Timestamps from decoded values (floats allowed, as JSON writers give them)."""
    if not set(map(type, values)) <= {int, type(None)}:
        cleaned = []
        for i, v in enumerate(values):
            if type(v) is float and math.isfinite(v):
                v = int(v)
            if v is not None and type(v) is not int:
                raise DumpFormatError(f"entry {i} '{key}' is {describe(v)}, expected a time in ns")
            cleaned.append(v)
        values = cleaned
    try:
        arr = pa.array(values, type=pa.int64())
    except (OverflowError, pa.ArrowException):
        i = first_bad(values, lambda v: v is None or -(2**63) <= v < 2**63)
        raise DumpFormatError(f"entry {i} '{key}' = {describe(values[i])} does not fit in 64 bits") from None
    return positive_times(arr)


def positive_times(arr: pa.Array) -> pa.Array:
    """JSON dumps write a missing time as 0, so 0 and below become null."""
    ints = arr.fill_null(0).to_numpy()  # stays int64: a float round trip would drop the low bits of ns
    return pa.array(ints, mask=ints <= 0, type=pa.int64())


def text_label(value: Any, n: int) -> str:
    """A short label from a scalar; anything else by its type (never a deep str())."""
    if type(value) is str:
        return value[:n]
    return (str(value) if type(value) in (int, float) and abs(value) < 10**30 else describe(value))[:n]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def by_identity(values: list) -> tuple[np.ndarray, list]:
    """Codes by object identity: a list the pickle memo shares among entries is checked once."""
    if not values:
        return np.zeros(0, np.int32), []
    ids = np.fromiter(map(id, values), dtype=np.uint64, count=len(values))
    _, first, codes = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first)  # groups in first-seen order, not by address: checks fail on the first entry
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes.reshape(-1)].astype(np.int32), [values[i] for i in first[order]]


def encode_values(
    values: list, key: str, checked: bool = False, entry_of: Callable[[int], int] | None = None
) -> tuple[np.ndarray, list]:
    """Dictionary-encode hashable values: (codes, distinct values in first-seen order).

    ``entry_of`` maps a value's index to the entry it stands for (values may be groups).
    """
    # Hashing a tuple walks it: a pickle can share one tuple so that walk is 2**40 long.
    # Only scalars and tuples of scalars are hashed.
    nested = [] if checked else [v for v in values if type(v) is tuple]
    if nested and not set(map(type, chain.from_iterable(nested))) <= _SCALARS:
        raise DumpFormatError(f"'{key}' holds a nested tuple, not a valid value")
    seen: dict[Any, int] = {}
    try:
        codes = [seen.setdefault(v, len(seen)) for v in values]
    except TypeError:
        i = first_bad(values, _hashable)
        entry = i if entry_of is None else entry_of(i)
        raise DumpFormatError(f"entry {entry} '{key}' is {describe(values[i])}, not a valid value") from None
    return np.array(codes, dtype=np.int32), list(seen)


def tuple_if_list(v: Any) -> Any:
    return tuple(v) if type(v) is list else v


def first_entry(codes: np.ndarray, groups: list[int]) -> int:
    """The first entry whose group code is one of ``groups``: what an error names."""
    return int(np.argmax(np.isin(codes, groups)))


def merge_codes(
    obj_codes: np.ndarray, objs: list, key: str, to_key: Callable[[Any], Any] | None = None
) -> tuple[np.ndarray, list]:
    """Codes by content (via ``to_key``) from codes of grouped objects: each distinct
    object is converted and hashed once."""
    content_codes, distinct = encode_values(
        objs if to_key is None else list(map(to_key, objs)), key, entry_of=lambda g: first_entry(obj_codes, [g])
    )
    return (content_codes[obj_codes] if len(obj_codes) else obj_codes), distinct


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def dict_array(codes: np.ndarray, texts: list[str | None]) -> pa.DictionaryArray:
    """A dictionary column from per-code texts; equal texts share a slot, None is null."""
    slot: dict[str, int] = {}
    remap = np.array([-1 if x is None else slot.setdefault(x, len(slot)) for x in texts] or [0], dtype=np.int32)
    indices = remap[codes] if len(codes) else np.zeros(0, np.int32)
    if None in texts and (mask := indices < 0).any():
        column = pa.array(np.where(mask, 0, indices), mask=mask, type=pa.int32())
    else:
        column = pa.array(indices, type=pa.int32())
    return pa.DictionaryArray.from_arrays(column, pa.array(list(slot), type=pa.string()))


def string_codes(
    obj_codes: np.ndarray, objs: list, key: str, max_len: int = 4096
) -> tuple[np.ndarray, list[str | None]]:
    codes, distinct = merge_codes(obj_codes, objs, key)
    bad = [c for c, v in enumerate(distinct) if v is not None and (type(v) is not str or len(v) > max_len)]
    if bad:
        i = first_entry(codes, bad)
        raise DumpFormatError(f"entry {i} '{key}' is {describe(distinct[codes[i]])}, expected a short string")
    return codes, distinct


def shape_codes(obj_codes: np.ndarray, objs: list, key: str, limits: Limits) -> tuple[np.ndarray, list[str]]:
    """Shapes as canonical text ``[[4096,1,5120]]`` per distinct value (``objs``, grouped)."""
    try:
        keys = [tuple(map(tuple, v)) if type(v) is list else v for v in objs]
    except TypeError:
        raise DumpFormatError(f"'{key}' holds a value that is not a list of shapes") from None
    shapes = [shape for k in keys if type(k) is tuple for shape in k]
    if not all(type(shape) is tuple for shape in shapes) or not set(map(type, chain.from_iterable(shapes))) <= {int}:
        raise DumpFormatError(f"'{key}' holds a shape that is not a list of integers")
    content_codes, distinct = encode_values(keys, key, checked=True)
    codes = content_codes[obj_codes] if len(obj_codes) else obj_codes
    return codes, _shape_texts(distinct, key, limits)


def _shape_texts(distinct: list, key: str, limits: Limits) -> list[str]:
    texts = []
    for shape_list in distinct:
        if type(shape_list) is not tuple or len(shape_list) > limits.max_tensors:
            raise DumpFormatError(f"'{key}' holds {describe(shape_list)}, expected a list of shapes")
        for shape in shape_list:
            if len(shape) > 64 or not all(type(d) is int for d in shape):
                raise DumpFormatError(f"'{key}' holds a shape that is not a short list of integers")
        try:
            texts.append("[" + ",".join("[" + ",".join(map(str, s)) + "]" for s in shape_list) + "]")
        except ValueError:  # an integer too long to print
            raise DumpFormatError(f"'{key}' holds a dimension too large") from None
    return texts


def dtype_codes(obj_codes: np.ndarray, objs: list, key: str) -> tuple[np.ndarray, list[str]]:
    codes, distinct = merge_codes(obj_codes, objs, key, tuple_if_list)
    texts = []
    for d in distinct:
        if type(d) is not tuple or not all(type(x) is str and len(x) <= 64 for x in d):
            raise DumpFormatError(f"'{key}' holds {describe(d)}, expected a list of dtype names")
        texts.append(",".join(d))
    return codes, texts


def flag_array(codes: np.ndarray, objs: list, key: str, nullable: bool) -> np.ndarray:
    """A bool field from grouped values: True where the value is True (None allowed if nullable)."""
    bad = [c for c, v in enumerate(objs) if type(v) is not bool and not (nullable and v is None)]
    if bad:
        i = first_entry(codes, bad)
        raise DumpFormatError(f"entry {i} '{key}' is {describe(objs[codes[i]])}, expected a bool")
    return np.array([v is True for v in objs] or [False], dtype=bool)[codes] if len(codes) else np.zeros(0, bool)
