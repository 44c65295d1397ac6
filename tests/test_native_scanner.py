"""The native scanner (``analysis/ingest/_frscan.c`` through ``analysis.native``) against the full path.

The contract: for ANY file, ``read_dump`` gives the same result whether the scanner is
used or not: equal tables (dictionary columns compared by value, the stacks table as a
set of rows) or a DumpReadError with the same message. The scanner never crashes, hangs,
runs code or takes memory out of proportion to its input; for anything unusual it
returns None and the full path decides.

Every check reads a file both ways (:func:`assert_same_both_ways`) and, where a test
expects it, also says whether the native path was taken. Inputs: the committed sample
dumps and the NVRx fixtures, ordinary pickles of every protocol, generated dumps with
random oddities (hypothesis), byte-level mutations of a real dump, and the hostile
pickles of test_hostile_pickles.py / test_limits.py.

The tests at the end reproduce differences between the paths (and bugs both shared)
that this file found while it was written; each is fixed, and they keep it so.
"""

from __future__ import annotations

import contextlib
import faulthandler
import glob
import gzip
import io
import os
import pickle
import pickletools
import random
import re
import struct
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fr_versions import BASE_ENTRY_KEYS, SUPPORTED_VERSIONS, make_dump
from fuzzing import dag
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from locations import ROOT, SAMPLE_DUMPS, SHARED_FIXTURES
from test_hostile_pickles import hand_built, via_reduce

from analysis.ingest import native, read
from analysis.ingest.safe_pickle import load_plain_pickle
from analysis.types import DEFAULT_LIMITS, DumpReadError, FileTables, Limits

pytestmark = pytest.mark.skipif(not native.available(), reason="the native scanner is not built")

SAMPLE_FILES = sorted(glob.glob(str(SAMPLE_DUMPS / "*" / "rank_*")))
NVRX_FILES = sorted(glob.glob(str(SHARED_FIXTURES / "nvrx" / "*" / "_dump_*")))
PARTS = ("entries", "stacks", "configs", "status", "meta")
SCAN_SECONDS = 5.0
"""The most one native.scan of a small (mutated) input may take."""

HYPOTHESIS = settings(
    deadline=None,
    database=None,  # nothing written into the tree
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # tmp_path: each example overwrites one file
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# ------------------------------------------------------------------ reading both ways


@dataclass
class Outcome:
    kind: str  # "tables", "error" (DumpReadError) or "crash" (anything else escaped)
    value: Any  # FileTables or the message
    native_taken: bool | None = None  # whether native.scan returned columns in this read


def read_one_way(path: str | Path, rank: int, limits: Limits, use_native: bool) -> Outcome:
    """``read_dump`` with the scanner on or off (``native._frscan`` set to None)."""
    saved_module, real_scan = native._frscan, native.scan
    taken: list[bool] = []

    def spy(data: bytes, lim: Limits) -> Any:
        result = real_scan(data, lim)
        taken.append(result is not None)
        return result

    if use_native:
        native.scan = spy
    else:
        native._frscan = None
    try:
        outcome = Outcome("tables", read.read_dump(str(path), rank, limits))
    except DumpReadError as exc:
        outcome = Outcome("error", str(exc))
    except Exception as exc:  # noqa: BLE001 - an escape of anything else is the finding
        outcome = Outcome("crash", f"{type(exc).__name__}: {exc}"[:500])
    finally:
        native._frscan, native.scan = saved_module, real_scan
    outcome.native_taken = bool(taken and taken[-1])
    return outcome


def _by_value(table: pa.Table) -> pa.Table:
    columns = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names)


def _first_difference(x: pa.Table, y: pa.Table) -> str:
    if x.num_rows != y.num_rows:
        return f"{x.num_rows} rows vs {y.num_rows}"
    for name in x.column_names:
        if not x.column(name).equals(y.column(name)):
            xs, ys = x.column(name).to_pylist(), y.column(name).to_pylist()
            i = next((i for i, (p, q) in enumerate(zip(xs, ys)) if p != q), 0)
            return f"column {name!r} row {i}: native {xs[i]!r} vs full {ys[i]!r}"
    return "tables differ"


def table_differences(a: FileTables, b: FileTables) -> list[str]:
    """What differs between two results, by value; the stacks table compared as a set of rows."""
    out = []
    for part in PARTS:
        x, y = getattr(a, part), getattr(b, part)
        if x.schema != y.schema:
            out.append(f"{part}: schema\n{x.schema}\nvs\n{y.schema}")
            continue
        x, y = _by_value(x), _by_value(y)
        if part == "stacks":
            order = [(name, "ascending") for name in x.column_names]
            x, y = x.sort_by(order), y.sort_by(order)
        if not x.equals(y):
            out.append(f"{part}: {_first_difference(x, y)}")
    return out


def _show(o: Outcome) -> str:
    if o.kind == "tables":
        return f"tables ({o.value.entries.num_rows} entries, {o.value.configs.num_rows} groups)"
    return f"{o.kind}: {o.value}"


SURROGATE_ERROR = "not a valid Flight Recorder dump: text that is not valid Unicode"
"""What both paths say of a lone surrogate (pickle allows them, Arrow text does not)."""


def assert_same_both_ways(
    path: str | Path,
    rank: int = 0,
    limits: Limits = DEFAULT_LIMITS,
    *,
    native_taken: bool | None = None,
) -> Outcome:
    """Read ``path`` with the scanner and without; assert the same tables or the same
    DumpReadError message, no other exception either way, and (when ``native_taken`` is
    given) whether the scanner's columns were used. Returns the full path's outcome."""
    fast = read_one_way(path, rank, limits, use_native=True)
    full = read_one_way(path, rank, limits, use_native=False)
    assert full.kind != "crash", f"the full path raised {full.value}"
    assert fast.kind != "crash", f"the native path raised {fast.value} (full path: {_show(full)})"
    assert (fast.kind, fast.value if fast.kind == "error" else None) == (
        full.kind,
        full.value if full.kind == "error" else None,
    ), f"native path: {_show(fast)}\nfull path:   {_show(full)}"
    if fast.kind == "tables":
        differences = table_differences(fast.value, full.value)
        assert not differences, "\n".join(differences)
    if native_taken is not None:
        assert fast.native_taken is native_taken, f"native path taken: {fast.native_taken}, expected {native_taken}"
    return full


@pytest.fixture
def both_ways():
    """The both-ways check as a fixture: ``both_ways(path, rank, limits, native_taken=...)``."""
    return assert_same_both_ways


