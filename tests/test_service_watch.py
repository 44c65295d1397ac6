"""``watch_status(dir)`` of ``flightdeck mcp`` (the SDK's client over stdio) and ``flightdeck serve``
(a real server): the line ``flightdeck watch --json-lines`` prints for the newest complete snapshot
of a watched folder, the snapshots not complete yet with the ranks they lack, and the same
refusals as the other tools. Everything runs as a user runs it, from another folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from dask_cluster import clean_env
from locations import SAMPLE_DUMPS
from service_clients import FLIGHTDECK, get, http_server, run_async

pytest.importorskip("mcp")
pytest.importorskip("fastapi")
from mcp import Client, StdioServerParameters

LONG_AGO = time.time() - 3600
TIMING = ("seconds", "report")
"""The line's fields that differ by run: how long reading took, and where watch wrote its report."""


def add_snapshot(job: Path, name: str, sample: str, ranks: range = range(8), settled: bool = True) -> None:
    """``sample``'s dumps of ``ranks`` as the snapshot subfolder ``name``; settled: written an hour ago."""
    folder = job / name
    folder.mkdir(parents=True, exist_ok=True)
    for r in ranks:
        target = folder / f"rank_{r}"
        shutil.copyfile(SAMPLE_DUMPS / sample / f"rank_{r}", target)
        if settled:
            os.utime(target, (LONG_AGO, LONG_AGO))


def still_arriving(folder: Path) -> None:
    """The snapshot's files written just now (once a server is up, however long it took to start)."""
    for f in folder.iterdir():
        os.utime(f)


def watch_lines(job: Path, cwd: Path, snapshots: int) -> list[dict[str, Any]]:
    """``flightdeck watch JOB --all --json-lines`` until ``snapshots`` lines, from ``cwd``."""
    done = subprocess.run(
        [str(FLIGHTDECK), "watch", str(job), "--all", "--json-lines", "--settle", "0", "--wait-missing", "0"]
        + ["--poll", "0.05", "--max-snapshots", str(snapshots), "--report-dir", str(cwd / "reports")],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(x) for x in done.stdout.splitlines()]


def same_line(served: dict[str, Any], said: dict[str, Any]) -> None:
    assert {k: v for k, v in served.items() if k not in TIMING} == {k: v for k, v in said.items() if k not in TIMING}
    assert served["report"] is None  # the servers write nothing


async def ask(root: Path, calls: list[dict[str, Any]]) -> list[Any]:
    params = StdioServerParameters(command=str(FLIGHTDECK), args=["mcp", "--root", str(root)], cwd="/", env=clean_env())
    async with Client(params, read_timeout_seconds=120) as client:
        assert "watch_status" in [t.name for t in (await client.list_tools()).tools]
        still_arriving(root / "job" / "snap-02")
        return [await client.call_tool("watch_status", args) for args in calls]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """ROOT/job: a slow rank's two snapshots, settled, and a third still arriving (ranks 0-5 of 8);
    OUTSIDE/job, the same folder outside the root, and ROOT/link pointing at it."""
    root = tmp_path / "root"
    job = root / "job"
    add_snapshot(job, "snap-00", "slow_rank.earlier")
    add_snapshot(job, "snap-01", "slow_rank")
    add_snapshot(job, "snap-02", "stuck_twice.earlier", range(6), settled=False)
    outside = tmp_path / "outside"
    shutil.copytree(job, outside / "job")
    (root / "link").symlink_to(outside / "job")
    return root


def test_mcp_watch_status_is_the_watch_line(root: Path, tmp_path: Path) -> None:
    job = root / "job"
    calls = [{"dir": "job"}, {"dir": "job"}, {"dir": "../outside/job"}, {"dir": "link"}, {"dir": "job/snap-00/rank_0"}]
    calls.append({"dir": "job", "world": 10**9})
    first, again, outside, link, a_file, huge = run_async(ask, root, calls)
    assert not first.is_error, first.content
    got = first.structured_content
    assert json.loads(first.content[0].text) == got
    assert (got["latest"], got["previous"], got["snapshots"]) == ("snap-01", "snap-00", ["snap-00", "snap-01"])
    assert got["waiting"] == [{"snapshot": "snap-02", "missing_ranks": [6, 7]}]  # still arriving
    assert got["line"]["state"] == "slow" and got["line"]["ranks"] == [5]
    said = watch_lines(job, tmp_path, 2)  # snap-02 is not read: it would be the third line
    same_line(got["line"], said[-1])
    assert again.structured_content == got  # from memory: the same line, the same seconds
    for refused in (outside, link):
        text = refused.content[0].text
        assert refused.is_error and "refused" in text and "outside the root" in text, text
    assert a_file.is_error and "not a folder" in a_file.content[0].text
    assert huge.is_error and "world 1000000000 is not between 1 and" in huge.content[0].text


def test_http_watch_status_follows_the_snapshots(root: Path, tmp_path: Path) -> None:
    """The slow pair, then the stuck pair arrives: the newest complete snapshot is hung, rank 5;
    asked again, from memory."""
    job = root / "job"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with http_server(root, elsewhere) as (url, _):
        still_arriving(job / "snap-02")
        status, body = get(url, "/watch_status", dir="job")
        assert status == 200, body
        assert body["latest"] == "snap-01" and body["line"]["state"] == "slow"
        assert body["waiting"] == [{"snapshot": "snap-02", "missing_ranks": [6, 7]}]
        add_snapshot(job, "snap-02", "stuck_twice.earlier")  # complete now
        add_snapshot(job, "snap-03", "stuck_twice")
        status, body = get(url, "/watch_status", dir="job")
        assert status == 200, body
        assert (body["latest"], body["previous"], body["waiting"]) == ("snap-03", "snap-02", [])
        assert body["snapshots"] == ["snap-00", "snap-01", "snap-02", "snap-03"]
        line = body["line"]
        assert line["state"] == "hung" and line["ranks"] == [5] and line["missing_ranks"] == []
        said = watch_lines(job, tmp_path, 4)
        assert [x["state"] for x in said] == ["baseline", "slow", "baseline", "hung"]
        same_line(line, said[-1])
        before = get(url, "/health")[1]["watch_cache"]
        start = time.perf_counter()
        status, again = get(url, "/watch_status", dir="job")
        again_s = time.perf_counter() - start
        assert status == 200 and again == body
        after = get(url, "/health")[1]["watch_cache"]
        assert after == {"hits": before["hits"] + 1, "misses": before["misses"]}
        assert again_s < 0.5, again_s
        status, refused = get(url, "/watch_status", dir=str(tmp_path / "outside" / "job"))
        assert status == 403 and "outside the root" in refused["error"]
        status, in_place = get(url, "/watch_status", dir="job/snap-00")  # dump files rewritten in place: read there
        assert status == 200 and in_place["line"]["state"] == "baseline" and in_place["latest"] == "generation-00001"
        assert in_place["line"]["ranks_loaded"] == 8
        assert "/watch_status" in get(url, "/openapi.json")[1]["paths"]
