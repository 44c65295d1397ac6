"""``flightdeck serve --root DIR`` as a user starts it (the venv's command, from another folder):
a real uvicorn server on a free port gives the command line's answers, and many requests at
once on a 1,024-rank set are all answered, by one analysis, within bounded memory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dask_cluster import clean_env
from locations import ROOT, SAMPLE_DUMPS
from service_clients import cli_json, get, http_server, peak_rss_bytes

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

RANKS, CULPRIT = 1024, 77
SAMPLES = ["stuck_compute", "slow_rank", "slow_rank.earlier", "size_mismatch"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few sample sets and a synthetic 1,024-rank set in which rank 77 is stuck."""
    out = tmp_path_factory.mktemp("serve-root")
    for name in SAMPLES:
        shutil.copytree(SAMPLE_DUMPS / name, out / name)
    subprocess.run(
        [sys.executable, "-m", "benchmarks.synth", str(out / "job1024"), "--ranks", str(RANKS), "--entries", "200"]
        + ["--fault", "stuck", "--culprit", str(CULPRIT)],
        cwd=ROOT,  # the generator is part of the checkout, not of the package
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="module")
def server(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen]]:
    with http_server(root, tmp_path_factory.mktemp("elsewhere")) as running:
        yield running


def test_the_api_answers_as_the_command_line(root: Path, server: tuple[str, subprocess.Popen]) -> None:
    url, _ = server
    said = {name: cli_json(root / name) for name in ["stuck_compute", "size_mismatch", "job1024"]}
    for name, expected in said.items():
        status, body = get(url, "/analyze", path=name)
        assert status == 200, body
        assert body == expected, name  # the whole report
    status, body = get(url, "/compare", earlier="slow_rank.earlier", later="slow_rank")
    assert status == 200, body
    expected = cli_json(root / "slow_rank", "--compare", str(root / "slow_rank.earlier"))
    assert body["compare"] == expected["compare"] and body["compare"]["slow_ranks"] == [5]
    status, body = get(url, "/explain_rank", path="job1024", rank=CULPRIT)
    assert status == 200 and body["role"] == "suspect" and body["newest_entries"]
    assert sum(w["count"] for w in body["waited_on_by"]) >= 1
    wave = said["job1024"]["wavefront"]
    status, body = get(url, "/group_states", path="job1024", group=wave["pg_name"])
    assert status == 200 and body["wavefront_seq"] == wave["collective_seq_id"]
    assert sorted(r for row in body["rows"] for r in row["ranks"]) == sorted(wave["pg_ranks"])
    schema = get(url, "/openapi.json")[1]
    assert {"/analyze", "/explain_rank", "/group_states", "/compare"} <= set(schema["paths"])
    assert all(set(ops) == {"get"} for ops in schema["paths"].values())  # read-only


@pytest.mark.slow
def test_twenty_requests_at_once_are_all_answered(root: Path, tmp_path: Path) -> None:
    """A fresh server: 20 requests on the 1,024-rank set at once, none lost, one analysis; the
    next question comes from memory, in milliseconds."""
    with http_server(root, tmp_path, "--max-concurrent", "2") as (url, proc):
        asks = [("/analyze", {"path": "job1024"})] * 8
        asks += [("/explain_rank", {"path": "job1024", "rank": r}) for r in (CULPRIT, 0, 5, 1023)] * 2
        asks += [("/group_states", {"path": "job1024", "group": "0"})] * 4
        assert len(asks) == 20
        start = time.perf_counter()
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda a: get(url, a[0], timeout=300, **a[1]), asks))
        first_s = time.perf_counter() - start
        assert [status for status, _ in answers] == [200] * 20, [b for s, b in answers if s != 200]
        assert all(
            body["suspect_ranks"] == [CULPRIT] for (route, _), (_, body) in zip(asks, answers) if route == "/analyze"
        )
        assert all(
            body["rank"] in (CULPRIT, 0, 5, 1023)
            for (route, _), (_, body) in zip(asks, answers)
            if route == "/explain_rank"
        )
        health = get(url, "/health")[1]
        assert health["cache"]["misses"] == 1  # one analysis for all twenty
        start = time.perf_counter()
        status, body = get(url, "/analyze", path="job1024")
        again_s = time.perf_counter() - start
        assert status == 200 and body["suspect_ranks"] == [CULPRIT]
        assert again_s < 0.5 and again_s < first_s / 4, (again_s, first_s)
        assert peak_rss_bytes(proc.pid) < 1 << 30  # about 0.25 GB here