@contextlib.contextmanager
def watchdog(seconds: float):
    """A hang in C cannot be interrupted: past ``seconds`` the process prints its
    traceback and exits, so a hang fails the run instead of stalling it."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def timed_scan(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Any:
    """native.scan of ``data``: None or a (top, fields) pair, within SCAN_SECONDS."""
    with watchdog(60):
        t0 = time.perf_counter()
        result = native.scan(data, limits)
        seconds = time.perf_counter() - t0
    assert seconds < SCAN_SECONDS, f"native.scan took {seconds:.1f} s on {len(data)} bytes"
    assert result is None or (type(result) is tuple and len(result) == 2 and type(result[0]) is dict)
    return result


def _rank_of(path: str) -> int:
    return int(re.search(r"(\d+)(?:\.\w+)*$", os.path.basename(path)).group(1))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------ the comparison itself


def test_comparison_sees_a_changed_value(tmp_path: Path) -> None:
    """The helper is not vacuous: one changed cell, one missing stack or another message is seen."""
    path = _write(tmp_path / "rank_0", Path(SAMPLE_FILES[0]).read_bytes())
    a = read.read_dump(str(path), 0)
    b = read.read_dump(str(path), 0)
    assert table_differences(a, b) == []
    seq = b.entries.column("collective_seq_id").to_pylist()
    seq[-1] = (seq[-1] or 0) + 1
    seq_type = b.entries.schema.field("collective_seq_id").type
    b.entries = b.entries.set_column(
        b.entries.column_names.index("collective_seq_id"), "collective_seq_id", pa.array(seq, seq_type)
    )
    b.stacks = b.stacks.slice(1)
    found = table_differences(a, b)
    assert [d.split(":")[0] for d in found] == ["entries", "stacks"]
    names = a.entries.column("profiling_name")
    c = read.read_dump(str(path), 0)
    c.entries = c.entries.set_column(
        c.entries.column_names.index("profiling_name"), "profiling_name", names.cast(pa.string())
    )
    assert any("schema" in d for d in table_differences(a, c))


# ------------------------------------------------------------------ real dumps


def test_there_are_sample_dumps() -> None:
    assert len(SAMPLE_FILES) >= 50


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[os.path.relpath(p, SAMPLE_DUMPS) for p in SAMPLE_FILES])
def test_sample_dump_same_both_ways(path: str, both_ways) -> None:
    full = both_ways(path, _rank_of(path), native_taken=True)
    assert full.kind == "tables" and full.value.entries.num_rows > 0


@pytest.mark.skipif(not NVRX_FILES, reason="no ../shared/fixtures/nvrx")
@pytest.mark.parametrize(
    "path", NVRX_FILES or [""], ids=[os.path.relpath(p, SHARED_FIXTURES) for p in NVRX_FILES] or ["none"]
)
def test_nvrx_fixture_same_both_ways(path: str, both_ways) -> None:
    full = both_ways(path, _rank_of(path), native_taken=True)
    assert full.kind == "tables"


def test_gzipped_sample_dump(tmp_path: Path) -> None:
    source = max(SAMPLE_FILES, key=os.path.getsize)
    path = _write(tmp_path / "rank_3.gz", gzip.compress(Path(source).read_bytes()))
    full = assert_same_both_ways(path, 3, native_taken=True)
    assert full.kind == "tables" and full.value.entries.num_rows > 0


def test_sample_dump_over_the_size_limit(tmp_path: Path) -> None:
    data = Path(SAMPLE_FILES[0]).read_bytes()
    path = _write(tmp_path / "rank_0", data)
    full = assert_same_both_ways(path, 0, Limits(max_file_bytes=len(data) - 1), native_taken=False)
    assert "size limit" in full.value


# ------------------------------------------------------------------ ordinary pickles, every protocol

_F_USER = {"name": "train_step", "filename": "/work/train.py", "line": 42}
_F_TORCH = {"name": "all_reduce", "filename": "/site-packages/torch/distributed/distributed_c10d.py", "line": 2501}
_F_ODD = {"name": "f\u00e9\u4e2d\U0001f600", "filename": "/w/\u00fc.py", "line": None}


def _ordinary_entries() -> list[dict]:
    stack = [_F_TORCH, _F_USER]  # the frame dicts are shared, as torch's writer memoizes them
    return [
        {"op": "all_reduce", "state": "completed", "frames": stack, "input_sizes": [[4096, 1024]], "duration_ms": 1.5},
        {"op": "send 0->1", "state": "started", "pg_name": "1", "pg_desc": "pp", "ranks": [0, 1], "frames": [_F_USER]},
        {"op": "recv 1<-0", "state": "scheduled", "pg_name": "1", "pg_desc": "pp", "ranks": [0, 1], "p2p_seq_id": 3},
        {"op": "broadcast", "state": "completed", "frames": stack, "input_dtypes": ["BFloat16", "Float"]},
        {"op": "all_gather", "time_created_ns": 2**62, "input_sizes": [[2, 3], [], [1] * 8], "frames": [_F_ODD]},
        {"profiling_name": "gloo:barrier", "collective_seq_id": 2**63 - 1, "record_id": -5, "retired": True},
    ]


@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_ordinary_dump_every_protocol(tmp_path: Path, version: str, protocol: int) -> None:
    """Plain FR dumps: equal both ways; protocols 2-5 must be read by the scanner."""
    data = pickle.dumps(make_dump(version, entries=_ordinary_entries(), world_size=4), protocol)
    path = _write(tmp_path / "rank_1", data)
    if protocol >= 2:
        assert native.scan(data, Limits()) is not None, "the scanner fell back on an ordinary dump"
    full = assert_same_both_ways(path, 1, native_taken=True if protocol >= 2 else None)
    assert full.kind == "tables" and full.value.entries.num_rows == 6


def test_json_dump_same_both_ways(tmp_path: Path) -> None:
    import json

    path = _write(tmp_path / "rank_0.json", json.dumps(make_dump("2.10", fmt="json", entries=[{}])).encode())
    assert assert_same_both_ways(path, 0, native_taken=False).kind == "tables"


# ------------------------------------------------------------------ generated dumps (hypothesis)

_SURROGATES = st.characters(categories=["Cs"])  # (st.text drops these: joined by hand)
_TEXT = st.one_of(
    st.text(max_size=6),
    st.text(max_size=6),
    st.text(max_size=6),
    st.lists(st.one_of(st.characters(), _SURROGATES), min_size=1, max_size=4).map("".join),
)
_FR_WORDS = st.sampled_from(
    [
        "scheduled",
        "started",
        "completed",
        "nccl:all_reduce",
        "nccl:send 0->1",
        "nccl:recv 1<-0",
        "gloo:broadcast",
        "0",
        "1",
        "default_pg",
        "Float",
        "BFloat16",
        "[0, 1]",
        "12345",
        "-7",
        "",
        "frames",
        "state",
    ]
)
_EDGE_INTS = st.sampled_from(
    [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32]
    + [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**100, -(2**100)]
)
_INTS = st.one_of(st.integers(-(2**70), 2**70), _EDGE_INTS)
_SCALARS = st.one_of(st.none(), st.booleans(), _INTS, st.floats(), _TEXT, _FR_WORDS)
_KEYS = st.one_of(_TEXT, _FR_WORDS, st.integers(-3, 3), st.none(), st.booleans(), st.floats(allow_nan=False))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_KEYS, inner, max_size=3),
    ),
    max_leaves=10,
)
_GOOD_FRAME = st.fixed_dictionaries(
    {"name": st.one_of(_TEXT, _FR_WORDS), "filename": st.one_of(_TEXT, _FR_WORDS), "line": st.integers(-3, 10**6)}
)
_ODD_FRAME = st.one_of(
    st.fixed_dictionaries(
        {"name": st.one_of(_TEXT, _FR_WORDS), "filename": _TEXT},
        optional={"line": st.one_of(_SCALARS, st.just(True), st.just(1.0)), "extra": _VALUES},
    ),
    st.fixed_dictionaries({}, optional={"name": _SCALARS, "filename": _SCALARS, "line": _SCALARS}),
    _VALUES,
)
_OPS = st.sampled_from(["all_reduce", "broadcast", "all_gather", "reduce_scatter", "send 0->1", "recv 1<-0", "barrier"])
_ENTRY_KEYS = (
    *BASE_ENTRY_KEYS,
    "frames",
    "timeout_ms",
    "thread_id",
    "thread_name",
    "duration_ms",
    "an_unknown_key",
)
_INT_KEYS = ("record_id", "pg_id", "collective_seq_id", "p2p_seq_id", "time_created_ns")
_TEXT_KEYS = ("profiling_name", "state")
_TOP_KEYS = ("version", "pg_config", "pg_status", "entries", "comm_lib_version", "nccl_version", "an_unknown_key")
_DUP_TARGETS = ("state", "pg_id", "frames", "collective_seq_id", "profiling_name", "process_group", "retired")


@dataclass
class GeneratedDump:
    """A dump object, how to pickle it, and duplicate keys to splice into the bytes."""

    obj: Any
    protocol: int
    rank: int = 0
    gzipped: bool = False
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (placeholder, real key)
    notes: list[str] = field(default_factory=list)

    def data(self) -> bytes | None:
        try:
            data = pickle.dumps(self.obj, self.protocol)
        except (RecursionError, ValueError, OverflowError):
            return None
        for placeholder, key in self.duplicates:
            # Same length in every protocol's encoding: FRAME lengths stay right.
            if data.count(placeholder.encode()) != 1:
                return None
            data = data.replace(placeholder.encode(), key.encode())
        return gzip.compress(data, 1) if self.gzipped else data

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"GeneratedDump(protocol={self.protocol}, gzipped={self.gzipped}, notes={self.notes}, obj={self.obj!r})"


def _placeholder(key: str, i: int) -> str:
    tag = str(i)
    return "~" * (len(key) - len(tag)) + tag


@st.composite
def fr_like_dumps(draw: st.DrawFn, oddities: bool = True, protocols: tuple[int, ...] = (0, 1, 2, 3, 4, 5)):
    """Dumps shaped like FR's (tests/fr_versions.py), then, with ``oddities``, 0-6 random
    changes: missing keys, None, bools for ints, ints for strings, huge or negative ints,
    floats, nested lists, tuples for lists, shared objects, duplicate keys, surrogates,
    empty and non-dict entries, unknown keys, frames with odd members."""
    version = draw(st.sampled_from(SUPPORTED_VERSIONS))
    frames_pool = draw(st.lists(_GOOD_FRAME, min_size=1, max_size=3))
    stacks = [[draw(st.sampled_from(frames_pool)) for _ in range(draw(st.integers(0, 3)))] for _ in range(2)]
    descs = []
    for _ in range(draw(st.integers(0, 5))):
        pg = draw(st.sampled_from([("0", "default_pg"), ("1", "tp")]))
        descs.append(
            {
                "op": draw(_OPS),
                "state": draw(st.sampled_from(["scheduled", "started", "completed"])),
                "pg_name": pg[0],
                "pg_desc": pg[1],
                "frames": draw(st.sampled_from(stacks)),
                "collective_seq_id": draw(st.integers(0, 2**63 - 1)),
                "time_created_ns": draw(st.integers(0, 2**63 - 10**6)),  # + started, completed offsets
                "input_sizes": draw(st.lists(st.lists(st.integers(0, 2**40), max_size=3), max_size=2)),
            }
        )
    dump = make_dump(version, entries=descs, world_size=draw(st.integers(1, 4)))
    case = GeneratedDump(dump, draw(st.sampled_from(protocols)), rank=draw(st.integers(0, 3)))
    case.gzipped = draw(st.integers(0, 9)) == 0
    if not oddities:
        return case
    shared = draw(st.lists(_VALUES, min_size=1, max_size=3))  # the same objects in several places
    value = st.one_of(_VALUES, st.sampled_from(shared))
    for _ in range(draw(st.integers(0, 6))):
        entries = dump.get("entries") if type(dump) is dict else None
        dicts = [e for e in entries if type(e) is dict] if type(entries) is list else []
        kind = draw(
            st.sampled_from(
                [
                    "del_key",
                    "set_key",
                    "retype_int",
                    "retype_text",
                    "odd_frames",
                    "share_entry",
                    "non_dict_entry",
                    "empty_entry",
                    "duplicate_key",
                    "list_tuple",
                    "nest",
                    "top_del",
                    "top_set",
                    "pg_config",
                    "pg_status",
                    "more_entries",
                ]
            )
        )
        case.notes.append(kind)
        if kind == "del_key" and dicts:
            e = draw(st.sampled_from(dicts))
            if e:
                del e[draw(st.sampled_from(sorted(e, key=repr)))]
        elif kind == "set_key" and dicts:
            draw(st.sampled_from(dicts))[draw(st.sampled_from(_ENTRY_KEYS))] = draw(value)
        elif kind == "retype_int" and dicts:
            odd = st.one_of(st.booleans(), st.none(), st.floats(), _EDGE_INTS, _TEXT, st.just("7"), st.just(-3))
            draw(st.sampled_from(dicts))[draw(st.sampled_from(_INT_KEYS))] = draw(odd)
        elif kind == "retype_text" and dicts:
            odd = st.one_of(_INTS, st.none(), st.booleans(), _TEXT, st.lists(_FR_WORDS, max_size=2))
            draw(st.sampled_from(dicts))[draw(st.sampled_from(_TEXT_KEYS))] = draw(odd)
        elif kind == "odd_frames" and dicts:
            members = st.one_of(st.sampled_from(frames_pool), _ODD_FRAME)
            frames = draw(st.one_of(st.lists(members, max_size=4), st.lists(members, max_size=3).map(tuple), value))
            for e in draw(st.lists(st.sampled_from(dicts), min_size=1, max_size=3)):
                e["frames"] = frames
        elif kind == "share_entry" and type(entries) is list and entries:
            i, j = draw(st.integers(0, len(entries) - 1)), draw(st.integers(0, len(entries) - 1))
            entries[i] = entries[j]
        elif kind == "non_dict_entry" and type(entries) is list and entries:
            entries[draw(st.integers(0, len(entries) - 1))] = draw(value)
        elif kind == "empty_entry" and type(entries) is list:
            entries.insert(draw(st.integers(0, len(entries))), {})
        elif kind == "duplicate_key":
            where = [dump, *dicts] if type(dump) is dict else dicts
            if where:
                d = draw(st.sampled_from(where))
                key = draw(st.sampled_from(_DUP_TARGETS if d is not dump else ("entries", "version", "pg_config")))
                placeholder = _placeholder(key, len(case.duplicates))
                d[placeholder] = draw(value) if d is not dump or key != "entries" else draw(st.just([]) | value)
                case.duplicates.append((placeholder, key))
        elif kind == "list_tuple" and dicts:
            e = draw(st.sampled_from(dicts))
            k = draw(st.sampled_from(sorted(e, key=repr))) if e else None
            if type(e.get(k)) in (list, tuple):
                e[k] = tuple(e[k]) if type(e[k]) is list else list(e[k])
        elif kind == "nest" and dicts:
            e = draw(st.sampled_from(dicts))
            k = draw(st.sampled_from(_ENTRY_KEYS))
            e[k] = [e.get(k)] if draw(st.booleans()) else [[e.get(k)], e.get(k)]
        elif kind == "top_del" and type(dump) is dict and dump:
            del dump[draw(st.sampled_from(sorted(dump, key=repr)))]
        elif kind == "top_set" and type(dump) is dict:
            dump[draw(st.sampled_from(_TOP_KEYS))] = draw(value)
        elif kind == "pg_config" and type(dump) is dict and type(dump.get("pg_config")) is dict:
            cfg = dump["pg_config"]
            name = draw(st.sampled_from(sorted(cfg, key=repr))) if cfg else "0"
            if draw(st.booleans()) and type(cfg.get(name)) is dict:
                cfg[name][draw(st.sampled_from(["name", "desc", "ranks", "extra"]))] = draw(value)
            else:
                cfg[draw(st.one_of(st.just(name), _KEYS))] = draw(value)
        elif kind == "pg_status" and type(dump) is dict:
            status = dump.setdefault("pg_status", {}) if type(dump.get("pg_status", {})) is dict else {}
            key = draw(st.sampled_from(["last_enqueued_collective", "last_started_collective", "other"]))
            status[draw(_KEYS)] = draw(st.one_of(st.dictionaries(st.just(key), value, max_size=1), value))
        elif kind == "more_entries" and type(entries) is list and entries:
            entries.extend(draw(st.lists(st.sampled_from(entries), min_size=1, max_size=4)))
    return case


def _check_generated(case: GeneratedDump, tmp_path: Path, native_taken: bool | None = None) -> Outcome:
    data = case.data()
    assume(data is not None)
    path = _write(tmp_path / f"rank_{case.rank}{'.gz' if case.gzipped else ''}", data)
    with watchdog(120):
        return assert_same_both_ways(path, case.rank, native_taken=native_taken)


@settings(HYPOTHESIS, max_examples=300)
@given(case=fr_like_dumps())
def test_generated_odd_dumps_same_both_ways(case: GeneratedDump, tmp_path: Path) -> None:
    _check_generated(case, tmp_path)


@settings(HYPOTHESIS, max_examples=60)
@given(case=fr_like_dumps(oddities=False, protocols=(2, 3, 4, 5)))
def test_generated_plain_dumps_take_the_native_path(case: GeneratedDump, tmp_path: Path) -> None:
    """Well-formed dumps in protocols 2-5 (any unicode, surrogates included): the scanner reads them."""
    full = _check_generated(case, tmp_path, native_taken=True)
    assert full.kind == "tables" or full.value == SURROGATE_ERROR


# ------------------------------------------------------------------ byte-level mutations

_SNIPPETS = [
    b"r\xff\xff\xff\xff",  # LONG_BINPUT 0xFFFFFFFF
    b"j\xff\xff\xff\xff",  # LONG_BINGET of a slot nobody filled
    b"r\x00\x00\x00\x80",
    b"q\xff",
    b"h\xff",
    b"h\x00",
    b"h\x01",
    b"\x94",  # MEMOIZE
    b"(" * 300 + b"]" + b"l" * 300,  # deep MARK / EMPTY_LIST nesting
    b"(" * 100_000 + b"]" + b"l" * 100_000,
    b"(" * 5000 + b"]",
    b"]" * 5000,
    b"]q\xf0h\xf0a",  # a list APPENDed to itself
    b"]r\x00\x00\x01\x00j\x00\x00\x01\x00a",
    b"}q\xf1h\xf1X\x01\x00\x00\x00as",  # a dict holding itself
    b"]\x94(h\x00h\x00e",
    b"(",
    b"e",
    b"a",
    b"s",
    b"u",
    b"t",
    b"l",
    b"d",
    b"0",
    b"1",
    b"2",
    b".",
    b"N",
    b"\x88",
    b"\x89",
    b")",
    b"}",
    b"]",
    b"\x85",
    b"\x86",
    b"\x87",
    b"K\x07",
    b"M\xff\xff",
    b"J\xff\xff\xff\xff",
    b"\x8a\x00",
    b"\x8a\x08" + b"\xff" * 8,
    b"\x8a\x08" + b"\x00" * 7 + b"\x80",
    b"\x8a\x09" + b"\x00" * 8 + b"\x01",  # 2**64: LONG1 of 9 bytes
    b"\x8b\xff\xff\xff\x7f",  # LONG4 claiming 2 GiB
    b"X\xff\xff\xff\x7f",  # BINUNICODE claiming 2 GiB
    b"\x8c\xff",
    b"\x8d" + b"\xff" * 8,
    b"\x8c\x03\xed\xa0\x80",  # a lone surrogate
    b"\x8c\x02\xc0\x80",  # overlong NUL: invalid UTF-8
    b"\x8c\x04\xf4\x90\x80\x80",  # above U+10FFFF
    b"\x95" + (2**62).to_bytes(8, "little"),  # FRAME longer than the file
    b"\x95\x00\x00\x00\x00\x00\x00\x00\x00",
    b"\x80\x06",
    b"\x80\x05",
    b"\x80\x00",
    b"G\x7f\xf8\x00\x00\x00\x00\x00\x01",  # a NaN with payload
    b"G\x7f\xf0\x00\x00\x00\x00\x00\x00",
    b"cos\nsystem\n",
    b"\x8c\x02os\x8c\x06system\x93",
    b"R",
    b"\x81",
    b"b",
    b"\x8f",  # EMPTY_SET
    b"\x90",
    b"\x91",
    b"\x92",
    b"C\x03abc",
    b"B\x00\x00\x00\x00",
    b"\x96\x00\x00\x00\x00\x00\x00\x00\x00",  # BYTEARRAY8
    b"\x97",  # NEXT_BUFFER
    b"\x98",
    b"I01\n",
    b"L12345678901234567890123L\n",
    b"Vabc\n",
    b"F1.5\n",
    b"\x82\xf0",  # EXT1
]
_SAMPLE_BYTES: dict[str, bytes] = {}
_MUTATION_SOURCES = [
    *SAMPLE_FILES[:: max(1, len(SAMPLE_FILES) // 12)],
    *(f"{SAMPLE_FILES[0]}@protocol{p}" for p in (3, 4, 5)),  # FRAME, MEMOIZE, SHORT_BINUNICODE
]


def _sample_bytes(source: str) -> bytes:
    """A sample file's bytes; ``path@protocolN``: its dump pickled again with protocol N."""
    if source not in _SAMPLE_BYTES:
        path, _, protocol = source.partition("@protocol")
        data = Path(path).read_bytes()
        if protocol:
            data = pickle.dumps(pickle.loads(data), int(protocol))
        _SAMPLE_BYTES[source] = data
    return _SAMPLE_BYTES[source]


