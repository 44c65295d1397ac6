"""What the tests of ``flightdeck mcp`` and ``flightdeck serve`` share: the command line's own
answer to compare with, a free port, and a server process started as a user starts it."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dask_cluster import VENV_BIN, clean_env

FLIGHTDECK = VENV_BIN / "flightdeck"


def run_async(fn: Callable[..., Awaitable[Any]], *args: object) -> Any:
    """``anyio.run(fn, *args)`` on a thread of its own: the browser tests' session keeps an
    event loop running in the main thread, where a second one cannot start."""
    import anyio

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()


def cli_json(path: Path, *extra: str) -> dict[str, Any] | str:
    """``flightdeck PATH --json`` run as a user runs it: the report, or the error line (exit 2)."""
    done = subprocess.run(
        [str(FLIGHTDECK), str(path), "--json", "-q", *extra],
        cwd="/",
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode == 2 and not done.stdout.strip():
        return done.stderr.strip()
    return json.loads(done.stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def http_server(root: Path, cwd: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``flightdeck serve --root ROOT`` from ``cwd`` on a free port; yields its base URL and
    process, and stops it after."""
    port = free_port()
    log = cwd / f"serve-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(FLIGHTDECK), "serve", "--root", str(root), "--port", str(port), *extra],
            cwd=cwd,
            env=clean_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"the server exited: {log.read_text()[-3000:]}"
            try:
                get(url, "/health")
                break
            except OSError:
                assert time.monotonic() < deadline, f"the server did not answer: {log.read_text()[-3000:]}"
                time.sleep(0.2)
        yield url, proc
        assert proc.poll() is None, f"the server died: {log.read_text()[-3000:]}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def get(url: str, route: str, timeout: float = 120, **params: object) -> tuple[int, dict[str, Any]]:
    """GET ``route`` with ``params``: the status and the JSON body (errors too)."""
    query = urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(f"{url}{route}?{query}", timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0
