"""Reduce step: per-file tables into one set of narrow tables, one file at a time.

Each file's tables are folded in as they arrive and then dropped (the parent never holds
the files' tables and the combined ones at once); folding in makes them narrow:

- text columns become codes into one dictionary for the whole set, one byte a row
  (two past 127 distinct values, four past 32,767);
- call stacks are kept once per distinct stack, and entries refer to them by a dense
  int32 number instead of the per-file 64-bit hash;
- each distinct pg_config rank list is kept once (every rank's dump repeats the
  default group's list, so kept per file they grow with ranks squared).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import schema as s
from ..ingest.process_limits import KEPT_FREE_BYTES
from ..types import FileTables

_CODE_TYPES = (np.int8, np.int16, np.int32)
"""The codes of a text column: the narrowest that holds every code so far (one byte a row
below 128 values, as the frame's categoricals: 8 bytes a row less while loading)."""


class _DictionaryColumn:
    """One text column of every file, as codes into a dictionary shared by all files."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.chunks: list[np.ndarray] = []

    def add(self, column: pa.ChunkedArray) -> None:
        for chunk in column.chunks:
            if not pa.types.is_dictionary(chunk.type):
                chunk = chunk.dictionary_encode()
            remap = np.array([self.values.setdefault(v, len(self.values)) for v in chunk.dictionary.to_pylist()] + [-1])
            indices = chunk.indices
            indices = (indices.fill_null(len(remap) - 1) if indices.null_count else indices).to_numpy(
                zero_copy_only=False
            )
            dtype = next(t for t in _CODE_TYPES if len(self.values) <= np.iinfo(t).max)
            if self.chunks and self.chunks[0].dtype != dtype:  # the dictionary outgrew the codes so far
                self.chunks = [c.astype(dtype) for c in self.chunks]
            self.chunks.append(remap.astype(dtype)[indices])

    def finish(self) -> pa.DictionaryArray:
        codes = np.concatenate(self.chunks) if self.chunks else np.zeros(0, _CODE_TYPES[0])
        self.chunks = []
        nulls = codes < 0
        index_type = pa.from_numpy_dtype(codes.dtype)
        indices = pa.array(
            np.where(nulls, 0, codes) if nulls.any() else codes, type=index_type, mask=nulls if nulls.any() else None
        )
        return pa.DictionaryArray.from_arrays(indices, pa.array(list(self.values), pa.string()))


class _Stacks:
    """Distinct call stacks of every file, numbered 0.. in first-seen order."""

    def __init__(self) -> None:
        self.number: dict[int, int] = {}
        self.rows: list[pa.Table] = []

    def add(self, stacks: pa.Table) -> None:
        hashes = stacks.column(s.STACK_ID).to_pylist()
        new = [i for i, h in enumerate(hashes) if h not in self.number]
        for i in new:
            self.number[hashes[i]] = len(self.number)
        if new:
            self.rows.append(stacks.take(new))

    def renumber(self, stack_ids: pa.ChunkedArray) -> pa.Array:
        """Per-file stack hashes -> the set's stack numbers (nulls stay null)."""
        hashes = stack_ids.combine_chunks()
        distinct = pc.unique(hashes.drop_null()).to_pylist()
        numbers = pa.array([self.number[h] for h in distinct], pa.int32())
        return pc.take(numbers, pc.index_in(hashes, value_set=pa.array(distinct, pa.int64())))

    def finish(self) -> pa.Table:
        table = pa.concat_tables(self.rows) if self.rows else s.STACK_SCHEMA.empty_table()
        numbers = pa.array([self.number[h] for h in table.column(s.STACK_ID).to_pylist()], pa.int32())
        return table.set_column(table.schema.get_field_index(s.STACK_ID), s.STACK_ID, numbers)


class RankLists:
    """One copy of each distinct pg_config rank list across all files."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def encode(self, configs: pa.Table) -> pa.Table:
        """Rank-list text (plain, or dictionary-encoded as merge_parts sends it) -> int32 id."""
        where = configs.schema.get_field_index(s.RANKS)
        chunks = []
        for chunk in configs.column(where).chunks:
            if not pa.types.is_dictionary(chunk.type):
                chunk = chunk.dictionary_encode()  # each distinct list is hashed once
            ids = np.array([self._ids.setdefault(t, len(self._ids)) for t in chunk.dictionary.to_pylist()] + [0])
            chunks.append(ids.astype(np.int32)[chunk.indices.to_numpy(zero_copy_only=False)])
        ids = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
        return configs.set_column(where, s.RANKS, pa.array(ids, pa.int32()))

    def decode(self, configs: pa.Table) -> pa.Table:
        """Ids -> a dictionary column whose dictionary holds each distinct list once."""
        where = configs.schema.get_field_index(s.RANKS)
        ids = configs.column(where).combine_chunks()
        texts = pa.array(list(self._ids), pa.string())
        return configs.set_column(where, s.RANKS, pa.DictionaryArray.from_arrays(ids, texts))


class TablesBuilder:
    """Folds in one file's tables at a time; :meth:`finish` gives the combined tables."""

    def __init__(self) -> None:
        self._text = {f.name: _DictionaryColumn() for f in s.ENTRY_SCHEMA if pa.types.is_dictionary(f.type)}
        self._plain: dict[str, list[pa.Array]] = {
            f.name: [] for f in s.ENTRY_SCHEMA if f.name not in self._text and f.name not in _DERIVED
        }
        self._stack_numbers: list[pa.Array] = []
        self._stacks = _Stacks()
        self._rank_lists = RankLists()
        self._small: dict[str, list[pa.Table]] = {"configs": [], "status": [], "meta": []}

    def add(self, part: FileTables) -> None:
        entries = part.entries
        for name, column in self._text.items():
            column.add(entries.column(name))
        for name, chunks in self._plain.items():
            # copied: a part read from a worker's message shares one buffer among its columns,
            # and a slice kept here would keep all of it until finish (4,096 ranks: +0.2 GB)
            if kept := entries.column(name).chunks:
                chunk = pa.concat_arrays(kept)
                chunks.append(_narrow_small(chunk) if name in _SMALL else chunk)
        self._stacks.add(part.stacks)
        self._stack_numbers.append(_narrow_small(self._stacks.renumber(entries.column(s.STACK_ID))))
        # copied too: kept as they are, these small tables would keep each part's message
        # (its rank lists, its stream) until the analysis ends (4,096 ranks: 40 MB)
        self._small["configs"].append(_copied(self._rank_lists.encode(part.configs)))
        self._small["status"].append(_copied(part.status))
        self._small["meta"].append(_copied(part.meta))

    def finish(self) -> dict[str, pa.Table]:
        """The combined tables; call once, after the last file."""
        plain, self._plain = self._plain, {name: [] for name in self._plain}
        stack_numbers, self._stack_numbers = self._stack_numbers, []
        columns: dict[str, pa.Array] = {}
        freed = 0
        for field in s.ENTRY_SCHEMA:  # one contiguous array each: numpy views need no concatenation
            if field.name == s.ENTRY_INDEX:
                continue  # see _DERIVED
            if field.name in self._text:
                columns[field.name] = self._text[field.name].finish()
            elif field.name == s.STACK_ID:
                columns[field.name] = _joined(stack_numbers, pa.int32())
                stack_numbers.clear()
            elif field.name in _NARROWABLE:  # parts may come narrowed (merge_parts) or not
                chunks = plain.pop(field.name)
                if chunks and all(c.type == pa.int32() for c in chunks):
                    columns[field.name] = pa.chunked_array(chunks, pa.int32()).combine_chunks()
                else:
                    wide = [c.cast(pa.int64()) for c in chunks]
                    columns[field.name] = _narrow(pa.chunked_array(wide, pa.int64()).combine_chunks())
            elif field.name in _SMALL:
                columns[field.name] = _joined(plain.pop(field.name), field.type)
            else:
                columns[field.name] = pa.chunked_array(plain.pop(field.name), field.type).combine_chunks()
            # the parts' buffers of this column are free now (about its size): handed back in bulk
            freed += columns[field.name].nbytes
            if freed >= KEPT_FREE_BYTES:
                return_freed_memory()
                freed = 0
        configs = self._small["configs"] or [RankLists().encode(s.CONFIG_SCHEMA.empty_table())]
        return {
            "entries": pa.table(columns),
            "stacks": self._stacks.finish(),
            "configs": self._rank_lists.decode(pa.concat_tables(configs)),
            "status": pa.concat_tables(self._small["status"] or [s.STATUS_SCHEMA.empty_table()]),
            "files": pa.concat_tables(self._small["meta"] or [s.RANK_SCHEMA.empty_table()]),
        }


def _copied(table: pa.Table) -> pa.Table:
    """``table`` in buffers of its own (a take allocates every column anew)."""
    return table.take(pa.array(np.arange(table.num_rows, dtype=np.int64)))


_NARROWABLE = (s.RECORD_ID, s.SEQ, s.P2P_SEQ)
"""Ids written as 64-bit that real dumps keep far below 2**31: int32 when they fit."""


_SMALL = (s.RANK, s.PG_ID)
"""Numbers that stay small in real dumps (the rank below 32,768 processes, a process-local
group id), like the stack numbers: int16 when every part's values fit, while folding and
in the frame, two bytes a row less each (and the stacks'); int32 when one does not."""

_DERIVED = (s.STACK_ID, s.ENTRY_INDEX)
"""Entry columns of the files' tables not kept as they come: the stack ids are renumbered,
and the entry index (each entry's place in its file) is not kept at all: the files table
holds each file's number of entries, in the entries' order (``rowindex.entry_positions``)."""


def _narrow_to(column: pa.Array, narrow: pa.DataType) -> pa.Array:
    """An integer column as the signed type ``narrow`` when every value fits (nulls stay
    null), else as it is."""
    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    limit = 2 ** (narrow.bit_width - 1)
    if low is None or (-limit <= low and high < limit):
        return column.cast(narrow)
    return column


def _joined(chunks: list[pa.Array], wide: pa.DataType) -> pa.Array:
    """Folded chunks as one array: int16 where every chunk is (and where there is none),
    else all as ``wide``."""
    if all(c.type == pa.int16() for c in chunks):
        return pa.chunked_array(chunks, pa.int16()).combine_chunks()
    return pa.chunked_array([c.cast(wide) for c in chunks], wide).combine_chunks()


def _narrow_small(column: pa.Array) -> pa.Array:
    """An int32 column as int16 when every value fits, else as it is."""
    return _narrow_to(column, pa.int16())


def _narrow(column: pa.Array) -> pa.Array:
    """An int64 column as int32 when every value fits, else as it is."""
    return _narrow_to(column, pa.int32())


def return_freed_memory() -> None:
    """Hand memory freed by loading back to the OS before more is allocated.

    Arrow's allocator and glibc's heap both keep what was freed (the per-file tables, the
    pool's transfer buffers): at 4,096 ranks about 0.9 GB that would otherwise add to the
    analysis' peak. Callers hand memory back once at least KEPT_FREE_BYTES is free: less
    is kept for reuse (see ``process_limits.reuse_freed_memory``), as its pages would
    only be faulted in again.
    """
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # glibc only; elsewhere there is no such call
    except (OSError, AttributeError):
        pass


def merge_parts(parts: list[FileTables]) -> FileTables:
    """Several files' tables as one part, ready for :meth:`TablesBuilder.add`.

    The reduce is associative: a worker merges a batch of files before sending it, so the
    parent folds in one part per batch, and its per-column work is paid once per batch
    instead of once per file. The part is also made small to send: text columns get one
    dictionary per batch with 16-bit codes, ids 32 bits where they fit, stacks and rank
    lists (every file repeats the default group's list, 100 KB at 16k ranks) once per batch.
    """
    entries = pa.concat_tables([p.entries for p in parts]).unify_dictionaries().combine_chunks()
    if s.ENTRY_INDEX in entries.column_names:  # the combined table does not keep it (see _DERIVED)
        entries = entries.drop_columns([s.ENTRY_INDEX])
    for name in entries.column_names if entries.num_rows else ():
        column = entries.column(name).chunks[0]
        if pa.types.is_dictionary(column.type) and len(column.dictionary) <= np.iinfo(np.int16).max:
            narrow = pa.DictionaryArray.from_arrays(column.indices.cast(pa.int16()), column.dictionary)
            entries = entries.set_column(entries.schema.get_field_index(name), name, narrow)
        elif name in _NARROWABLE:
            entries = entries.set_column(entries.schema.get_field_index(name), name, _narrow(column))
    stacks = pa.concat_tables([p.stacks for p in parts])
    _, first = np.unique(stacks.column(s.STACK_ID).to_numpy(), return_index=True)
    configs = pa.concat_tables([p.configs for p in parts])
    where = configs.schema.get_field_index(s.RANKS)
    return FileTables(
        entries=entries,
        stacks=stacks.take(np.sort(first)),
        configs=configs.set_column(where, s.RANKS, configs.column(where).combine_chunks().dictionary_encode()),
        status=pa.concat_tables([p.status for p in parts]),
        meta=pa.concat_tables([p.meta for p in parts]),
    )


def combine_tables(parts: Iterable[FileTables]) -> dict[str, pa.Table]:
    """Combine per-file tables (see :class:`TablesBuilder`)."""
    builder = TablesBuilder()
    for part in parts:
        builder.add(part)
    return builder.finish()


def with_columns_of(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with every column of ``schema`` it lacks added as nulls (tables an older
    version stored), in the schema's order."""
    missing = [f for f in schema if f.name not in table.column_names]
    for f in missing:
        table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    return table.select([f.name for f in schema]) if missing else table