class MutatedDump:
    """Mutated bytes and the recipe (what hypothesis prints for a failing example)."""

    def __init__(self, source: str, notes: list[str], data: bytes) -> None:
        self.source, self.notes, self.data = source, notes, data

    def __repr__(self) -> str:
        return f"MutatedDump({os.path.relpath(self.source, SAMPLE_DUMPS)!r}, {self.notes})"


@st.composite
def mutated_dumps(draw: st.DrawFn) -> MutatedDump:
    """A sample dump's bytes, truncated, flipped, cut or with opcodes inserted (1-3 times)."""
    source = draw(st.sampled_from(_MUTATION_SOURCES))
    data = bytearray(_sample_bytes(source))
    notes = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "insert", "insert_random", "delete", "copy"]))
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            for _ in range(draw(st.integers(1, 4))):
                i, b = draw(st.integers(0, len(data) - 1)), draw(st.integers(0, 255))
                notes.append(f"flip@{i}={b:#04x}")
                data[i] = b
            continue
        elif kind == "insert":
            snippet = draw(st.sampled_from(_SNIPPETS))
            kind += f" {snippet[:16]!r}{'...' if len(snippet) > 16 else ''}"
            data[at:at] = snippet
        elif kind == "insert_random":
            snippet = draw(st.binary(min_size=1, max_size=16))
            kind += f" {snippet!r}"
            data[at:at] = snippet
        elif kind == "delete":
            n = draw(st.integers(1, 16))
            kind += f" {n}"
            del data[at : at + n]
        elif kind == "copy" and data:
            start, n = draw(st.integers(0, len(data) - 1)), draw(st.integers(1, 200))
            kind += f" [{start}:{start + n}]"
            data[at:at] = data[start : start + n]
        notes.append(f"{kind}@{at}")
    return MutatedDump(source, notes, bytes(data))


