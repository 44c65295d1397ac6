"""Commands as a user runs them: a Dask cluster started by hand (``dask scheduler`` and
``dask worker`` processes from a venv's own commands, in a folder outside the checkout) and
``flightdeck``, with no ``PYTHONPATH``; they find Flight Deck only where it is installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
"""The bin folder of the venv the tests run in (the one ``scripts/setup.sh`` made)."""


def clean_env() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH``: what a user's shell has."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def flightdeck_json(bin_folder: Path, path: Path, cwd: Path, *extra: str, timeout_s: float = 600) -> dict[str, Any]:
    """``flightdeck PATH --json`` of a venv, run in ``cwd``, no cache (each run reads the
    dumps). The report holds no timings or machine-dependent fields, so reports compare whole."""
    done = subprocess.run(
        [str(bin_folder / "flightdeck"), str(path), "--json", "--no-cache", "-q", *extra],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout)


def dask_command(bin_folder: Path) -> list[str]:
    """The ``dask`` command of a venv (``python -m dask`` where it has no script of its own)."""
    script = bin_folder / "dask"
    return [str(script)] if script.exists() else [str(bin_folder / "python"), "-m", "dask"]


class Cluster:
    """A scheduler and ``workers`` workers started in ``folder`` (``--preload`` FILEs given to all)."""

    def __init__(
        self,
        folder: Path,
        workers: int,
        nanny: bool = True,
        preload: Sequence[Path] = (),
        bin_folder: Path = VENV_BIN,
    ) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []
        self.dask = dask_command(bin_folder)
        self.preload = [arg for path in preload for arg in ("--preload", str(path))]
        scheduler_file = folder / "scheduler.json"
        self.log = folder / "cluster.log"
        self._start(
            "scheduler",
            *("--port", "0", "--host", "127.0.0.1", "--dashboard-address", ":0"),
            *("--scheduler-file", str(scheduler_file)),
        )
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            assert self.processes[0].poll() is None, f"the scheduler exited: {self.log.read_text()[-2000:]}"
            time.sleep(0.2)
        self.address = json.loads(scheduler_file.read_text())["address"]
        self.workers = [
            self._start(
                "worker",
                self.address,
                *("--nworkers", "1", "--nthreads", "1", "--no-dashboard"),
                "--nanny" if nanny else "--no-nanny",
            )
            for _ in range(workers)
        ]
        from distributed import Client

        with Client(self.address, timeout=30, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    def _start(self, kind: str, *args: str) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            process = subprocess.Popen(
                [*self.dask, kind, *args, *self.preload],
                cwd=self.folder,
                env=clean_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
