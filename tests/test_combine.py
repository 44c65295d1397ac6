"""Combining per-file tables keeps every value: the narrow codes and stack numbers decode
to what each file said."""

from __future__ import annotations

import pyarrow as pa
import pytest
from locations import SAMPLE_DUMPS

from analysis import schema as s
from analysis.combine import _DictionaryColumn, combine_tables
from analysis.discover import discover
from analysis.load import load_one

TEXT = [f.name for f in s.ENTRY_SCHEMA if pa.types.is_dictionary(f.type)]
PLAIN = [f.name for f in s.ENTRY_SCHEMA if f.name not in TEXT and f.name != s.STACK_ID]


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


def test_text_codes_widen_past_the_narrow_range() -> None:
    column = _DictionaryColumn()
    first = [f"v{i}" for i in range(30_000)]
    second = [f"w{i}" for i in range(10_000)] + [None, "v7"]
    column.add(pa.chunked_array([pa.array(first).dictionary_encode()]))
    column.add(pa.chunked_array([pa.array(second).dictionary_encode()]))
    out = column.finish()
    assert out.indices.type == pa.int32()
    assert out.to_pylist() == first + second