@settings(HYPOTHESIS, max_examples=300)
@given(case=mutated_dumps())
def test_mutated_sample_bytes_same_both_ways(case: MutatedDump, tmp_path: Path) -> None:
    timed_scan(case.data)
    path = _write(tmp_path / "rank_0", case.data)
    with watchdog(120):
        assert_same_both_ways(path, 0)


def test_a_stream_the_scanner_takes_and_the_parse_refuses_gets_the_full_decoders_error(tmp_path: Path) -> None:
    """Found by the test above (2026-12-07): a LONG1 of -1 put into a frame's place. The
    scanner takes the stream and the parse refuses it ("a frame is -1"), while the unpickler
    stops earlier ("invalid load key"); the file is then decoded in full, so both ways say
    the same."""
    data = bytearray(pickle.dumps(pickle.loads((SAMPLE_DUMPS / "dtype_mismatch" / "rank_0").read_bytes()), protocol=4))
    data[604:604] = b"\x8a\x08" + b"\xff" * 8
    path = _write(tmp_path / "rank_0", bytes(data))
    assert assert_same_both_ways(path, 0).kind == "error"


@pytest.mark.parametrize("at", [11, 181])  # right after the first FRAME's header; inside its data
@pytest.mark.parametrize("length", [0, 5])
def test_a_frame_inside_a_frame_reads_the_same_both_ways(tmp_path: Path, at: int, length: int) -> None:
    """Found by the mutation test (an empty FRAME inserted at byte 181 of a protocol-4 dump):
    no pickler starts a frame before the last one ends, and CPython's unpickler reads such
    a file as corrupt ('odd number of items for SETITEMS') but the same bytes as plain
    data. The scanner read straight through it; it now leaves such input to the unpickler."""
    data = _sample_bytes(f"{SAMPLE_FILES[0]}@protocol4")
    assert data[2] == 0x95  # PROTO 4, then the first FRAME
    mutated = data[:at] + b"\x95" + length.to_bytes(8, "little") + data[at:]
    timed_scan(mutated)
    assert_same_both_ways(_write(tmp_path / "rank_0", mutated), 0)


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 10, 100, -2, -1])
def test_truncated_sample_dump(tmp_path: Path, cut: int) -> None:
    data = _sample_bytes(SAMPLE_FILES[0])[:cut]
    timed_scan(data)
    full = assert_same_both_ways(_write(tmp_path / "rank_0", data), 0, native_taken=False)
    assert full.kind == "error"


def test_random_bytes_after_the_protocol_opcode(tmp_path: Path) -> None:
    rng = random.Random(5)
    for i in range(300):
        data = b"\x80" + bytes([rng.randrange(2, 6)]) + rng.randbytes(rng.randrange(0, 64))
        timed_scan(data)
        assert_same_both_ways(_write(tmp_path / f"rank_{i % 4}", data), i % 4)


def _u(text: str) -> bytes:
    """BINUNICODE."""
    return b"X" + len(text.encode()).to_bytes(4, "little") + text.encode()


_FENCE_CASES = {
    # Opcodes next to a MARK: the unpickler refuses to reach below it ("unexpected MARK found").
    "append-at-mark": b"\x80\x02}" + _u("entries") + b"](}aes.",
    "setitem-at-mark": b"\x80\x02}(" + _u("version") + _u("2.10") + b"su.",
    "tuple1-at-mark": b"\x80\x02}" + _u("version") + b"(\x85\x86.",
    "tuple2-at-mark": b"\x80\x02}" + _u("version") + b"N(N\x86s.",
    "tuple3-at-mark": b"\x80\x02}" + _u("version") + b"NN(N\x87s.",
    "memoize-at-mark": b"\x80\x04}(\x94" + _u("version") + _u("2.10") + b"u.",
    "binput-at-mark": b"\x80\x02}(q\x01" + _u("version") + _u("2.10") + b"u.",
    "stop-at-mark": b"\x80\x02}(.",
    "stop-above-mark": b"\x80\x02N(}.",
    "marks-unclosed": b"\x80\x02((}.",
    "dict-odd": b"\x80\x02(" + _u("version") + b"d.",
    "setitems-odd": b"\x80\x02}(" + _u("version") + b"u.",
    "appends-nothing-on-dict": b"\x80\x02}(e.",  # Python checks no type when nothing is added
    "appends-on-dict": b"\x80\x02}(Ne.",
    "setitems-nothing-on-list": b"\x80\x02](u}.",
    "setitems-on-list": b"\x80\x02](K\x00K\x01u.",
    "append-on-dict": b"\x80\x02}Na.",
    "list-from-mark": b"\x80\x02}" + _u("entries") + b"(ls.",
    "dict-from-mark": b"\x80\x02(" + _u("version") + _u("2.10") + _u("entries") + b"(ld.",
}


