"""Hostile requests to ``flightdeck serve``: each is refused or answered within its limits, with an
error naming the path and the reason; nothing outside the root is read; the server goes on.

The files planted outside the root are a dump whose group description is a marker (read, it
would show in an answer) and a named pipe (opened, the request would hang)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from locations import SAMPLE_DUMPS
from service_clients import get, http_server

from analysis.service.memo import Busy, Memo

pytest.importorskip("fastapi")

MARKER = "PLANTED_OUTSIDE_THE_ROOT"
MAX_FILES, MAX_MB, MAX_FILE_MB = 1000, 64, 16


def hostile_pickle(marker: Path) -> bytes:
    """A pickle that, if unpickled as pickle does, runs ``touch MARKER``."""
    command = f"touch {marker}".encode()
    return b"cos\nsystem\n(S'" + command + b"'\ntR."


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "root", base / "outside"
    shutil.copytree(SAMPLE_DUMPS / "stuck_compute", root / "good")
    outside.mkdir()
    planted = outside / "secret"
    shutil.copytree(SAMPLE_DUMPS / "healthy", planted)
    dump = next(p for p in sorted(planted.iterdir()) if p.name.startswith("rank_"))
    dump.write_bytes(dump.read_bytes().replace(b"default_pg", MARKER.encode()[:10]))  # same length: still a dump
    (outside / "planted_json_rank_0.json").write_text(
        json.dumps({"version": "2.4", "pg_config": {"0": {"desc": MARKER}}})
    )
    os.mkfifo(outside / "pipe")
    shutil.copytree(SAMPLE_DUMPS / "stuck_compute", root / "mixed")
    (root / "mixed" / "rank_8").symlink_to(outside / "pipe")
    (root / "mixed" / "rank_9.json").symlink_to(outside / "planted_json_rank_0.json")
    os.mkfifo(root / "mixed" / "rank_10")  # inside the root, but no file to read
    (root / "linked").symlink_to(planted, target_is_directory=True)
    (root / "hostile").mkdir()
    (root / "hostile" / "rank_0").write_bytes(hostile_pickle(base / "pwned"))
    for folder, size in (("huge", (MAX_MB + 1) << 20), ("big_file", (MAX_FILE_MB + 1) << 20)):
        (root / folder).mkdir()
        with open(root / folder / "rank_0", "wb") as f:
            f.truncate(size)  # sparse: no disk used
    for folder, count in (("many", MAX_FILES + 500), ("some_empty", 600)):
        (root / folder).mkdir()
        for i in range(count):
            (root / folder / f"rank_{i}").touch()
    return {"root": root, "outside": outside, "base": base}


@pytest.fixture(scope="module")
def url(layout: dict[str, Path]) -> Iterator[str]:
    limits = ["--max-files", str(MAX_FILES), "--max-mb", str(MAX_MB), "--max-file-mb", str(MAX_FILE_MB)]
    with http_server(layout["root"], layout["base"], *limits) as (base_url, _):
        yield base_url


def test_paths_out_of_the_root_are_refused(url: str, layout: dict[str, Path]) -> None:
    outside = layout["outside"]
    for path in ["..", "../outside/secret", "good/../../outside/secret", str(outside / "secret"), "/etc", "linked"]:
        status, body = get(url, "/analyze", path=path)
        assert status == 403, (path, body)
        assert body["error"].startswith(f"{path}: refused: it resolves outside the root"), body
    status, body = get(url, "/compare", earlier=str(outside / "secret"), later="good")
    assert status == 403 and "outside the root" in body["error"]
    status, body = get(url, "/explain_rank", path="/proc/self", rank=0)
    assert status == 403
    status, body = get(url, "/analyze", path=str(layout["root"] / "good"))  # absolute, but under the root
    assert status == 200 and body["suspect_ranks"] == [5]


def test_files_linked_from_outside_are_not_read(url: str) -> None:
    start = time.perf_counter()
    status, body = get(url, "/analyze", path="mixed", timeout=60)  # opening the pipe would hang here
    assert time.perf_counter() - start < 60
    assert status == 200 and body["ranks_loaded"] == 8 and body["suspect_ranks"] == [5]
    refused = {Path(e["file"]).name: e["error"] for e in body["file_errors"]}
    outside = "not read: it resolves outside the root (a symlink out of it?)"
    assert refused == {
        "rank_8": outside,
        "rank_9.json": outside,
        "rank_10": "not read: not a regular file (a pipe, a device or a socket)",
    }
    for route, params in [("/explain_rank", {"rank": 9}), ("/group_states", {"group": "0"})]:
        status, answer = get(url, route, path="mixed", **params)
        assert MARKER[:10] not in str(answer) and MARKER not in str(answer)
    assert MARKER[:10] not in str(body) and MARKER not in str(body)


def test_a_hostile_pickle_runs_nothing(url: str, layout: dict[str, Path]) -> None:
    status, body = get(url, "/analyze", path="hostile")
    assert status == 200 and body["ranks_loaded"] == 0
    assert [Path(e["file"]).name for e in body["file_errors"]] == ["rank_0"]
    assert not (layout["base"] / "pwned").exists()
    status, body = get(url, "/explain_rank", path="hostile", rank=0)
    assert status == 404 and "no Flight Recorder dump could be read" in body["error"]


def test_sizes_and_counts_past_the_limits(url: str) -> None:
    status, body = get(url, "/analyze", path="huge")
    assert status == 403
    assert body["error"].startswith("huge/rank_0: refused: its dump files hold") and "(limit --max-mb)" in body["error"]
    status, body = get(url, "/analyze", path="big_file")  # one file past the per-file limit: that file's error
    assert status == 200 and body["ranks_loaded"] == 0
    assert "larger than the size limit" in body["file_errors"][0]["error"]
    start = time.perf_counter()
    status, body = get(url, "/analyze", path="many")
    assert (
        status == 403
        and body["error"] == f"many: refused: the folder holds more than {MAX_FILES} files (limit --max-files)"
    )
    status, body = get(url, "/analyze", path="some_empty")  # under the limit: answered, each file an error
    assert status == 200 and body["ranks_loaded"] == 0 and len(body["file_errors"]) == 600
    assert time.perf_counter() - start < 60


def test_bad_arguments_are_errors_not_crashes(url: str) -> None:
    assert get(url, "/analyze", path="")[0] == 403
    assert (
        get(url, "/analyze", path="no_such_folder")[1]["error"]
        == "no_such_folder: no such file or folder under the root"
    )
    assert get(url, "/explain_rank", path="good", rank=-1)[0] == 422
    assert get(url, "/explain_rank", path="good", rank="x")[0] == 422
    status, body = get(url, "/group_states", path="good", group="no_such_group")
    assert status == 404 and "no such process group" in body["error"]
    assert get(url, "/analyze", path="good\x00")[0] == 403


def test_the_server_still_serves_after_all_that(url: str) -> None:
    status, body = get(url, "/analyze", path="good")
    assert status == 200 and body["verdict"] == "hang" and body["suspect_ranks"] == [5]
    assert get(url, "/health")[1]["ok"] is True


def test_analyses_beyond_the_slots_wait_then_are_refused_as_busy() -> None:
    memo: Memo[int] = Memo(size=4, slots=1, wait_s=0.3)
    release, started = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        release.wait(10)
        return 1

    first = threading.Thread(target=memo.get, args=("a", slow, "a"))
    first.start()
    assert started.wait(10)
    with pytest.raises(Busy, match="b: busy: every analysis slot is taken"):
        memo.get("b", lambda: 2, "b")
    release.set()
    first.join(10)
    assert memo.get("a", lambda: 3, "a") == (1, True)  # from memory


def test_the_same_set_asked_at_once_is_analyzed_once() -> None:
    memo: Memo[int] = Memo(size=4, slots=2, wait_s=10)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        time.sleep(0.2)
        return 7

    threads = [threading.Thread(target=memo.get, args=("k", compute, "k")) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert calls == [1] and memo.hits == 7 and memo.misses == 1


def test_a_failed_analysis_is_not_kept() -> None:
    memo: Memo[int] = Memo(size=4, slots=1, wait_s=1)
    with pytest.raises(ValueError):
        memo.get("k", lambda: (_ for _ in ()).throw(ValueError("bad")), "k")
    assert memo.get("k", lambda: 5, "k") == (5, False)


def test_the_command_says_what_to_install_without_the_extra(tmp_path: Path) -> None:
    """Without fastapi and uvicorn (hidden here), ``flightdeck serve`` names them and the extra."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import importlib.util, sys\n"
        "_find = importlib.util.find_spec\n"
        "def find_spec(name, package=None):\n"
        "    return None if name.split('.')[0] in ('fastapi', 'uvicorn', 'mcp') else _find(name, package)\n"
        "importlib.util.find_spec = find_spec\n"
    )
    from service_clients import FLIGHTDECK

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path)}
    for command, names in (("serve", "fastapi, uvicorn"), ("mcp", "mcp")):
        done = subprocess.run(
            [str(FLIGHTDECK), command, "--root", str(tmp_path)],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert f"error: flightdeck {command} needs {names}: pip install 'flightdeck[serve]'" in done.stderr
