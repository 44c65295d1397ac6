"""Turn one rank's raw dump (a dict from pickle or JSON) into Arrow tables.

Columns are pulled out of the entry dicts one field at a time (a list comprehension
per column), so no per-entry Python object outlives this function. Text columns are
dictionary-encoded as they are pulled out, and all checking and converting (op names,
shapes, dtypes, call stacks) happens once per distinct value, not once per entry: a
2,000-entry dump holds a few dozen distinct values per column. Anything malformed
raises :class:`DumpFormatError` with the entry index and field, which the loader turns
into a per-file error.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from . import schema as s


class DumpFormatError(ValueError):
    """The file parsed, but it is not a Flight Recorder dump of a known shape."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one dump may contain; a real dump is far below each."""

    max_file_bytes: int = 1 << 30
    max_entries: int = 1_000_000
    max_frames: int = 4096
    max_tensors: int = 65_536
    max_groups: int = 1_000_000
    max_rank: int = 1 << 22
    """Highest global rank a file name or a group's rank list may name."""


DEFAULT_LIMITS = Limits()


@dataclass(slots=True)
class FileTables:
    """Everything one file contributes, as Arrow tables ready to concatenate."""

    entries: pa.Table
    stacks: pa.Table
    configs: pa.Table
    status: pa.Table
    meta: pa.Table


_P2P_NAME = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)$")
_TORCH_INTERNAL = ("/torch/", "c10d_logger.py")


def _describe(value: Any) -> str:
    if type(value) is int and not -(10**30) < value < 10**30:
        return f"an integer of {value.bit_length()} bits"  # str() refuses > 4300 digits
    text = repr(value) if isinstance(value, (int, float, bool, type(None))) else type(value).__name__
    return text[:40]


def _require_int(value: Any, what: str) -> int:
    if type(value) is bool or not isinstance(value, int):
        if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) < 20:
            return int(value)
        raise DumpFormatError(f"{what} is {_describe(value)}, expected an integer")
    if not -(2**63) <= value < 2**63:
        raise DumpFormatError(f"{what} = {_describe(value)} does not fit in 64 bits")
    return value


def _column(entries: list, key: str, default: Any = None) -> list:
    """One field of every entry (entries are known to be dicts); ``default`` where absent."""
    try:
        return list(map(itemgetter(key), entries))  # C loop: the common case, key everywhere
    except KeyError:
        return [e.get(key, default) for e in entries]


def _required_column(entries: list, key: str) -> list:
    try:
        return list(map(itemgetter(key), entries))
    except KeyError:
        i = _first_bad(entries, lambda e: key in e)
        raise DumpFormatError(f"entry {i} has no '{key}'") from None


def _first_bad(values: list, ok: Callable[[Any], bool]) -> int:
    return next((i for i, v in enumerate(values) if not ok(v)), 0)


def _int_array(values: list, key: str, nullable: bool) -> pa.Array:
    """Integers, checked by type: no bools, no silent float or string coercion."""
    types = set(map(type, values))
    if types <= {int} or (nullable and types <= {int, type(None)}):
        try:
            return pa.array(values, type=pa.int64())
        except (OverflowError, pa.ArrowException):
            i = _first_bad(values, lambda v: v is None or -(2**63) <= v < 2**63)
            raise DumpFormatError(f"entry {i} '{key}' = {_describe(values[i])} does not fit in 64 bits") from None
    out = []  # JSON writers sometimes quote integers; anything else names the entry
    for i, v in enumerate(values):
        if v is None:
            if not nullable:
                raise DumpFormatError(f"entry {i} '{key}' is missing or None, expected an integer")
            out.append(None)
        else:
            out.append(_require_int(v, f"entry {i} '{key}'"))
    return pa.array(out, type=pa.int64())