@pytest.mark.parametrize("name", sorted(_FENCE_CASES))
def test_opcodes_at_a_mark(name: str, tmp_path: Path) -> None:
    data = _FENCE_CASES[name]
    timed_scan(data)
    assert_same_both_ways(_write(tmp_path / "rank_0", data), 0)


# ------------------------------------------------------------------ the scanner's machine against the unpickler

_KEY_WORDS = ["entries", "version", "state", "pg_id", "collective_seq_id", "frames", "process_group", "retired", "x"]


def _short(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    return (b"\x8c" + bytes([len(data)]) if len(data) < 256 else b"X" + len(data).to_bytes(4, "little")) + data


@st.composite
def opcode_streams(draw: st.DrawFn) -> bytes:
    """Small pickles written opcode by opcode: a dict of random values (lists, dicts, tuples
    by every opcode that builds them, memo puts and gets, every int and str opcode), then
    0-3 random opcodes inserted anywhere. Many are invalid; the unpickler is the judge."""
    puts: list[int] = []
    memoize_count = [0]

    def value(depth: int) -> bytes:
        kind = draw(st.integers(0, 15 if depth < 3 else 7))
        if kind == 0:
            out = draw(st.sampled_from([b"N", b"\x88", b"\x89"]))
        elif kind == 1:
            out = b"K" + bytes([draw(st.integers(0, 255))])
        elif kind == 2:
            out = draw(st.sampled_from([b"M", b"J"]))
            out += draw(st.binary(min_size=2, max_size=2)) if out == b"M" else draw(st.binary(min_size=4, max_size=4))
        elif kind == 3:
            k = draw(st.integers(0, 9))
            out = b"\x8a" + bytes([k]) + draw(st.binary(min_size=k, max_size=k))
        elif kind == 4:
            out = b"G" + struct.pack(">d", draw(st.floats()))
        elif kind in (5, 6):
            out = _short(draw(st.one_of(st.sampled_from(_KEY_WORDS), _TEXT)))
        elif kind == 7:
            out = (b"h" + bytes([draw(st.sampled_from(puts))])) if puts else b"N"
        elif kind == 8:
            out = b"]" + maybe_put() + b"(" + b"".join(value(depth + 1) for _ in range(draw(st.integers(0, 3)))) + b"e"
        elif kind == 9:
            out = b"]" + maybe_put() + value(depth + 1) + b"a"
        elif kind == 10:
            out = b"(" + b"".join(value(depth + 1) for _ in range(draw(st.integers(0, 3)))) + b"l"
        elif kind == 11:
            out = b"(" + b"".join(value(depth + 1) for _ in range(draw(st.integers(0, 3)))) + b"t"
        elif kind == 12:
            n = draw(st.integers(0, 3))
            out = b"".join(value(depth + 1) for _ in range(n)) + (b")", b"\x85", b"\x86", b"\x87")[n]
        elif kind == 13:
            out = b"}" + maybe_put() + b"(" + b"".join(key() + value(depth + 1) for _ in range(draw(st.integers(0, 3))))
            out += b"u"
        elif kind == 14:
            out = b"}" + maybe_put() + key() + value(depth + 1) + b"s"
        else:
            out = b"(" + b"".join(key() + value(depth + 1) for _ in range(draw(st.integers(0, 2)))) + b"d"
        return out + maybe_put()

    def key() -> bytes:
        return draw(st.sampled_from([_short(w) for w in _KEY_WORDS] + [b"K\x01", b"N", b"\x88"]))

    def maybe_put() -> bytes:
        how = draw(st.integers(0, 5))
        if how == 0:
            puts.append(draw(st.integers(0, 20)))
            return b"q" + bytes([puts[-1]])
        if how == 1:
            puts.append(draw(st.integers(0, 20)))
            return b"r" + puts[-1].to_bytes(4, "little")
        if how == 2:
            puts.append(memoize_count[0])  # a guess: MEMOIZE numbers slots as they fill
            memoize_count[0] += 1
            return b"\x94"
        return b""

    def entry() -> bytes:
        if puts and draw(st.integers(0, 4)) == 0:
            return b"h" + bytes([draw(st.sampled_from(puts))])  # a shared entry (or anything memoized)
        fields = draw(st.lists(st.sampled_from([k for k, _ in native._SPEC] + ["other"]), max_size=6))
        out = b"}" + maybe_put() + b"("
        for name in fields:
            out += _short(name) + field_value(name)
        return out + b"u" + maybe_put()

    def field_value(name: str) -> bytes:
        if draw(st.integers(0, 4)) == 0:
            return value(1)
        if name in native._INT_FIELDS:
            k = draw(st.integers(0, 8))
            return draw(st.sampled_from([b"N", b"K\x07", b"J\xff\xff\xff\xff", b"\x8a" + bytes([k]) + b"\x80" * k]))
        if name == "frames":
            frame = b"}(" + _short("name") + _short("f") + _short("filename") + _short("/x.py") + b"u" + maybe_put()
            return b"](" + b"".join(frame for _ in range(draw(st.integers(0, 2)))) + b"e" + maybe_put()
        return value(1)

    body = b"}" + maybe_put() + b"("
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            body += _short("entries") + b"]" + maybe_put() + b"("
            body += b"".join(entry() for _ in range(draw(st.integers(0, 4)))) + b"e"
        else:
            body += key() + value(0)
    data = bytearray(b"\x80" + bytes([draw(st.integers(2, 5))]) + body + b"u.")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from(_SNIPPETS))
    return bytes(data)


def _same_value(a: Any, b: Any, seen: dict[tuple[int, int], bool]) -> bool:
    """Structural equality that follows cycles and tells 1, 1.0 and True apart (float bits too)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    if type(a) not in (list, tuple, dict):
        return a == b
    pair = (id(a), id(b))
    if pair in seen:
        return True
    seen[pair] = True
    if len(a) != len(b):
        return False
    if type(a) is dict:
        return list(map(type, a)) == list(map(type, b)) and all(
            _same_value(ka, kb, seen) and _same_value(a[ka], b[kb], seen) for ka, kb in zip(a, b)
        )
    return all(_same_value(x, y, seen) for x, y in zip(a, b))


_ABSENT = object()


def _assert_scan_matches_unpickler(data: bytes) -> None:
    scanned = timed_scan(data)
    if scanned is None:
        return
    try:
        loaded = load_plain_pickle(io.BytesIO(data), len(data))  # under the loader's memory cap
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"the scanner read {data!r}, which the unpickler refuses: {type(exc).__name__}: {exc}")
    top, fields = scanned
    assert type(loaded) is dict
    entries = loaded.get("entries", _ABSENT)
    rest = {k: v for k, v in loaded.items() if not (type(k) is str and k == "entries")}
    if entries is not _ABSENT:
        rest["entries"] = []
    assert _same_value(top, rest, {}), f"top level: scanner {top!r} vs unpickler {rest!r}"
    if entries is _ABSENT:
        assert fields.n == 0
        return
    assert type(entries) is list and fields.n == len(entries)
    assert all(type(e) is dict for e in entries)
    if not isinstance(fields, native.ScannedFields):
        return
    for key, kind in native._SPEC:
        if kind == "int":
            values = np.frombuffer(fields._columns[key][0], np.int64)
            states = fields._state(key)
            for i, e in enumerate(entries):
                v = e.get(key, _ABSENT)
                expected = (0, 0) if v is _ABSENT else (2, 0) if v is None else (1, v)
                assert (int(states[i]), int(values[i]) if states[i] == 1 else 0) == expected, (key, i)
        else:
            codes, distinct = fields._codes(key), fields._columns[key][1]
            for i, e in enumerate(entries):
                v = e.get(key, _ABSENT)
                if codes[i] < 0:
                    assert v is _ABSENT or (kind == "stack" and v is None), (key, i)
                else:
                    assert _same_value(distinct[codes[i]], v, {}), (key, i, distinct[codes[i]], v)


@settings(HYPOTHESIS, max_examples=400)
@given(data=opcode_streams())
def test_scanner_reads_what_the_unpickler_reads(data: bytes) -> None:
    """Whenever native.scan answers, the unpickler reads the same bytes to the same values:
    the top level (but "entries") and every entry's field, column by column."""
    _assert_scan_matches_unpickler(data)


@pytest.mark.parametrize("name", sorted(_FENCE_CASES))
def test_scanner_reads_what_the_unpickler_reads_at_a_mark(name: str) -> None:
    _assert_scan_matches_unpickler(_FENCE_CASES[name])


# ------------------------------------------------------------------ hostile pickles

_PAYLOAD_NAMES = sorted({**hand_built("m"), **via_reduce("m")})


