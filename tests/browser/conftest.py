"""Fixtures for the browser tests: a real Streamlit server and headless Chromium.

The tests drive ``/usr/bin/chromium`` (Playwright does not download a browser here)
and skip with a reason when it, or Playwright, is missing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import CHROMIUM, CHROMIUM_ARGS, REPO, RUN_AHEAD_CULPRIT, RUN_AHEAD_SEQS, SCENARIO, Server


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def stuck_dumps(tmp_path_factory) -> Path:
    """The committed ``stuck_compute`` sample set (real gloo dumps with stacks), else one made with torch."""
    committed = REPO / "sample_dumps" / SCENARIO
    if any(committed.glob("rank_*")):
        return committed
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("dumps") / SCENARIO
    subprocess.run(
        [sys.executable, str(REPO / "sample_dumps" / "generate.py"), "--scenario", SCENARIO, "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="session")
def run_ahead_1024(tmp_path_factory) -> Path:
    """1,024 NCCL-shaped ranks x 2,000 entries (about 0.45 GB) made by ``python -m benchmarks.synth``:
    rank 77 stuck, its tensor-parallel peers enqueued 120 more collectives past the wavefront.
    Made once per session for every test that opens a thousand ranks."""
    out = tmp_path_factory.mktemp("r1024") / "dumps"
    subprocess.run(
        [sys.executable, "-m", "benchmarks.synth", str(out), "--ranks", "1024", "--entries", "2000"]
        + ["--fault", "stuck", "--culprit", str(RUN_AHEAD_CULPRIT), "--run-ahead", str(RUN_AHEAD_SEQS)],
        check=True,
        capture_output=True,
        cwd=REPO,
        timeout=600,
    )
    return out


@pytest.fixture()
def serve(tmp_path) -> Iterator:
    servers: list[Server] = []

    def start(script: Path, *args: str) -> Server:
        server = Server(script, args, tmp_path / f"server{len(servers)}.log")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture()
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    pg = context.new_page()
    yield pg
    context.close()