def _int32_array(wide: pa.Array, key: str) -> pa.Array:
    """Small integers (a process-local group id); refuses what does not fit in 32 bits."""
    try:
        return wide.cast(pa.int32())
    except pa.ArrowInvalid:
        i = _first_bad(wide.to_pylist(), lambda v: -(2**31) <= v < 2**31)
        raise DumpFormatError(f"entry {i} '{key}' = {wide[i].as_py()} does not fit in 32 bits") from None


def _time_array(values: list, key: str) -> pa.Array:
    """Timestamps from decoded values (floats allowed, as JSON writers give them)."""
    if not set(map(type, values)) <= {int, type(None)}:
        cleaned = []
        for i, v in enumerate(values):
            if type(v) is float and math.isfinite(v):
                v = int(v)
            if v is not None and type(v) is not int:
                raise DumpFormatError(f"entry {i} '{key}' is {_describe(v)}, expected a time in ns")
            cleaned.append(v)
        values = cleaned
    try:
        arr = pa.array(values, type=pa.int64())
    except (OverflowError, pa.ArrowException):
        i = _first_bad(values, lambda v: v is None or -(2**63) <= v < 2**63)
        raise DumpFormatError(f"entry {i} '{key}' = {_describe(values[i])} does not fit in 64 bits") from None
    return positive_times(arr)


def positive_times(arr: pa.Array) -> pa.Array:
    """JSON dumps write a missing time as 0, so 0 and below become null."""
    ints = arr.fill_null(0).to_numpy()  # stays int64: a float round trip would drop the low bits of ns
    return pa.array(ints, mask=ints <= 0, type=pa.int64())


def _text(value: Any, n: int) -> str:
    """A short label from a scalar; anything else by its type (never a deep str())."""
    if type(value) is str:
        return value[:n]
    return (str(value) if type(value) in (int, float) and abs(value) < 10**30 else _describe(value))[:n]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _by_identity(values: list) -> tuple[np.ndarray, list]:
    """Codes by object identity: a list the pickle memo shares among entries is checked once."""
    if not values:
        return np.zeros(0, np.int32), []
    ids = np.fromiter(map(id, values), dtype=np.uint64, count=len(values))
    _, first, codes = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first)  # groups in first-seen order, not by address: checks fail on the first entry
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes.reshape(-1)].astype(np.int32), [values[i] for i in first[order]]


def _codes(
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
        i = _first_bad(values, _hashable)
        entry = i if entry_of is None else entry_of(i)
        raise DumpFormatError(f"entry {entry} '{key}' is {_describe(values[i])}, not a valid value") from None
    return np.array(codes, dtype=np.int32), list(seen)


def _tuple_if_list(v: Any) -> Any:
    return tuple(v) if type(v) is list else v


def _first_entry(codes: np.ndarray, groups: list[int]) -> int:
    """The first entry whose group code is one of ``groups``: what an error names."""
    return int(np.argmax(np.isin(codes, groups)))


def _merge_codes(
    obj_codes: np.ndarray, objs: list, key: str, to_key: Callable[[Any], Any] | None = None
) -> tuple[np.ndarray, list]:
    """Codes by content (via ``to_key``) from codes of grouped objects: each distinct
    object is converted and hashed once."""
    content_codes, distinct = _codes(
        objs if to_key is None else list(map(to_key, objs)), key, entry_of=lambda g: _first_entry(obj_codes, [g])
    )
    return (content_codes[obj_codes] if len(obj_codes) else obj_codes), distinct


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _dict_array(codes: np.ndarray, texts: list[str | None]) -> pa.DictionaryArray:
    """A dictionary column from per-code texts; equal texts share a slot, None is null."""
    slot: dict[str, int] = {}
    remap = np.array([-1 if x is None else slot.setdefault(x, len(slot)) for x in texts] or [0], dtype=np.int32)
    indices = remap[codes] if len(codes) else np.zeros(0, np.int32)
    mask = indices < 0
    indices = pa.array(np.where(mask, 0, indices), mask=mask if mask.any() else None, type=pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(slot), type=pa.string()))