def test_the_os_system_payload_is_live(tmp_path: Path) -> None:
    """The control: a plain pickle.loads of the os.system payload does create the marker."""
    marker = tmp_path / "pwned.marker"
    data = hand_built(str(marker))["p0-GLOBAL-REDUCE-os.system"]
    code = "import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read())"
    subprocess.run([sys.executable, "-c", code, str(_write(tmp_path / "payload", data))], check=True, timeout=60)
    assert marker.exists()


@pytest.mark.parametrize("name", _PAYLOAD_NAMES)
def test_code_carrying_pickle_never_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GLOBAL/REDUCE (os.system, open, eval, ...): no marker, the same refusal both ways."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pwned.marker"
    payloads = {**hand_built(str(marker)), **via_reduce(str(marker))}
    data = payloads[name]
    assert timed_scan(data) is None
    full = assert_same_both_ways(_write(tmp_path / "rank_1", data), 1, native_taken=False)
    time.sleep(0.05)  # Popen and os.system would finish a moment later
    assert not marker.exists()
    assert full.kind == "error"
    if name.startswith("p2-EXT"):
        assert full.value.startswith(("unsafe pickle", "corrupt")), full.value
    else:
        assert full.value.startswith("unsafe pickle, not loaded: refused to load"), full.value


def _entry_dump(**fields: Any) -> dict:
    dump = make_dump("2.10", world_size=3, entries=[{"op": "all_reduce", "input_sizes": [[4, 4]]}])
    dump["entries"][0].update(fields)
    return dump


def _self_containing_cases() -> dict[str, Any]:
    cases = {}
    for where in ("frames", "input_sizes", "input_dtypes", "process_group", "profiling_name", "state", "pg_id"):
        loop: list = []
        loop.append(loop)
        cases[f"entry-{where}"] = _entry_dump(**{where: loop})
    loop = []
    loop.append(loop)
    cases["frame-member"] = _entry_dump(frames=[_F_USER, loop, _F_USER])
    for where in ("version", "pg_config", "pg_status", "comm_lib_version"):
        loop = []
        loop.append(loop)
        dump = _entry_dump()
        dump[where] = loop if where != "pg_config" else {"0": loop}
        cases[f"top-{where}"] = dump
    dump = _entry_dump()
    dump["entries"].append(dump["entries"])
    cases["entries-holds-itself"] = dump
    dump = _entry_dump()
    dump["pg_status"] = dump
    cases["top-holds-itself"] = dump
    dump = _entry_dump()
    dump["entries"][0]["frames"] = dump["entries"]
    cases["frames-are-the-entries"] = dump
    dump = _entry_dump()
    dump["entries"][0]["process_group"] = ("0", dump["entries"][0])
    cases["tuple-holds-its-entry"] = dump
    loop = []
    loop.append((loop,))
    cases["list-in-tuple-in-list"] = _entry_dump(input_sizes=loop)
    return cases


_SELF_CASES = _self_containing_cases()


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("name", sorted(_SELF_CASES))
def test_self_containing_values(name: str, protocol: int, tmp_path: Path) -> None:
    data = pickle.dumps(_SELF_CASES[name], protocol)
    timed_scan(data)
    assert_same_both_ways(_write(tmp_path / "rank_0", data), 0)


_SPLICE = "@@SPLICE@@"
_SPLICE_VALUES = {
    "top": b"X\x04\x00\x00\x002.10",
    "entry": b"X\x04\x00\x00\x00nccl",
    "pg_config": b"X\x01\x00\x00\x00d",
}


def _splice(payload: bytes, field_name: str = "profiling_name", where: str = "entry", protocol: int = 2) -> bytes:
    """A dump pickled with ``payload`` in place of one value (an entry field, the version
    or a group's desc); the opcodes around it are left as pickle wrote them."""
    dump = _entry_dump()
    if where == "top":
        dump["version"] = _SPLICE
    elif where == "pg_config":
        dump["pg_config"]["0"]["desc"] = _SPLICE
    else:
        dump["entries"][0][field_name] = _SPLICE
    data = pickle.dumps(dump, protocol)
    marker = b"X\x0a\x00\x00\x00" + _SPLICE.encode() if protocol < 4 else b"\x8c\x0a" + _SPLICE.encode()
    assert data.count(marker) == 1
    return data.replace(marker, payload)


_ODD_KEYS = {
    "dict": b"}",
    "list": b"]",
    "tuple-of-list": b"]\x85",
    "float": b"G?\xf8\x00\x00\x00\x00\x00\x00",  # hashable for Python, refused by the scanner
    "nan": b"G\x7f\xf8\x00\x00\x00\x00\x00\x00",
    "tuple-of-str": b"X\x01\x00\x00\x00a\x85",
    "int": b"K\x05",
    "true": b"\x88",
    "none": b"N",
}


@pytest.mark.parametrize("key", sorted(_ODD_KEYS))
@pytest.mark.parametrize("where", ["top", "entry", "pg_config"])
def test_odd_dict_keys(key: str, where: str, tmp_path: Path) -> None:
    """A dict (or list, tuple, float, ...) used as a dict key: at the top, in an entry, in
    a group's config. The value keeps its own key; an extra (key, 1) item follows it."""
    data = _splice(_SPLICE_VALUES[where] + _ODD_KEYS[key] + b"K\x01", where=where)
    timed_scan(data)
    full = assert_same_both_ways(_write(tmp_path / "rank_0", data), 0)
    if key in ("dict", "list", "tuple-of-list"):
        assert full.kind == "error" and "unhashable" in full.value, full.value


@pytest.mark.parametrize("field_name", ["profiling_name", "process_group", "thread_name", "state"])
def test_huge_string_shared_by_1000_entries(field_name: str, tmp_path: Path) -> None:
    huge = "x" * (64 << 20)
    value = (huge, huge) if field_name == "process_group" else huge
    dump = _entry_dump(**{field_name: value})
    dump["entries"] = dump["entries"] * 1000
    path = _write(tmp_path / "rank_1", pickle.dumps(dump, 2))
    del dump, huge, value
    t0 = time.monotonic()
    with watchdog(120):
        full = assert_same_both_ways(path, 1, native_taken=True)
    assert time.monotonic() - t0 < 30
    if field_name in ("profiling_name", "process_group", "state"):
        assert full.kind == "error"


@pytest.fixture(scope="module")
def million_shared_entries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dump = _entry_dump(frames=[_F_TORCH, _F_USER])
    dump["entries"] = dump["entries"] * 1_000_000
    return _write(tmp_path_factory.mktemp("million") / "rank_0", pickle.dumps(dump, 2))


@pytest.mark.parametrize("max_entries", [1_000_000, 999_999, 0])
def test_million_shared_entries(million_shared_entries: Path, max_entries: int) -> None:
    limits = Limits(max_entries=max_entries)
    with watchdog(120):
        full = assert_same_both_ways(million_shared_entries, 0, limits, native_taken=max_entries >= 1_000_000)
    if max_entries >= 1_000_000:
        assert full.kind == "tables" and full.value.entries.num_rows == 1_000_000
    else:
        assert full.value == f"not a valid Flight Recorder dump: 1000000 entries, more than the limit of {max_entries}"


def test_million_shared_entries_memory_is_bounded(million_shared_entries: Path) -> None:
    """Peak memory of one native.scan stays within what the scanner allows itself
    (64 bytes per input byte plus 256 MiB), measured in a fresh process."""
    script = textwrap.dedent(
        """
        import resource, sys
        sys.path.insert(0, sys.argv[2])
        from analysis.ingest import native
        from analysis.types import Limits
        data = open(sys.argv[1], "rb").read()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = native.scan(data, Limits())
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(result is not None, (after - before) * 1024, len(data))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(million_shared_entries), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    taken, grown, size = out.stdout.split()
    assert taken == "True"
    assert int(grown) < 64 * int(size) + (256 << 20), out.stdout


_DAG_FIELDS = ["input_sizes", "input_dtypes", "frames", "process_group", "profiling_name", "state", "thread_id"]


@pytest.mark.parametrize("as_tuple", [False, True])
@pytest.mark.parametrize("where", [*_DAG_FIELDS, "version", "pg_config", "all_entries"])
def test_memo_sharing_bombs(where: str, as_tuple: bool, tmp_path: Path) -> None:
    """A 2**40-leaf DAG written by pickle's own memo, in a few KiB."""
    bomb = dag(40, as_tuple=as_tuple)
    dump = _entry_dump()
    if where == "version":
        dump["version"] = bomb
    elif where == "pg_config":
        dump["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": bomb}}
    elif where == "all_entries":
        dump["entries"] = [dict(dump["entries"][0], input_sizes=bomb) for _ in range(1000)]
    else:
        dump["entries"][0][where] = bomb
    data = pickle.dumps(dump, 2)
    timed_scan(data)
    t0 = time.monotonic()
    with watchdog(120):
        assert_same_both_ways(_write(tmp_path / "rank_1", data), 1)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("depth", [150, 250, 100_000])
