"""Resource bounds: oversize files, decompression bombs, memo-sharing bombs, deep nesting,
huge ints and huge strings are refused per file (or handled) in bounded time and memory."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import pickle
import time
from pathlib import Path

import orjson
import pytest
from fr_versions import make_dump, write_dump
from fuzzing import dag, gzip_bomb

import analysis
from analysis.ingest.read import read_raw
from analysis.types import DumpReadError, Limits

WORLD = 3


def _entry_dump(**fields) -> dict:
    """A version-2.10 dump with one real-shaped entry; ``fields`` overwrite entry fields."""
    dump = make_dump(
        "2.10",
        world_size=WORLD,
        entries=[{"profiling_name": "nccl:all_reduce", "input_sizes": [[4, 4]], "collective_seq_id": 1}],
    )
    dump["entries"][0].update(fields)
    return dump


def _job(tmp_path: Path, bad_name: str, bad_bytes: bytes) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    write_dump(folder / "rank_0", _entry_dump())
    write_dump(folder / "rank_2", _entry_dump())
    (folder / bad_name).write_bytes(bad_bytes)
    return folder


def _bad_file_error(report, folder: Path, name: str) -> str:
    errors = {e.file: e.error for e in report.file_errors}
    assert str(folder / name) in errors, report.file_errors
    assert {0, 2} <= set(report.analysis.dumps.ranks)
    return errors[str(folder / name)]


# ------------------------------------------------------------------- file size


def test_oversize_file_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _job(tmp_path, "rank_1", b"")
    with open(folder / "rank_1", "wb") as f:  # sparse: 4 GiB on paper, nothing on disk
        f.truncate(4 << 30)
    real_open = open

    def guarded_open(path, *a, **k):
        assert not str(path).endswith("rank_1"), "the oversize file was opened"
        return real_open(path, *a, **k)

    monkeypatch.setattr("builtins.open", guarded_open)
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1)
    assert time.monotonic() - t0 < 10
    assert "size limit" in _bad_file_error(report, folder, "rank_1")


def test_size_limit_is_a_keyword_of_analyze(tmp_path: Path) -> None:
    folder = _job(tmp_path, "rank_1", pickle.dumps(_entry_dump(), 2) + b"\x00" * 5000)
    sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
    limit = max(sizes["rank_0"], sizes["rank_2"]) + 10
    report = analysis.analyze(folder, workers=1, limits=Limits(max_file_bytes=limit))
    assert "size limit" in _bad_file_error(report, folder, "rank_1")
    report = analysis.load(folder, workers=1, limits=Limits(max_file_bytes=limit))
    assert [e.file for e in report.file_errors] == [str(folder / "rank_1")]


def test_gzip_bomb_refused_by_the_size_limit(tmp_path: Path) -> None:
    limit = 4 << 20
    bomb = gzip_bomb(limit * 4)
    assert len(bomb) < limit // 100
    folder = _job(tmp_path, "rank_1.gz", bomb)
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1, limits=Limits(max_file_bytes=limit))
    assert time.monotonic() - t0 < 10
    error = _bad_file_error(report, folder, "rank_1.gz")
    # Refused either on reading past the limit or on the 4 GiB string the header declares.
    assert "size limit" in error or "more memory than a dump of its size" in error


def test_gzip_bomb_of_json_refused(tmp_path: Path) -> None:
    limit = 1 << 20
    payload = b'{"entries": [' + b" " * (limit * 2) + b"]}"
    folder = _job(tmp_path, "rank_1.json.gz", gzip.compress(payload, 9))
    report = analysis.analyze(folder, workers=1, limits=Limits(max_file_bytes=limit))
    assert "size limit" in _bad_file_error(report, folder, "rank_1.json.gz")


# ------------------------------------------------------------- expansion bombs


def _dag_bytes(where: str, as_tuple: bool) -> bytes:
    """A pickle whose ``where`` holds a 2**40-leaf DAG, written by pickle's own memo."""
    bomb = dag(40, as_tuple=as_tuple)
    dump = _entry_dump()
    if where == "version":
        dump["version"] = bomb
    elif where == "pg_config":
        dump["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": bomb}}
    elif where == "pg_status":
        dump["pg_status"] = {"0": {"last_enqueued_collective": bomb}}
    elif where == "all_entries":
        dump["entries"] = [dict(dump["entries"][0], input_sizes=bomb) for _ in range(1000)]
    else:
        dump["entries"][0][where] = bomb
    data = pickle.dumps(dump, 2)
    assert len(data) < 200_000
    return data