def _string_codes(
    obj_codes: np.ndarray, objs: list, key: str, max_len: int = 4096
) -> tuple[np.ndarray, list[str | None]]:
    codes, distinct = _merge_codes(obj_codes, objs, key)
    bad = [c for c, v in enumerate(distinct) if v is not None and (type(v) is not str or len(v) > max_len)]
    if bad:
        i = _first_entry(codes, bad)
        raise DumpFormatError(f"entry {i} '{key}' is {_describe(distinct[codes[i]])}, expected a short string")
    return codes, distinct


def _sizes(obj_codes: np.ndarray, objs: list, key: str, limits: Limits) -> tuple[np.ndarray, list[str]]:
    """Shapes as canonical text ``[[4096,1,5120]]`` per distinct value (``objs``, grouped)."""
    try:
        keys = [tuple(map(tuple, v)) if type(v) is list else v for v in objs]
    except TypeError:
        raise DumpFormatError(f"'{key}' holds a value that is not a list of shapes") from None
    shapes = [shape for k in keys if type(k) is tuple for shape in k]
    if not set(map(type, chain.from_iterable(shapes))) <= {int}:
        raise DumpFormatError(f"'{key}' holds a shape that is not a list of integers")
    content_codes, distinct = _codes(keys, key, checked=True)
    codes = content_codes[obj_codes] if len(obj_codes) else obj_codes
    return codes, _shape_texts(distinct, key, limits)


def _shape_texts(distinct: list, key: str, limits: Limits) -> list[str]:
    texts = []
    for shape_list in distinct:
        if type(shape_list) is not tuple or len(shape_list) > limits.max_tensors:
            raise DumpFormatError(f"'{key}' holds {_describe(shape_list)}, expected a list of shapes")
        for shape in shape_list:
            if len(shape) > 64 or not all(type(d) is int for d in shape):
                raise DumpFormatError(f"'{key}' holds a shape that is not a short list of integers")
        try:
            texts.append("[" + ",".join("[" + ",".join(map(str, s)) + "]" for s in shape_list) + "]")
        except ValueError:  # an integer too long to print
            raise DumpFormatError(f"'{key}' holds a dimension too large") from None
    return texts


def _dtypes(obj_codes: np.ndarray, objs: list, key: str) -> tuple[np.ndarray, list[str]]:
    codes, distinct = _merge_codes(obj_codes, objs, key, _tuple_if_list)
    texts = []
    for d in distinct:
        if type(d) is not tuple or not all(type(x) is str and len(x) <= 64 for x in d):
            raise DumpFormatError(f"'{key}' holds {_describe(d)}, expected a list of dtype names")
        texts.append(",".join(d))
    return codes, texts


def peer_ranks(names: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The (src, dst) group ranks a send/recv's profiling name gives (null for other ops).

    A function of the name, so parsed once per distinct name instead of stored per row.
    """
    cat = names.astype("category").array
    parsed = [_parse_op(str(x)) for x in cat.categories]
    out = []
    for i in (1, 2):
        per_name = np.array([-1 if p[i] is None else p[i] for p in parsed] + [-1], dtype=np.int64)
        values = per_name[np.where(cat.codes < 0, len(parsed), cat.codes)]
        out.append(pd.Series(pd.arrays.IntegerArray(np.maximum(values, 0), values < 0), index=names.index))
    return out[0], out[1]


def _parse_op(name: str) -> tuple[str, int | None, int | None]:
    """``nccl:send 0->3`` -> (send, 0, 3); ``nccl:recv 3<-0`` -> (recv, 0, 3): (op, src, dst)."""
    op = name.split(":", 1)[1] if ":" in name else name
    m = _P2P_NAME.match(op)
    if not m:
        return op, None, None
    a, b = int(m.group(2)), int(m.group(4))
    if max(a, b) >= 2**31:
        return op, None, None
    src, dst = (a, b) if m.group(3) == "->" else (b, a)
    return m.group(1), src, dst


def call_site(frame_lines: list[str]) -> str:
    """The innermost frame outside torch itself: where the user's code called."""
    for line in frame_lines:
        path = line.replace("\\", "/")
        if not any(marker in path for marker in _TORCH_INTERNAL):
            return line
    return frame_lines[-1] if frame_lines else ""


def _stack_codes(frames_col: list) -> tuple[np.ndarray, list]:
    """Codes of stacks made of the same frame objects, and the first stack of each code.

    The writer memoizes frame dicts, so in a dump the same frame is the same object. By
    identity, never by ``==``: equal-looking frames (``line`` 1 and True) must each be
    checked and printed, and comparing shared nested values can take exponential time.
    """
    keys = [tuple(map(id, f)) if type(f) is list else id(f) for f in frames_col]
    seen: dict[Any, int] = {}
    codes = np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int32)
    first_of_code = np.unique(codes, return_index=True)[1] if len(codes) else []
    return codes, [frames_col[i] for i in first_of_code]