@pytest.mark.parametrize("field_name", ["input_sizes", "input_dtypes", "frames", "process_group", "profiling_name"])
def test_deep_nesting(field_name: str, depth: int, tmp_path: Path) -> None:
    """MARK x N, EMPTY_LIST, LIST x N in a field; and a dict nested N deep."""
    data = _splice(b"(" * depth + b"]" + b"l" * depth, field_name)
    timed_scan(data)
    assert_same_both_ways(_write(tmp_path / "rank_1", data), 1)
    data = _splice(b"}(X\x01\x00\x00\x00a" * depth + b"N" + b"u" * depth, field_name)
    timed_scan(data)
    assert_same_both_ways(_write(tmp_path / "rank_2", data), 2)


@pytest.mark.parametrize(
    "payload",
    [
        b"\x80\x02}r\xff\xff\xff\x7f.",  # LONG_BINPUT 2**31-1: 32 GB for the C unpickler
        b"\x80\x02}r\xff\xff\xff\xff.",
        b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94r\xff\xff\xff\xff.",
        b"\x80\x02X\xf0\xff\xff\xff",  # a 4 GiB string header and nothing after it
        b"\x80\x02\x8b\xff\xff\xff\x7f",
    ],
)
def test_memo_and_length_bombs(payload: bytes, tmp_path: Path) -> None:
    assert timed_scan(payload) is None
    full = assert_same_both_ways(_write(tmp_path / "rank_1", payload), 1, native_taken=False)
    assert full.kind == "error"
    assert_same_both_ways(_write(tmp_path / "rank_2.gz", gzip.compress(payload)), 2, native_taken=False)


def test_huge_ints(tmp_path: Path) -> None:
    for i, value in enumerate([2**63, -(2**63) - 1, 2**64, 10**5000, 2**63 - 1, -(2**63)]):
        for field_name in ("collective_seq_id", "record_id", "time_created_ns", "pg_id", "p2p_seq_id", "op_id"):
            data = pickle.dumps(_entry_dump(**{field_name: value}), 2)
            timed_scan(data)
            assert_same_both_ways(_write(tmp_path / f"rank_{i}", data), i)


# ------------------------------------------------------------------ state kept between scans
#
# The scanner keeps its work arrays from one scan to the next. Until 65fb281 the memo was
# kept uncleared, and every case below went wrong (a wrong table for a valid protocol-4
# dump, a corrupt pickle read, heap bytes returned, a segfault); they are regressions now.


def _dump_with_pg_config_shared(protocol: int = 4) -> bytes:
    cfg = {"name": "pg", "desc": "default_pg", "ranks": "[0, 1]"}
    return pickle.dumps({"version": "2.10", "pg_config": {"a": cfg, "b": cfg}, "entries": []}, protocol)


def test_memo_of_the_previous_scan_does_not_answer_memoize(tmp_path: Path) -> None:
    """The previous scan (a 21-byte pickle) filled memo slots 0 and k. With that memo kept,
    the next file, a valid protocol-4 dump, found slot 0 "taken", so MEMOIZE never advanced,
    and its BINGET k returned the previous file's node 1 (the string "version") instead of
    the shared pg_config dict: "pg_config['b'] is str" where the full path reads 2 groups."""
    data = _dump_with_pg_config_shared(4)
    gets = [arg for op, arg, _ in pickletools.genops(data) if op.name in ("BINGET", "LONG_BINGET")]
    assert len(gets) == 1
    previous = b"\x80\x02(Nq\x00Nr" + struct.pack("<I", gets[0]) + b"l."  # [None, None]: slots 0 and k
    assert_same_both_ways(_write(tmp_path / "rank_0", previous), 0)
    full = assert_same_both_ways(_write(tmp_path / "rank_1", data), 1, native_taken=True)
    assert full.kind == "tables" and full.value.configs.num_rows == 2


def test_memo_of_the_previous_scan_does_not_answer_binget(tmp_path: Path) -> None:
    """A corrupt pickle whose BINGET names a slot it never filled (a protocol-2 dump with one
    BINPUT renumbered) is refused by the full path ("Memo value not found at index 5"); right
    after the good file it came from, a kept memo had that slot filled and the scan read it."""
    good = pickle.dumps(make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}]), 2)
    ops = list(pickletools.genops(good))
    target = next(arg for op, arg, _ in ops if op.name == "BINGET")
    put_at = next(pos for op, arg, pos in ops if op.name == "BINPUT" and arg == target)
    corrupt = bytearray(good)
    corrupt[put_at + 1] = 250  # BINPUT 250: slot `target` is never filled
    assert_same_both_ways(_write(tmp_path / "rank_0", good), 0, native_taken=True)
    full = assert_same_both_ways(_write(tmp_path / "rank_1", bytes(corrupt)), 1)
    assert full.value == f"corrupt or truncated pickle: UnpicklingError: Memo value not found at index {target}"


def test_memo_of_the_previous_scan_holds_no_value(tmp_path: Path) -> None:
    """A stale memo slot held a node id of the previous scan, beyond the new scan's nodes; the
    kept node array still held the old node there, and native.scan returned the previous
    file's value (12345) as "version" of a pickle the full path refuses ("Memo value not
    found at index 7"). With a string node it read the old offset past the end of the new
    input instead (see the segfault test)."""
    # {"a": [None x 10, 12345]}: the int is node 12, in memo slot 7
    previous = b"\x80\x02}X\x01\x00\x00\x00a(" + b"N" * 10 + b"J\x39\x30\x00\x00q\x07ls."
    assert native.scan(previous, Limits()) is not None
    # {"entries": [], "version": <BINGET 7>}: 33 bytes, 4 nodes, slot 7 never filled
    corrupt = b"\x80\x02}(X\x07\x00\x00\x00entries]X\x07\x00\x00\x00versionh\x07u."
    with pytest.raises(pickle.UnpicklingError, match="Memo value not found"):
        pickle.loads(corrupt)
    scanned = native.scan(corrupt, Limits())
    assert scanned is None, f"scanned a pickle Python refuses: {scanned[0]!r}"
    full = assert_same_both_ways(_write(tmp_path / "rank_0", corrupt), 0)
    assert full.value == "corrupt or truncated pickle: UnpicklingError: Memo value not found at index 7"


def test_objects_of_a_stale_node_do_not_reach_the_next_dump(tmp_path: Path) -> None:
    """After a stale-memo read, the Python object made for the stale node stayed in the kept
    ``made`` array (py_end clears only the new scan's nodes), and the NEXT, valid, file
    reused it: its "pg_config" key became heap bytes, and the native path read no groups.
    Sequence: a 100-item list, a 20-byte corrupt pickle, then a plain dump."""
    assert native.scan(pickle.dumps({"a": ["yyyy", "marker", *range(100)]}, 2), Limits()) is not None
    native.scan(b"\x80\x02}X\x07\x00\x00\x00versionh\x03s.", Limits())  # BINGET 3: never filled
    dump = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}}
    dump["entries"] = []
    full = assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0, native_taken=True)
    assert full.value.configs.num_rows == 1


