"""The tables cache: a second open of an unchanged set reads no dump; a changed file is read again."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from locations import SAMPLE_DUMPS

load_module = importlib.import_module("analysis.tables.load")
load = load_module.load


@pytest.fixture
def dumps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLIGHTDECK_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "dumps"
    shutil.copytree(SAMPLE_DUMPS / "size_mismatch", folder)
    return folder


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = load_module.map_files

    def counting(files, *args, **kwargs):
        calls.append(len(files))
        return real(files, *args, **kwargs)

    monkeypatch.setattr(load_module, "map_files", counting)
    return calls


def test_second_open_reads_no_dump(dumps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    first = load(dumps)  # the cache is written in the background meanwhile
    second = load(dumps)
    assert reads == [len(first.ranks)]
    assert second.entries.equals(first.entries)
    assert second.ranks == first.ranks


def test_a_changed_file_is_read_again(dumps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _reads(monkeypatch)
    load(dumps)
    victim = min(dumps.glob("rank_*"))
    victim.write_bytes(b"not a dump")
    again = load(dumps)
    assert len(reads) == 2
    assert any(e.file == str(victim) for e in again.file_errors)


def test_the_entries_written_from_the_frame_reopen_as_the_same_frame(tmp_path: Path) -> None:
    import pandas as pd

    from analysis.tables.from_frame import arrow_view

    frame = pd.DataFrame(
        {
            "n": pd.array([1, None, 3], dtype=pd.ArrowDtype(pa.int32())),
            "text": pd.Categorical(["a", None, "b"], categories=["b", "a", "unused"]),
        }
    )
    pq.write_table(arrow_view(frame), tmp_path / "t.parquet")
    again = load_module._to_pandas(pq.read_table(tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(again, frame, check_exact=True)


def test_memory_available_reads_this_machine() -> None:
    from analysis.ingest.process_limits import memory_available

    available = memory_available()
    if os.path.exists("/proc/meminfo"):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        assert 0 < available <= total