class _Stacks:
    """Distinct call stacks of one file.

    The writer memoizes frame dicts, so in a dump the same frame is the same object:
    a stack is first keyed by the ids of its frames, and its text and hash are built
    once per distinct stack, not once per entry.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.rows: dict[int, tuple[int, str, str]] = {}

    def encode(self, codes: np.ndarray, distinct: list) -> tuple[pa.Array, pa.DictionaryArray]:
        """Stack ids and call sites per entry (from grouped stacks, as EntryFields.stacks gives
        them); text and hash are built once per distinct stack."""
        ids: list[int] = []
        sites: list[str | None] = []
        for frames in distinct:
            if frames is None:
                ids.append(0)
                sites.append(None)
            else:
                sid, site = self._add(frames)
                ids.append(sid)
                sites.append(site)
        is_null = np.array([f is None for f in distinct] or [False])
        values = np.array(ids or [0], dtype=np.int64)[codes] if len(codes) else np.zeros(0, np.int64)
        mask = is_null[codes] if len(codes) else None
        return pa.array(values, mask=mask, type=pa.int64()), _dict_array(codes, sites)

    def _add(self, frames: Any) -> tuple[int, str]:
        if type(frames) is not list:
            raise DumpFormatError(f"'frames' is {_describe(frames)}, expected a list")
        if len(frames) > self.limits.max_frames:
            raise DumpFormatError(f"an entry has {len(frames)} frames")
        lines = []
        for f in frames:
            if type(f) is not dict:
                raise DumpFormatError(f"a frame is {_describe(f)}, expected a dict")
            name, filename, line = f.get("name"), f.get("filename"), f.get("line")
            if type(name) is not str or type(filename) is not str or len(name) + len(filename) > 8192:
                raise DumpFormatError("a frame has no short string name and filename")
            if line is not None and (type(line) is not int or not -(2**63) <= line < 2**63):
                raise DumpFormatError(f"a frame's line is {_describe(line)}")
            lines.append(f"{filename}:{line} in {name}")
        text = "\n".join(lines)
        digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest()
        sid = int.from_bytes(digest, "little", signed=True)
        if sid not in self.rows:
            self.rows[sid] = (len(lines), text, call_site(lines))
        return sid, self.rows[sid][2]


_REQUIRED_KEYS = (s.SEQ, s.PG_ID, "process_group", "profiling_name", "state")


class EntryFields(Protocol):
    """Where the entries' columns come from: the decoded entry dicts (:class:`DictFields`)
    or the native scanner (``analysis.native``). Object-valued fields come grouped:
    ``(codes, distinct)``, each entry's value being ``distinct[code]``, equal values
    possibly in several groups; every check then runs once per group."""

    n: int

    def require(self, keys: tuple[str, ...]) -> None:
        """Raise DumpFormatError naming the first entry that lacks one of ``keys``."""

    def ints(self, key: str, nullable: bool) -> pa.Array:
        """An integer field as int64; missing is None (an error unless ``nullable``)."""

    def times(self, key: str) -> pa.Array:
        """A time in ns as int64, null where missing or not positive."""

    def groups(self, key: str, default: Any = None) -> tuple[np.ndarray, list]:
        """An object field, grouped; ``default`` where an entry lacks it."""

    def stacks(self) -> tuple[np.ndarray, list]:
        """The ``frames`` field grouped by stack (missing: None)."""


class DictFields:
    """Fields of the entry dicts a full decode returns."""

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.n = len(entries)

    def require(self, keys: tuple[str, ...]) -> None:
        entries = self.entries
        if set(map(type, entries)) - {dict}:
            i = _first_bad(entries, lambda e: type(e) is dict)
            raise DumpFormatError(f"entry {i} is {_describe(entries[i])}, expected a dict")
        for key in keys:
            _required_column(self.entries, key)

    def ints(self, key: str, nullable: bool) -> pa.Array:
        return _int_array(_column(self.entries, key), key, nullable)

    def times(self, key: str) -> pa.Array:
        return _time_array(_column(self.entries, key), key)

    def groups(self, key: str, default: Any = None) -> tuple[np.ndarray, list]:
        return _by_identity(_column(self.entries, key, default))

    def stacks(self) -> tuple[np.ndarray, list]:
        return _stack_codes(_column(self.entries, "frames"))


def _entries_table(rank: int, fields: EntryFields, limits: Limits, stacks: _Stacks) -> pa.Table:
    n = fields.n
    if n > limits.max_entries:
        raise DumpFormatError(f"{n} entries, more than the limit of {limits.max_entries}")
    fields.require(_REQUIRED_KEYS)

    pg_codes, pg_distinct = _merge_codes(*fields.groups("process_group"), "process_group", _tuple_if_list)
    for v in pg_distinct:
        if type(v) is not tuple or len(v) != 2 or not all(type(x) is str and len(x) <= 4096 for x in v):
            raise DumpFormatError(f"'process_group' holds {_describe(v)}, expected (name, desc)")

    name_codes, names = _string_codes(*fields.groups("profiling_name"), "profiling_name")
    if None in names:
        raise DumpFormatError("an entry's 'profiling_name' is None")
    parsed = [_parse_op(x) for x in names]
    src = np.array([-1 if p[1] is None else p[1] for p in parsed] or [0], dtype=np.int64)[name_codes]

    state_codes, states = _string_codes(*fields.groups("state"), "state")
    for st in states:
        if st not in s.STATES:
            raise DumpFormatError(f"'state' holds {_describe(st)}, expected one of {s.STATES}")

    retired = _flags(*fields.groups("retired", False), "retired", nullable=False)
    is_p2p = _flags(*fields.groups("is_p2p"), "is_p2p", nullable=True) | (src >= 0)

    in_codes, in_texts = _sizes(*fields.groups("input_sizes", []), "input_sizes", limits)
    dt_codes, dt_texts = _dtypes(*fields.groups("input_dtypes", []), "input_dtypes")
    stack_ids, sites = stacks.encode(*fields.stacks())

    columns = {
        s.RANK: pa.array(np.full(n, rank, dtype=np.int32)),
        s.ENTRY_INDEX: pa.array(np.arange(n, dtype=np.int32)),
        s.RECORD_ID: fields.ints("record_id", nullable=True),
        s.PG_ID: _int32_array(fields.ints(s.PG_ID, nullable=False), s.PG_ID),
        s.PG_NAME: _dict_array(pg_codes, [v[0] for v in pg_distinct]),
        s.PG_DESC: _dict_array(pg_codes, [v[1] for v in pg_distinct]),
        s.SEQ: fields.ints(s.SEQ, nullable=False),
        s.P2P_SEQ: fields.ints(s.P2P_SEQ, nullable=True),
        s.IS_P2P: pa.array(is_p2p),
        s.PROFILING_NAME: _dict_array(name_codes, names),
        s.OP: _dict_array(name_codes, [p[0] for p in parsed]),
        s.INPUT_SIZES: _dict_array(in_codes, in_texts),
        s.INPUT_DTYPES: _dict_array(dt_codes, dt_texts),
        s.STATE: _dict_array(state_codes, states),
        s.RETIRED: pa.array(retired),
        s.T_CREATED: fields.times("time_created_ns"),
        s.STACK_ID: stack_ids,
        s.CALL_SITE: sites,
    }
    return pa.table(columns, schema=s.ENTRY_SCHEMA)


def _flags(codes: np.ndarray, objs: list, key: str, nullable: bool) -> np.ndarray:
    """A bool field from grouped values: True where the value is True (None allowed if nullable)."""
    bad = [c for c, v in enumerate(objs) if type(v) is not bool and not (nullable and v is None)]
    if bad:
        i = _first_entry(codes, bad)
        raise DumpFormatError(f"entry {i} '{key}' is {_describe(objs[codes[i]])}, expected a bool")
    return np.array([v is True for v in objs] or [False], dtype=bool)[codes] if len(codes) else np.zeros(0, bool)


_DIGITS = re.compile(r"\d+")


def _names_rank_above(text: str, max_rank: int) -> bool:
    """Whether ``text`` writes an integer above ``max_rank``; converts only when a number is long enough."""
    numbers = _DIGITS.findall(text)
    if not numbers or max(map(len, numbers)) < len(str(max_rank)):
        return False
    return any(len(n) > 18 for n in numbers) or max(map(int, numbers)) > max_rank


_RANK_LISTS_SEEN: dict[tuple[str, int], bool] = {}
"""Rank lists this process already checked: every rank's dump repeats the default
group's list (100 KB at 16k ranks), and scanning it per file made loading quadratic."""


