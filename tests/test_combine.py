"""Combining per-file tables keeps every value: the narrow codes and stack numbers decode
to what each file said."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pyarrow as pa
import pytest
from locations import SAMPLE_DUMPS

from analysis import schema as s
from analysis.ingest.discover import discover
from analysis.tables.combine import TablesBuilder, _DictionaryColumn, _narrow, combine_tables, merge_parts
from analysis.tables.load import load_one
from analysis.tables.mapstep import load_batch, pack, unpack
from analysis.tables.rowindex import entry_positions

TEXT = [f.name for f in s.ENTRY_SCHEMA if pa.types.is_dictionary(f.type)]
PLAIN = [f.name for f in s.ENTRY_SCHEMA if f.name not in TEXT and f.name not in (s.STACK_ID, s.ENTRY_INDEX)]


@pytest.mark.parametrize("case", ["size_mismatch", "p2p_unposted", "large_32_stuck"])
def test_combined_tables_decode_to_the_files(case: str) -> None:
    files, _ = discover(SAMPLE_DUMPS / case)
    parts = [load_one(f) for f in files]
    combined = combine_tables(parts)
    entries = combined["entries"]
    assert entries.num_rows == sum(p.entries.num_rows for p in parts)
    for name in TEXT + PLAIN:
        expected = [v for p in parts for v in p.entries.column(name).to_pylist()]
        assert entries.column(name).to_pylist() == expected, name
    # not kept: each entry's place in its file follows from the files' entry counts
    assert s.ENTRY_INDEX not in entries.column_names
    places = [v for p in parts for v in p.entries.column(s.ENTRY_INDEX).to_pylist()]
    assert entry_positions(combined["files"].to_pandas()).tolist() == places
    rows = np.array([0, len(places) // 2, len(places) - 1])
    assert entry_positions(combined["files"].to_pandas(), rows).tolist() == [places[r] for r in rows]

    frames_of = dict(
        zip(combined["stacks"].column(s.STACK_ID).to_pylist(), combined["stacks"].column(s.FRAMES).to_pylist())
    )
    assert len(frames_of) == combined["stacks"].num_rows  # each stack once
    got = [frames_of.get(n) for n in entries.column(s.STACK_ID).to_pylist()]
    expected = []
    for p in parts:
        text_of = dict(zip(p.stacks.column(s.STACK_ID).to_pylist(), p.stacks.column(s.FRAMES).to_pylist()))
        expected += [text_of.get(h) for h in p.entries.column(s.STACK_ID).to_pylist()]
    assert got == expected

    ranks = sorted(combined["files"].column(s.RANK).to_pylist())
    assert ranks == sorted(f.rank for f in files)
    rank_lists = [v for p in parts for v in p.configs.column(s.RANKS).to_pylist()]
    assert combined["configs"].column(s.RANKS).to_pylist() == rank_lists


def _combined(first: list[str], second: list[str | None]) -> pa.Array:
    """A text column of two parts, ``first`` then ``second``, each dictionary-encoded."""
    column = _DictionaryColumn()
    column.add(pa.chunked_array([pa.array(first).dictionary_encode()]))
    column.add(pa.chunked_array([pa.array(second).dictionary_encode()]))
    return column.finish()


def test_text_codes_widen_past_the_narrow_range() -> None:
    first = [f"v{i}" for i in range(30_000)]
    second = [f"w{i}" for i in range(10_000)] + [None, "v7"]
    out = _combined(first, second)
    assert out.indices.type == pa.int32()
    assert out.to_pylist() == first + second


def test_text_codes_take_one_byte_until_the_dictionary_outgrows_it() -> None:
    column = _DictionaryColumn()
    column.add(pa.chunked_array([pa.array([f"v{i}" for i in range(100)] + [None]).dictionary_encode()]))
    assert column.chunks[0].dtype == np.int8
    small = column.finish()
    assert small.indices.type == pa.int8() and small.null_count == 1
    first = [f"v{i}" for i in range(100)]
    second = [f"w{i}" for i in range(100)] + [None, "v7"]
    out = _combined(first, second)
    assert out.indices.type == pa.int16()
    assert out.to_pylist() == first + second


def _decoded(tables: dict[str, pa.Table]) -> dict[str, list]:
    """Every entry column as plain values, stack numbers replaced by the stack's text."""
    entries = tables["entries"]
    text_of = dict(zip(tables["stacks"].column(s.STACK_ID).to_pylist(), tables["stacks"].column(s.FRAMES).to_pylist()))
    out = {name: entries.column(name).to_pylist() for name in entries.column_names if name != s.STACK_ID}
    out[s.STACK_ID] = [text_of.get(n) for n in entries.column(s.STACK_ID).to_pylist()]
    out["configs"] = tables["configs"].to_pylist()
    out["files"] = tables["files"].to_pylist()
    return out


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_batches_merged_in_workers_combine_to_the_same_tables(batch: int) -> None:
    """The reduce is associative: parts merged per batch give the tables per-file parts give."""
    files = [f for case in ("size_mismatch", "large_32_stuck") for f in discover(SAMPLE_DUMPS / case)[0]]
    parts = [load_one(f) for f in files]
    merged = [merge_parts(parts[i : i + batch]) for i in range(0, len(parts), batch)]
    if batch > 1:
        assert len(merged) < len(parts)
        assert merged[0].entries.num_rows == sum(p.entries.num_rows for p in parts[:batch])
        assert len(set(merged[0].stacks.column(s.STACK_ID).to_pylist())) == merged[0].stacks.num_rows
    assert _decoded(combine_tables(merged)) == _decoded(combine_tables(parts))


def test_narrow_ids_stay_wide_when_they_do_not_fit() -> None:
    assert _narrow(pa.array([0, 2**31 - 1], pa.int64())).type == pa.int32()
    assert _narrow(pa.array([None, None], pa.int64())).type == pa.int32()
    wide = _narrow(pa.array([-1, 2**31], pa.int64()))
    assert wide.type == pa.int64() and wide.to_pylist() == [-1, 2**31]


def test_a_part_read_from_a_message_is_not_kept_once_folded_in() -> None:
    """A worker's part arrives as one message per table, which its columns share: the
    builder keeps copies, so the message is freed once the part is folded in."""
    files, _ = discover(SAMPLE_DUMPS / "large_32_stuck")
    errors, streams = pack(load_batch(files[:8]))
    assert streams is not None
    entries_message = streams[0]
    unreferenced = sys.getrefcount(entries_message)
    part, _ = unpack((errors, streams))
    assert sys.getrefcount(entries_message) > unreferenced  # the columns read the message in place
    builder = TablesBuilder()
    builder.add(part)
    del part
    gc.collect()
    assert sys.getrefcount(entries_message) == unreferenced
    assert builder.finish()["entries"].num_rows == sum(load_one(f).entries.num_rows for f in files[:8])
