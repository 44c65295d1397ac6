"""Tests of the FR test-dump factory in tests/fr_versions.py."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fr_versions as frv

ENTRIES = [
    {"op": "all_reduce", "state": "completed", "duration_ms": 1.5},
    {
        "op": "broadcast",
        "state": "started",
        "frames": [{"name": "f", "filename": "x.py", "line": 3}],
    },
    {"op": "send 0->1", "state": "scheduled", "collective_seq_id": 0, "p2p_seq_id": 1},
]


def test_supported_versions() -> None:
    assert frv.SUPPORTED_VERSIONS[0] == "2.0"
    assert frv.SUPPORTED_VERSIONS[-1] == "2.10"
    assert len(frv.SUPPORTED_VERSIONS) == 11
    with pytest.raises(ValueError):
        frv.make_dump("2.11")


def test_2_0_pickle_exact_shape() -> None:
    dump = frv.make_dump("2.0", entries=ENTRIES[:1])
    assert set(dump) == {"version", "pg_config", "entries"}
    assert set(dump["entries"][0]) == {
        "frames", "record_id", "pg_id", "process_group", "collective_seq_id",
        "p2p_seq_id", "op_id", "profiling_name", "time_created_ns", "duration_ms",
        "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
        "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
        "is_p2p",
    }  # fmt: skip


def test_2_10_json_exact_shape() -> None:
    dump = frv.make_dump("2.10", fmt="json", entries=ENTRIES[2:])
    assert set(dump) == {
        "version",
        "comm_lib_version",
        "pg_config",
        "pg_status",
        "entries",
    }
    assert set(dump["entries"][0]) == {
        "record_id", "pg_id", "process_group", "thread_name", "thread_id",
        "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
        "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
        "output_dtypes", "state", "time_discovered_started_ns",
        "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p",
    }  # fmt: skip


def test_library_version_key() -> None:
    for v in ("2.0", "2.4", "2.5"):
        d = frv.make_dump(v)
        assert "nccl_version" not in d and "comm_lib_version" not in d
    for v in ("2.6", "2.7", "2.8", "2.9"):
        d = frv.make_dump(v, comm_lib_version="2.21.5")
        assert d["nccl_version"] == "2.21.5" and "comm_lib_version" not in d
    d = frv.make_dump("2.10", comm_lib_version="2.27.3")
    assert d["comm_lib_version"] == "2.27.3" and "nccl_version" not in d


@pytest.mark.parametrize("version", frv.SUPPORTED_VERSIONS)
@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_entry_keys_match_table(version: str, fmt: str) -> None:
    if fmt == "json" and version in ("2.0", "2.1", "2.2"):
        with pytest.raises(ValueError):
            frv.make_dump(version, fmt=fmt)
        return
    dump = frv.make_dump(version, fmt=fmt, entries=ENTRIES)
    first, second = dump["entries"][0], dump["entries"][1]
    assert set(first) == frv.expected_entry_keys(version, fmt, with_duration=True)
    assert set(second) == frv.expected_entry_keys(version, fmt)
    assert ("pg_status" in dump) == (version not in ("2.0", "2.1", "2.2"))
    assert ("timeout_ms" in first) == (version not in ("2.0", "2.1"))
    assert ("thread_id" in first) == (version in ("2.9", "2.10"))


def test_json_conventions() -> None:
    dump = frv.make_dump("2.9", fmt="json", entries=ENTRIES)
    for e in dump["entries"]:
        assert "frames" not in e
        assert isinstance(e["process_group"], list)
        assert isinstance(e["thread_id"], str)
    scheduled = dump["entries"][2]
    assert scheduled["time_discovered_started_ns"] == 0
    assert scheduled["time_discovered_completed_ns"] == 0
    status = dump["pg_status"]["0"]
    assert status == {
        "last_enqueued_collective": "2",
        "last_started_collective": "2",
        "last_completed_collective": "1",
    }
    assert "entries" not in frv.make_dump("2.9", fmt="json")


def test_pickle_conventions() -> None:
    dump = frv.make_dump("2.4", entries=ENTRIES)
    entries = dump["entries"]
    assert entries[0]["process_group"] == ("0", "default_pg")
    assert entries[1]["frames"] == [{"name": "f", "filename": "x.py", "line": 3}]
    assert entries[2]["time_discovered_started_ns"] is None
    assert entries[2]["is_p2p"] is True
    assert dump["pg_status"]["0"]["last_completed_collective"] == 1
    assert dump["pg_config"]["0"]["ranks"] == "[0, 1]"
    assert frv.make_dump("2.4")["entries"] == []


def test_write_dump_roundtrip(tmp_path: Path) -> None:
    dump = frv.make_dump("2.10", entries=ENTRIES)
    p = frv.write_dump(tmp_path / "rank_0", dump, "pickle")
    assert p.read_bytes()[:2] == b"\x80\x02"  # pickle protocol 2
    loaded = pickle.loads(p.read_bytes())
    assert loaded == dump
    assert isinstance(loaded["entries"][0]["process_group"], tuple)
    jdump = frv.make_dump("2.10", fmt="json", entries=ENTRIES)
    j = frv.write_dump(tmp_path / "rank_1.json", jdump, "json")
    assert json.loads(j.read_text()) == jdump