def _names_rank_above_cached(text: str, max_rank: int) -> bool:
    if not 256 <= len(text) <= 1 << 20:  # short ones are cheap; huge ones are not kept
        return _names_rank_above(text, max_rank)
    key = (text, max_rank)
    if key not in _RANK_LISTS_SEEN:
        if len(_RANK_LISTS_SEEN) >= 256:
            _RANK_LISTS_SEEN.clear()
        _RANK_LISTS_SEEN[key] = _names_rank_above(text, max_rank)
    return _RANK_LISTS_SEEN[key]


def _configs_table(rank: int, pg_config: Any, limits: Limits) -> pa.Table:
    if pg_config is None:
        pg_config = {}
    if type(pg_config) is not dict:
        raise DumpFormatError(f"'pg_config' is {_describe(pg_config)}, expected a dict")
    if len(pg_config) > limits.max_groups:
        raise DumpFormatError(f"'pg_config' lists {len(pg_config)} groups")
    names, descs, ranks = [], [], []
    text_left = limits.max_file_bytes  # shared strings must not multiply into gigabytes
    for key, cfg in pg_config.items():
        if type(cfg) is not dict:
            raise DumpFormatError(f"pg_config[{_text(key, 40)!r}] is {_describe(cfg)}, expected a dict")
        name = cfg.get("name", key)
        ranks_value = cfg.get("ranks", "")
        if type(ranks_value) is list:
            if not set(map(type, ranks_value)) <= {int}:
                raise DumpFormatError(f"pg_config[{_text(key, 40)!r}] 'ranks' is not a list of integers")
            ranks_value = repr(ranks_value) if max(map(abs, ranks_value), default=0) < 10**30 else "?"
        if type(name) is not str or type(ranks_value) is not str:
            raise DumpFormatError(f"pg_config[{_text(key, 40)!r}] has a non-string name or ranks")
        if _names_rank_above_cached(ranks_value, limits.max_rank):
            raise DumpFormatError(f"pg_config[{_text(key, 40)!r}] names a rank above {limits.max_rank}")
        if name == "" and ranks_value in ("", "[]"):
            continue  # gloo writes one empty placeholder group
        desc = cfg.get("desc", "")
        text_left -= len(name) + len(ranks_value) + (len(desc) if type(desc) is str else 0)
        if text_left < 0:
            raise DumpFormatError(f"'pg_config' holds more than {limits.max_file_bytes} characters")
        names.append(name)
        descs.append(desc if type(desc) is str else "")
        ranks.append(ranks_value)
    return pa.table(
        {s.RANK: pa.array([rank] * len(names), pa.int32()), s.PG_NAME: names, s.PG_DESC: descs, s.RANKS: ranks},
        schema=s.CONFIG_SCHEMA,
    )


