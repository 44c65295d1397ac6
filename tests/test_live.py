"""``flightdeck watch``: which snapshots are complete, and the lines said about them.

The snapshot finder runs on a clock the test moves, over real files; the command runs
as a user runs it (the venv's ``flightdeck``, another folder, no PYTHONPATH) over real
dumps of real torch runs (``sample_dumps``). A watched running job: ``test_live_torch``.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from dask_cluster import VENV_BIN, clean_env
from locations import SAMPLE_DUMPS

from analysis.live.dump import snapshot_name
from analysis.live.snapshots import SnapshotFinder


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def finder(root: Path, clock: Clock, **kw: object) -> SnapshotFinder:
    return SnapshotFinder(root, settle=1.0, wait_missing=5.0, clock=clock, **kw)


def write(path: Path, data: bytes, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


def test_a_file_still_growing_is_waited_for(tmp_path: Path) -> None:
    clock = Clock()
    f = finder(tmp_path, clock, world=2)
    write(tmp_path / "s1" / "rank_0", b"x" * 10, 1)
    write(tmp_path / "s1" / "rank_1", b"x" * 4, 1)
    assert f.poll() == []  # first sight
    clock.now += 0.5
    assert f.poll() == []  # not settled
    with open(tmp_path / "s1" / "rank_1", "ab") as out:
        out.write(b"y" * 6)  # rank 1 is still being written
    clock.now += 0.9
    assert f.poll() == []
    clock.now += 0.9
    assert f.poll() == []  # 0.9 s since the last change
    clock.now += 0.2
    (snap,) = f.poll()
    assert (snap.name, snap.ranks, snap.missing) == ("s1", (0, 1), ())
    assert f.poll() == []  # once only


def test_a_missing_rank_is_named_after_the_wait(tmp_path: Path) -> None:
    clock = Clock()
    f = finder(tmp_path, clock, world=4)
    for r in (0, 1, 3):
        write(tmp_path / "s1" / f"rank_{r}", b"x", 1)
    f.poll()
    clock.now += 2
    assert f.poll() == []  # settled, but rank 2 may still come
    assert f.waiting() == {"s1": (2,)}
    clock.now += 3.5
    (snap,) = f.poll()
    assert snap.missing == (2,) and snap.ranks == (0, 1, 3)


def test_snapshots_come_in_order_and_a_newer_one_releases_an_older(tmp_path: Path) -> None:
    clock = Clock()
    f = finder(tmp_path, clock, world=2, skip_existing=False)
    write(tmp_path / "s10" / "rank_0", b"x", 1)  # rank 1 skipped this one
    write(tmp_path / "s9" / "rank_0", b"x", 1)
    write(tmp_path / "s9" / "rank_1", b"x", 1)
    f.poll()
    clock.now += 1.5
    names = [(s.name, s.missing) for s in f.poll()]
    assert names == [("s9", ())]  # natural order: s9 before s10, and s10 waits for rank 1
    write(tmp_path / "s11" / "rank_0", b"x", 1)
    write(tmp_path / "s11" / "rank_1", b"x", 1)
    f.poll()
    clock.now += 1.5
    assert [(s.name, s.missing) for s in f.poll()] == [("s10", (1,)), ("s11", ())]
    write(tmp_path / "s8" / "rank_0", b"x", 1)  # older than what was read: passed over
    write(tmp_path / "s8" / "rank_1", b"x", 1)
    f.poll()
    clock.now += 1.5
    assert f.poll() == [] and f.waiting() == {}


def test_the_world_is_the_highest_rank_seen_and_old_snapshots_are_passed_over(tmp_path: Path) -> None:
    clock = Clock()
    for name in ("a", "b", "c"):
        for r in range(3):
            write(tmp_path / name / f"rank_{r}", b"x", 1)
    f = finder(tmp_path, clock)
    f.poll()
    clock.now += 1.5
    assert [s.name for s in f.poll()] == ["c"]  # the newest only: the baseline
    write(tmp_path / "d" / "rank_0", b"x", 1)
    f.poll()
    clock.now += 1.5
    assert f.poll() == [] and f.waiting() == {"d": (1, 2)}


def test_files_rewritten_in_place_make_generations(tmp_path: Path) -> None:
    """The dump pipe and the watchdog rewrite ``nccl_trace_rank_<r>`` in place."""
    clock = Clock()
    f = finder(tmp_path, clock, world=2)
    for r in range(2):
        write(tmp_path / f"nccl_trace_rank_{r}", b"one", 1)
    f.poll()
    clock.now += 1.5
    (first,) = f.poll()
    assert first.name == "generation-00001" and (first.path / "nccl_trace_rank_1").read_bytes() == b"one"
    write(tmp_path / "nccl_trace_rank_0", b"two", 2)
    f.poll()
    clock.now += 1.5
    assert f.poll() == []  # rank 1 not rewritten yet
    write(tmp_path / "nccl_trace_rank_1", b"two", 2)
    f.poll()
    clock.now += 1.5
    (second,) = f.poll()
    assert second.name == "generation-00002" and (second.path / "nccl_trace_rank_0").read_bytes() == b"two"
    f.close()
    assert not second.path.exists()


def test_the_debug_servers_text_dumps_are_named_as_unreadable(tmp_path: Path) -> None:
    (tmp_path / "fr_trace_20261206_223000.txt").write_text("=== FR Trace ===\n")
    f = finder(tmp_path, Clock())
    assert f.poll() == []
    assert len(f.notes) == 1 and "dump_every" in f.notes[0]


def test_snapshot_names_sort_in_time_order() -> None:
    assert snapshot_name(1765060200.5) == "20251206T223000.500Z"
    assert sorted([snapshot_name(t) for t in (100.25, 99.75, 1000.0)]) == [
        snapshot_name(t) for t in (99.75, 100.25, 1000.0)
    ]


def watched(tmp_path: Path, *samples: str) -> Path:
    """A folder holding the samples as its snapshot subfolders, in this order."""
    root = tmp_path / "watched"
    for i, name in enumerate(samples):
        shutil.copytree(SAMPLE_DUMPS / name, root / f"snap-{i:02d}", ignore=shutil.ignore_patterns("*.json"))
    return root


def run_watch(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "flightdeck"), "watch", *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


QUICK = ("--all", "--settle", "0", "--wait-missing", "0", "--poll", "0.05")


def test_watch_stops_at_the_hang_with_the_report(tmp_path: Path) -> None:
    root = watched(tmp_path, "stuck_twice.earlier", "stuck_twice")
    got = tmp_path / "got.txt"
    proc = run_watch(tmp_path, str(root), *QUICK, "--until-hang", "--json-lines", "--on-hang", f"cp {{report}} {got}")
    assert proc.returncode == 1, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [x["state"] for x in lines] == ["baseline", "hung"]
    hung = lines[-1]
    assert got.read_text().startswith("VERDICT: HANG")
    report = json.loads(Path(hung["report"]).with_suffix(".json").read_text())
    assert report["compare"]["motion"] == "hung"
    wave = report["wavefront"]
    assert hung["ranks"] == [5] and hung["seq"] == wave["collective_seq_id"]
    assert hung["group"] == {"pg_name": wave["pg_name"], "pg_desc": wave["pg_desc"]}


def test_the_hung_line_comes_first_then_the_full_report(tmp_path: Path) -> None:
    root = watched(tmp_path, "stuck_twice.earlier", "stuck_twice")
    proc = run_watch(tmp_path, str(root), *QUICK, "--until-hang", "--report-dir", str(tmp_path / "reports"))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("snap-00  baseline") and out[1].startswith("snap-01  hung")
    assert "rank 5 stuck" in out[1] and str(tmp_path / "reports" / "flightdeck_hang_snap-01.txt") in out[1]
    assert out[3] == "VERDICT: HANG (missing_participant)"


def test_watch_says_slow_not_hung_and_prints_lines(tmp_path: Path) -> None:
    root = watched(tmp_path, "slow_rank.earlier", "slow_rank")
    proc = run_watch(tmp_path, str(root), *QUICK, "--max-snapshots", "2")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("snap-00  baseline")
    assert second.startswith("snap-01  slow") and "rank 5" in second


def test_python_m_analysis_watch_is_the_same_command(tmp_path: Path) -> None:
    root = watched(tmp_path, "slow_rank.earlier", "slow_rank")
    proc = subprocess.run(
        [
            str(VENV_BIN / "python"),
            "-m",
            "analysis",
            "--watch",
            str(root),
            *QUICK,
            "--max-snapshots",
            "2",
            "--json-lines",
        ],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["state"] for x in proc.stdout.splitlines()] == ["baseline", "slow"]


@pytest.mark.parametrize("bad", [["--settle", "-1"], ["--world", "0"]])
def test_bad_options_exit_2(tmp_path: Path, bad: list[str]) -> None:
    assert run_watch(tmp_path, str(tmp_path), *bad).returncode == 2


AT_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)
"""Runs a command as a terminal's foreground job gets Ctrl-C: a job a script started in the
background (``cmd &``) inherits SIGINT ignored, and so would the watch, which then rightly
keeps running (this is how the test hung in a backgrounded suite)."""


def test_ctrl_c_stops_cleanly(tmp_path: Path) -> None:
    """Ctrl-C in a terminal signals the whole process group: the watch and its readers."""
    root = watched(tmp_path, "stuck_twice.earlier", "stuck_twice")
    proc = subprocess.Popen(
        [
            str(VENV_BIN / "python"),
            "-c",
            AT_A_TERMINAL,
            str(VENV_BIN / "flightdeck"),
            "watch",
            str(root),
            "--settle",
            "0.1",
        ],
        cwd=tmp_path,
        env={**clean_env(), "PYTHONFAULTHANDLER": "1"},  # a hang below prints where each thread is
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # it reads the newest snapshot, prints its line, then waits for more: interrupt it there
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    assert ready and proc.stdout.readline(), "the watch printed no snapshot"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # the watch, or a process of its group holding its pipes
        group = subprocess.run(
            ["ps", "-o", "pid,stat,args", "-g", str(proc.pid)], capture_output=True, text=True, check=False
        )
        exited = proc.poll()
        if exited is None:
            os.kill(proc.pid, signal.SIGABRT)  # its threads' stacks to stderr, then it ends
            time.sleep(5)
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
        found = f"no end 60 s after Ctrl-C (watch exit: {exited}); its group:\n{group.stdout}\n{err[-8000:]}"
        pytest.fail(found)
    assert proc.returncode == 130
    assert "Traceback" not in err and "stopped" in err
