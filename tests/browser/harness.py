"""Shared pieces for the browser tests: a real Streamlit server, page selectors, screenshots."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = os.environ.get("FLIGHTDECK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCENARIO = "stuck_compute"
#: The rank that stops in the session's 1,024-rank set (conftest's ``run_ahead_1024``), and how
#: many collectives its tensor-parallel peers enqueued past the wavefront.
RUN_AHEAD_CULPRIT = 77
RUN_AHEAD_SEQS = 120

# Page states Streamlit exposes for waiting.
SCRIPT_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHART_READY = '[data-testid="stPlotlyChart"] .nsewdrag'
HEATMAP_PAINTED = '[data-testid="stPlotlyChart"] .heatmaplayer image'

#: Pixel position of data point (x, y) in the first plotly chart on the page.
CELL_PIXEL_JS = """([x, y]) => {
  const gd = document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot');
  const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  const L = gd._fullLayout;
  return [r.left + L.xaxis.d2p(x), r.top + L.yaxis.d2p(y)];
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DASHBOARD_APP = REPO / "dashboard" / "app.py"
LAUNCHER = Path(sys.executable).with_name("flightdeck-dashboard")
"""The dashboard's command in the venv the tests run in (``scripts/setup.sh`` installs it)."""


class Server:
    """The dashboard as a user starts it (``flightdeck-dashboard``, from a folder outside the
    checkout, no ``PYTHONPATH``), or ``streamlit run`` on another script, in a subprocess on a
    free local port; ``env`` is added to this process's."""

    def __init__(self, script: Path, args: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "w")  # noqa: SIM115  (closed in stop())
        if script == DASHBOARD_APP:
            start, cwd = [str(LAUNCHER)], log.parent
        else:
            start, cwd = [sys.executable, "-m", "streamlit", "run", str(script)], REPO
        cmd = [
            *start,
            "--server.headless",
            "true",
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ]
        if args:
            cmd += ["--", *args]
        full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | dict(env or {})
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=self._log, stderr=subprocess.STDOUT)
        self.log_path = log
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("streamlit did not become healthy in time")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children...), read from /proc."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended while we looked
            continue
        fields = text[text.rindex(")") + 2 :].split()
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def alive(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie, ended but not reaped, counts as ended)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(pid)
    return running


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path