def _status_table(rank: int, pg_status: Any, limits: Limits) -> pa.Table:
    if pg_status is None:
        pg_status = {}
    if type(pg_status) is not dict:
        raise DumpFormatError(f"'pg_status' is {_describe(pg_status)}, expected a dict")
    if len(pg_status) > limits.max_groups:
        raise DumpFormatError(f"'pg_status' lists {len(pg_status)} groups")
    rows: dict[str, list] = {s.PG_ID: [], s.LAST_ENQUEUED: [], s.LAST_STARTED: [], s.LAST_COMPLETED: []}
    for key, st in pg_status.items():
        if type(st) is not dict:
            raise DumpFormatError(f"pg_status[{_text(key, 40)!r}] is {_describe(st)}, expected a dict")
        rows[s.PG_ID].append(_text(key, 64))
        for col, raw in (
            (s.LAST_ENQUEUED, "last_enqueued_collective"),
            (s.LAST_STARTED, "last_started_collective"),
            (s.LAST_COMPLETED, "last_completed_collective"),
        ):
            v = st.get(raw)
            rows[col].append(None if v is None else _require_int(v, f"pg_status[{_text(key, 40)!r}] '{raw}'"))
    rows[s.RANK] = [rank] * len(rows[s.PG_ID])
    return pa.table(rows, schema=s.STATUS_SCHEMA)