def test_stale_string_offset_does_not_crash(tmp_path: Path) -> None:
    """As above with a string node, after a 100 MB input: the stale string offset pointed
    100 MB past a 20-byte input, and the process died of SIGSEGV (rc -11)."""
    script = textwrap.dedent(
        """
        import struct, sys
        sys.path.insert(0, sys.argv[1])
        from analysis.ingest import native
        from analysis.types import Limits
        off = 100_000_000
        big = b"\\x80\\x02}X\\x01\\x00\\x00\\x00a(X" + struct.pack("<I", off) + b"y" * off
        big += b"X\\x06\\x00\\x00\\x00markerq\\x07ls."
        assert native.scan(big, Limits()) is not None
        del big
        print(native.scan(b"\\x80\\x02}X\\x07\\x00\\x00\\x00versionh\\x07s.", Limits()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT)], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, f"the scanner crashed the process: rc {out.returncode}\n{out.stderr[-2000:]}"
    assert out.stdout.strip() == "None"


def test_dump_without_entries(tmp_path: Path) -> None:
    """A dump with no "entries" key: the full path reads 0 entries and 1 group. (Until
    65fb281 ScannedFields.require raised KeyError 'collective_seq_id' out of read_dump.)"""
    dump = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0]"}}}
    full = assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0, native_taken=True)
    assert full.kind == "tables" and full.value.entries.num_rows == 0


# ------------------------------------------------------------------ found while writing these tests
#
# Each test below reproduces a difference between the two paths (or a bug both shared)
# that these tests found; all are fixed, and the tests keep them fixed.


def test_fixed_discrepancy_frames_equal_but_not_identical(tmp_path: Path) -> None:
    """FIXED DISCREPANCY (order of checks): two stacks [F, G, F] and [F, G', F] with
    G' == G but G'["line"] True (1 == True). The full path's stack_codes merges them by ==
    and checks only the first (the dump is read); the scanner keeps them apart, and the
    second fails "a frame's line is True". Same with a line of 1.0."""
    f = {"name": "f", "filename": "/x.py", "line": 1}
    dump = make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}])
    dump["entries"][0]["frames"] = [f, {"name": "g", "filename": "/y.py", "line": 1}, f]
    dump["entries"][1]["frames"] = [f, {"name": "g", "filename": "/y.py", "line": True}, f]
    assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0)


def test_fixed_discrepancy_which_bad_stack_is_named(tmp_path: Path) -> None:
    """FIXED DISCREPANCY (order of checks): two bad stacks. The full path checks distinct
    stacks in its rounds' order (one leader per (length, first, last frame) bucket first),
    the scanner in first-seen order, so each names a different bad stack:
    native "a frame is 5, expected a dict", full "a frame has no short string name and filename"."""
    f = {"name": "f", "filename": "/x.py", "line": 1}
    x = {"name": "x", "filename": "/x.py", "line": 2}
    dump = make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}, {"op": "barrier"}])
    dump["entries"][0]["frames"] = [f, x, f]
    dump["entries"][1]["frames"] = [f, 5, f]
    dump["entries"][2]["frames"] = [{"name": 1}]
    assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0)


@pytest.mark.parametrize(
    ("field_name", "pair"),
    [
        ("process_group", (None, 5)),
        ("input_dtypes", (None, 5)),
        ("input_sizes", (None, 5)),
        ("profiling_name", (1, True)),  # 1 == True: one group, named after its first member
        ("state", (1, True)),
    ],
)
def test_fixed_discrepancy_which_bad_value_is_named(field_name: str, pair: tuple, tmp_path: Path) -> None:
    """FIXED DISCREPANCY (order of checks, analysis/parse.py ``_by_identity``): with two bad
    values in one column, the full path names the one at the lower memory address (its
    groups come out of np.unique over id()), the scanner the first seen. These values are
    static objects, so their order is fixed: the entry order is chosen against it.
    (The same order also decides the "entry i" of "'profiling_name' is dict, not a valid
    value": ``_codes`` reports the index of the group, not of the entry.)"""
    low, high = sorted(pair, key=id)
    dump = make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}])
    dump["entries"][0][field_name] = high  # first seen, but at the higher address
    dump["entries"][1][field_name] = low
    assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0)


def test_fixed_discrepancy_full_path_hangs_comparing_two_dags(tmp_path: Path) -> None:
    """FIXED DISCREPANCY (analysis/parse.py ``stack_codes``, the full path hangs): two stacks
    [F, D1, F] and [F, D2, F] share a bucket, and ``eq`` compares two distinct 2**40-leaf
    DAGs (1.4 KB of pickle) element by element. The scanner answers at once ("a frame is
    list, expected a dict"); the full path does not finish (about 2**depth steps)."""
    f = {"name": "f", "filename": "/x.py", "line": 1}
    dump = make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}])
    dump["entries"][0]["frames"] = [f, dag(40), f]
    dump["entries"][1]["frames"] = [f, dag(40), f]
    path = _write(tmp_path / "rank_0", pickle.dumps(dump, 2))
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[2])
        from analysis.ingest import native, read
        native._frscan = None
        try:
            read.read_dump(sys.argv[1], 0)
        except read.DumpReadError as exc:
            print(exc)
        """
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", script, str(path), str(ROOT)],
            capture_output=True,
            text=True,
            timeout=8,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the full path did not finish reading a 1.4 KB dump in 8 s")
    fast = read_one_way(path, 0, DEFAULT_LIMITS, use_native=True)
    assert (fast.kind, fast.value) == ("error", out.stdout.strip())


@pytest.mark.parametrize("where", ["frame name", "version", "pg desc", "profiling_name"])
def test_fixed_bug_lone_surrogate_escapes_read_dump(where: str, tmp_path: Path) -> None:
    """FIXED BUG (analysis/parse.py, both paths alike): pickle allows lone surrogates
    ("surrogatepass"), but Arrow refuses them, so a text holding one that reaches a table
    raises UnicodeEncodeError out of read_dump instead of a DumpReadError (or a table)."""
    frames = [{"name": "f\ud800" if where == "frame name" else "f", "filename": "/x.py", "line": 1}]
    dump = make_dump("2.10", entries=[{"op": "all_reduce", "frames": frames}])
    if where == "version":
        dump["version"] = "2.\udc00"
    elif where == "pg desc":
        dump["pg_config"]["0"]["desc"] = "d\ud800"
    elif where == "profiling_name":
        dump["entries"][0]["profiling_name"] = "nccl:\ud800"
    full = assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0, native_taken=True)
    assert full.value == SURROGATE_ERROR


def test_fixed_bug_unhashable_value_names_a_group_not_an_entry(tmp_path: Path) -> None:
    """FIXED BUG (analysis/parse.py ``_codes``, both paths): "entry i 'profiling_name' is list,
    not a valid value" takes i from ``_first_bad`` over the distinct values (groups), not over
    the entries. Entries 0 and 1 share one string, entry 2 holds a list: the message must
    name entry 2; the scanner says entry 1, the full path entry 0 or 1 (by address), so the
    two paths also disagree from run to run (hypothesis finds it in the generated dumps)."""
    name = "nccl:all_reduce"
    dump = make_dump("2.10", entries=[{"op": "all_reduce"}, {"op": "broadcast"}, {"op": "barrier"}])
    dump["entries"][0]["profiling_name"] = dump["entries"][1]["profiling_name"] = name
    dump["entries"][2]["profiling_name"] = ["nccl:barrier"]
    full = assert_same_both_ways(_write(tmp_path / "rank_0", pickle.dumps(dump, 2)), 0, native_taken=True)
    assert full.value == "not a valid Flight Recorder dump: entry 2 'profiling_name' is list, not a valid value"


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x02}((" + _u("version") + _u("2.10") + b"uu.",  # SETITEMS into the dict below the inner MARK
        b"\x80\x02}" + _u("entries") + b"]((}ees.",  # APPENDS into the list below the inner MARK
        b"\x80\x02}" + _u("entries") + b"]((ees.",  # the same with nothing to append
    ],
    ids=["setitems", "appends", "appends-nothing"],
)
def test_fixed_discrepancy_appends_setitems_below_the_mark(data: bytes, tmp_path: Path) -> None:
    """FIXED DISCREPANCY (scanner, run(): 'e' and 'u'): after APPENDS/SETITEMS pops its MARK,
    the target container must lie above the next MARK still open, as the unpickler checks
    (do_append/do_setitems: ``x <= fence`` is "unexpected MARK found"). append_items and
    set_items only check ``from == 0``, so the scanner reads {"version": "2.10"} (tables)
    or {"entries": [{}]} ("entry 0 has no 'collective_seq_id'") where the full path says
    "corrupt or truncated pickle: UnpicklingError: unexpected MARK found"."""
    with pytest.raises(pickle.UnpicklingError, match="unexpected MARK found"):
        pickle.loads(data)
    assert timed_scan(data) is None, "the scanner read a pickle the unpickler refuses"
    full = assert_same_both_ways(_write(tmp_path / "rank_0", data), 0)
    assert full.value == "corrupt or truncated pickle: UnpicklingError: unexpected MARK found"


def test_a_shape_list_holding_none_is_a_clear_error(tmp_path: Path) -> None:
    """Found by the generated-dump test: ``input_sizes`` of ``(None,)`` (a tuple holding
    None, not a list of shapes) crashed both readers with a TypeError."""

    def entry(sizes: object, rid: int) -> dict:
        return {
            "frames": [], "record_id": rid, "pg_id": 0, "process_group": ("0", "default_pg"),
            "collective_seq_id": 0, "p2p_seq_id": 0, "op_id": rid + 1, "profiling_name": "nccl:all_reduce",
            "time_created_ns": 0, "input_sizes": sizes, "input_dtypes": ["Float"], "output_sizes": [[4]],
            "output_dtypes": ["Float"], "state": "scheduled", "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "retired": False, "is_p2p": False,
        }  # fmt: skip

    dump = {
        "version": "2.0",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0]"}},
        "entries": [entry((None,), 0), entry([], 1)],
    }
    path = _write(tmp_path / "rank_0", pickle.dumps(dump, protocol=0))
    full = assert_same_both_ways(path, 0)
    assert full.kind == "error" and "not a list of integers" in full.value