def _dup_tuple_dag_bytes() -> bytes:
    """Hand-built: ``(1,)`` then 40 x (DUP, TUPLE2) as an entry's process_group."""
    dump = _entry_dump(process_group="@@BOMB@@")
    data = pickle.dumps(dump, 2)
    bomb = b"K\x01\x85" + b"2\x86" * 40  # BININT1 1, TUPLE1, then DUP TUPLE2 forty times
    marker = b"X\x08\x00\x00\x00@@BOMB@@"
    assert data.count(marker) == 1
    return data.replace(marker, bomb)


_DAG_CASES = [
    (w, t)
    for w in (
        "input_sizes",
        "output_sizes",
        "input_dtypes",
        "frames",
        "process_group",
        "profiling_name",
        "state",
        "thread_id",
        "version",
        "pg_config",
        "pg_status",
        "all_entries",
    )
    for t in (False, True)
]


def _analyze_folders(folders: list[str], conn) -> None:
    out = []
    for folder in folders:
        t0 = time.monotonic()
        report = analysis.analyze(folder, workers=1)
        out.append(
            (
                folder,
                time.monotonic() - t0,
                sorted(report.analysis.dumps.ranks),
                [(e.file, e.error) for e in report.file_errors],
            )
        )
    conn.send(out)


def _analyze_bounded(folders: list[Path], seconds: float) -> list:
    """Analyze in a child process: a hang fails the test instead of stalling it."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_analyze_folders, args=([str(f) for f in folders], child))
    proc.start()
    try:
        assert parent.poll(seconds), f"analysis did not finish within {seconds} s"
        return parent.recv()
    finally:
        proc.kill()
        proc.join()


def test_memo_sharing_bombs_are_bounded(tmp_path: Path) -> None:
    """Nominal expansion 2**40 in a few KiB: never walked, hashed or printed in full."""
    folders = []
    for i, (where, as_tuple) in enumerate(_DAG_CASES):
        case = tmp_path / f"case{i}"
        case.mkdir()
        folders.append(_job(case, "rank_1", _dag_bytes(where, as_tuple)))
    dup = tmp_path / "dup"
    dup.mkdir()
    folders.append(_job(dup, "rank_1", _dup_tuple_dag_bytes()))
    results = _analyze_bounded(folders, seconds=120)
    for (where, as_tuple), (folder, seconds, ranks, errors) in zip([*_DAG_CASES, ("dup", True)], results):
        assert seconds < 10, (where, as_tuple, seconds)
        assert {0, 2} <= set(ranks), (where, as_tuple, errors)
        # The bomb either became an error for its file or was harmless (a field the parser never walks).
        assert 1 in ranks or [f for f, _ in errors] == [os.path.join(folder, "rank_1")], (where, errors)


def test_memo_index_bomb_is_a_file_error(tmp_path: Path) -> None:
    """LONG_BINPUT 2**31-1 would make the C unpickler allocate and zero 32 GB."""
    import struct

    bombs = {
        "plain": b"\x80\x02}r" + struct.pack("<I", 2**31 - 1) + b".",
        "gzip": gzip.compress(b"\x80\x02}r" + struct.pack("<I", 2**30) + b"."),
    }
    folders = []
    for name, payload in bombs.items():
        (tmp_path / name).mkdir()
        folders.append(_job(tmp_path / name, "rank_1", payload))
    for folder, seconds, ranks, errors in _analyze_bounded(folders, seconds=120):
        assert seconds < 10
        assert ranks == [0, 2]
        assert errors == [
            (os.path.join(folder, "rank_1"), "pickle asks for more memory than a dump of its size can need")
        ]


def test_memory_cap_is_lifted_after_each_load(tmp_path: Path) -> None:
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS)
    folder = _job(tmp_path, "rank_1", b"\x80\x02}r\xff\xff\xff\x7f.")
    report = analysis.analyze(folder, workers=1, use_cache=False)
    assert [e.file for e in report.file_errors] == [str(folder / "rank_1")]
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def test_special_files_named_like_dumps_are_file_errors(tmp_path: Path) -> None:
    """A FIFO would block open() forever; /dev/zero behind a symlink never ends."""
    folder = _job(tmp_path, "rank_1", b"")
    (folder / "rank_1").unlink()
    os.mkfifo(folder / "rank_1")
    (folder / "rank_3").symlink_to("/dev/zero")
    [(_, seconds, ranks, errors)] = _analyze_bounded([folder], seconds=60)
    assert seconds < 10 and ranks == [0, 2]
    assert dict(errors) == {
        str(folder / "rank_1"): "not a regular file (a pipe, socket or device)",
        str(folder / "rank_3"): "not a regular file (a pipe, socket or device)",
    }


# ---------------------------------------------------------------- deep nesting


def _spliced(field: str, payload: bytes) -> bytes:
    data = pickle.dumps(_entry_dump(**{field: "@@DEEP@@"}), 2)
    return data.replace(b"X\x08\x00\x00\x00@@DEEP@@", payload)


@pytest.mark.parametrize("field", ["input_sizes", "input_dtypes", "frames", "process_group", "profiling_name"])
def test_deep_list_nesting_pickle(field: str, tmp_path: Path) -> None:
    depth = 100_000
    deep = b"(" * depth + b"]" + b"l" * depth  # MARK x N, EMPTY_LIST, LIST x N
    folder = _job(tmp_path, "rank_1", _spliced(field, deep))
    report = analysis.analyze(folder, workers=1)
    _bad_file_error(report, folder, "rank_1")


def test_deep_dict_nesting_pickle_and_json(tmp_path: Path) -> None:
    depth = 100_000
    deep = b"}(X\x01\x00\x00\x00a" * depth + b"N" + b"u" * depth
    folder = _job(tmp_path, "rank_1", _spliced("frames", deep))
    (folder / "rank_3.json").write_bytes(b"[" * depth + b"]" * depth)
    (folder / "rank_4.json").write_bytes(b'{"entries": ' + b"[" * depth + b"]" * depth + b"}")
    report = analysis.analyze(folder, workers=1)
    _bad_file_error(report, folder, "rank_1")
    _bad_file_error(report, folder, "rank_3.json")
    _bad_file_error(report, folder, "rank_4.json")


def test_deep_version_value_read_directly(tmp_path: Path) -> None:
    depth = 100_000
    data = pickle.dumps({"version": "@@DEEP@@", "entries": []}, 2)
    data = data.replace(b"X\x08\x00\x00\x00@@DEEP@@", b"(" * depth + b"]" + b"l" * depth)
    path = tmp_path / "rank_0"
    path.write_bytes(data)
    raw, _ = read_raw(str(path))  # loads (the C unpickler is not recursive) ...
    report = analysis.analyze(tmp_path, workers=1)  # ... and is never printed in full
    assert report.analysis.dumps.ranks == [0] or report.file_errors
    del raw


# ------------------------------------------------------------ huge ints, strings


def _long4(n_bytes: int) -> bytes:
    return b"\x8b" + n_bytes.to_bytes(4, "little") + b"\x01" * n_bytes  # LONG4


@pytest.mark.parametrize(
    "field", ["collective_seq_id", "record_id", "time_created_ns", "duration_ms", "thread_id", "timeout_ms"]
)
def test_huge_int_in_entry(field: str, tmp_path: Path) -> None:
    data = pickle.dumps(_entry_dump(**{field: "@@DEEP@@"}), 2).replace(b"X\x08\x00\x00\x00@@DEEP@@", _long4(1 << 20))
    folder = _job(tmp_path, "rank_1", data)
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1)
    assert time.monotonic() - t0 < 10
    assert {0, 2} <= set(report.analysis.dumps.ranks)
    errors = {e.file: e.error for e in report.file_errors}
    if str(folder / "rank_1") in errors:
        assert "unexpected" not in errors[str(folder / "rank_1")]


def test_huge_ints_elsewhere(tmp_path: Path) -> None:
    big = 10**5000
    dump = _entry_dump(input_sizes=[[big]], frames=[{"name": "f", "filename": "x.py", "line": big}])
    dump["version"] = big
    dump["pg_status"] = {"0": {"last_enqueued_collective": big}}
    folder = _job(tmp_path, "rank_1", pickle.dumps(dump, 2))
    error = _bad_file_error(analysis.analyze(folder, workers=1), folder, "rank_1")
    assert "unexpected" not in error and "4300" not in error


@pytest.mark.parametrize("field", ["profiling_name", "process_group", "thread_name", "state"])
def test_huge_strings(field: str, tmp_path: Path) -> None:
    huge = "x" * (64 << 20)
    value = (huge, huge) if field == "process_group" else huge
    dump = _entry_dump(**{field: value})
    dump["entries"] = dump["entries"] * 1000  # the same string shared by 1000 entries
    folder = _job(tmp_path, "rank_1", pickle.dumps(dump, 2))
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1)
    assert time.monotonic() - t0 < 20
    assert {0, 2} <= set(report.analysis.dumps.ranks)


def test_shared_giant_rank_list_text_is_bounded(tmp_path: Path) -> None:
    ranks = "[" + ", ".join(["0"] * 2_000_000) + "]"
    dump = _entry_dump()
    cfg = {"name": "0", "desc": "default_pg", "ranks": ranks}
    dump["pg_config"] = {str(i): cfg for i in range(200)}
    folder = _job(tmp_path, "rank_1", pickle.dumps(dump, 2))
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1, limits=Limits(max_file_bytes=64 << 20))
    assert time.monotonic() - t0 < 20
    assert "pg_config" in _bad_file_error(report, folder, "rank_1")


# --------------------------------------------------------------------- ranks


def test_rank_far_beyond_any_job_is_a_file_error(tmp_path: Path) -> None:
    folder = _job(tmp_path, "rank_900000000", pickle.dumps(_entry_dump(), 2))
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1)
    assert time.monotonic() - t0 < 10
    assert "limit" in _bad_file_error(report, folder, "rank_900000000")


def test_group_naming_a_rank_far_beyond_any_job(tmp_path: Path) -> None:
    dump = _entry_dump()
    dump["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2000000000]"}}
    folder = _job(tmp_path, "rank_1", orjson.dumps(dump))
    t0 = time.monotonic()
    report = analysis.analyze(folder, workers=1)
    assert time.monotonic() - t0 < 10
    assert "rank above" in _bad_file_error(report, folder, "rank_1")


def test_read_raw_reports_the_limit_in_the_message(tmp_path: Path) -> None:
    path = tmp_path / "rank_0"
    path.write_bytes(b"\x80\x02" + b"N" * 100 + b".")
    with pytest.raises(DumpReadError, match="size limit of 50 bytes"):
        read_raw(str(path), Limits(max_file_bytes=50))


def test_a_long_rank_list_naming_a_huge_rank_is_refused_in_every_file() -> None:
    """Long rank lists are checked once per process and remembered: both files are refused."""
    from analysis.ingest.parse import parse_dump
    from analysis.types import DumpFormatError

    ranks = str(list(range(200)) + [10**9])  # long enough to be remembered
    for rank in (0, 1):
        raw = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}}}
        with pytest.raises(DumpFormatError, match="names a rank above"):
            parse_dump(raw, rank, f"rank_{rank}", "pickle")
    fine = {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(200)))}}}
    assert parse_dump(fine, 0, "rank_0", "pickle").configs.num_rows == 1