def parse_dump(
    raw: Any, rank: int, file: str, fmt: str, limits: Limits = DEFAULT_LIMITS, fields: EntryFields | None = None
) -> FileTables:
    """Validate one decoded dump and convert it to tables; raise DumpFormatError if malformed.

    ``fields``, when given, are the entries' columns, read without decoding the entries
    (``raw["entries"]`` is then only a placeholder).
    """
    if type(raw) is not dict:
        raise DumpFormatError(f"top level is {_describe(raw)}, expected a dict")
    entries = raw.get("entries", [])
    if type(entries) is not list:
        raise DumpFormatError(f"'entries' is {_describe(entries)}, expected a list")
    if "version" not in raw and "pg_config" not in raw and "entries" not in raw:
        raise DumpFormatError("no 'version', 'pg_config' or 'entries': not a Flight Recorder dump")
    if not 0 <= rank <= limits.max_rank:
        raise DumpFormatError(f"rank {rank} is above the limit of {limits.max_rank}")
    version = raw.get("version", "")
    comm = raw.get("comm_lib_version", raw.get("nccl_version", ""))
    stack_index = _Stacks(limits)
    fields = DictFields(entries) if fields is None else fields
    table = _entries_table(rank, fields, limits, stack_index)
    rows = stack_index.rows
    stacks = pa.table(
        {
            s.STACK_ID: pa.array(list(rows), pa.int64()),
            s.NUM_FRAMES: pa.array([r[0] for r in rows.values()], pa.int32()),
            s.FRAMES: [r[1] for r in rows.values()],
            s.CALL_SITE: [r[2] for r in rows.values()],
        },
        schema=s.STACK_SCHEMA,
    )
    meta = pa.table(
        {
            s.RANK: pa.array([rank], pa.int32()),
            s.FILE: [file],
            s.FORMAT: [fmt],
            s.VERSION: [_text(version, 16)],
            s.COMM_LIB_VERSION: [_text(comm, 64)],
            s.NUM_ENTRIES: pa.array([fields.n], pa.int64()),
        },
        schema=s.RANK_SCHEMA,
    )
    return FileTables(
        entries=table,
        stacks=stacks,
        configs=_configs_table(rank, raw.get("pg_config"), limits),
        status=_status_table(rank, raw.get("pg_status"), limits),
        meta=meta,
    )
