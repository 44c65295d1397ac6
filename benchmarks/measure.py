"""Run a command and measure its wall time and the peak RSS of its whole process tree.

Tools under test may fork worker pools, so the RSS of the top process alone
understates their footprint. A poller walks /proc every ~50 ms, sums the RSS
of the process and all its descendants (workers, a fork server and its
children), and keeps the largest sum seen, and beside it the largest RSS of the
top process alone, which shows how much the workers add. It
can also kill the tree when that sum crosses a limit (a memory guard). The wall
time ends when the process exits (a thread waits for it), not at the next poll.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

PAGE = os.sysconf("SC_PAGE_SIZE")
POLL_S = 0.05


@dataclass
class RunResult:
    """Outcome of one measured command."""

    cmd: list[str]
    rc: int | None
    wall_s: float
    peak_rss: int  # bytes, summed over the process tree
    stdout: str
    stderr: str
    killed: str | None = None  # why the guard killed it, if it did
    peak_rss_main: int = 0  # bytes, the top process alone
    processes: int = 1  # the most processes seen in the tree at once


def _parents() -> dict[int, int]:
    """pid -> ppid for every live process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces or ')' so split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        out[int(name)] = int(fields[1])
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_pids(root: int) -> list[int]:
    """``root`` and all of its live descendants."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_rss(root: int) -> int:
    """Summed RSS (bytes) of ``root`` and its descendants."""
    return sum(_rss(p) for p in tree_pids(root))


def _kill_tree(root: int) -> None:
    for pid in reversed(tree_pids(root)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_measured(
    cmd: list[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    rss_limit: int | None = None,
) -> RunResult:
    """Run ``cmd`` to completion (or until the guard kills it) and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        ended: list[float] = []  # when the process exited, taken by a thread that waits for it
        exited = threading.Event()

        def wait_for_exit() -> None:
            proc.wait()
            ended.append(time.perf_counter())
            exited.set()

        threading.Thread(target=wait_for_exit, daemon=True).start()
        peak, peak_main, processes, killed = 0, 0, 1, None
        while not exited.is_set():
            pids = tree_pids(proc.pid)
            sizes = [_rss(p) for p in pids]
            peak = max(peak, sum(sizes))
            peak_main = max(peak_main, sizes[0])
            processes = max(processes, sum(1 for size in sizes if size))
            elapsed = time.perf_counter() - t0
            if rss_limit is not None and peak > rss_limit:
                killed = f"peak RSS above {rss_limit / 2**30:.1f} GiB after {elapsed:.0f}s"
            elif timeout_s is not None and elapsed > timeout_s:
                killed = f"timeout after {timeout_s:.0f}s"
            if killed:
                _kill_tree(proc.pid)
                exited.wait()
                break
            exited.wait(POLL_S)  # wakes at the exit: the wall time is not rounded up to a poll
        wall = ended[0] - t0
        out.seek(0)
        err.seek(0)
        return RunResult(
            cmd=cmd,
            rc=proc.returncode,
            wall_s=wall,
            peak_rss=peak,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            killed=killed,
            peak_rss_main=peak_main,
            processes=processes,
        )
