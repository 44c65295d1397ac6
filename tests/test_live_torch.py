"""``flightdeck watch`` on a real running gloo job (torch, CPU), as a user runs it.

The job (``benchmarks.live_job``) dumps Flight Recorder every second with ``analysis.live.dump_every``
into one subfolder per snapshot; the venv's ``flightdeck watch`` runs from another folder
without PYTHONPATH while the job runs.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import time
from pathlib import Path

import pytest
from dask_cluster import VENV_BIN, clean_env

import analysis
from benchmarks.live_job import fault_time, start_job, stop_job, whole_snapshots

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch (a dev dependency) is not installed"),
]

INTERVAL = 1.0


def watch_while(job: list[subprocess.Popen], cwd: Path, *args: str, timeout: float = 90) -> tuple[int, list[dict]]:
    """Run ``flightdeck watch ARGS --json-lines`` while the job runs; its exit code and lines."""
    proc = subprocess.Popen(
        [str(VENV_BIN / "flightdeck"), "watch", *args, "--json-lines"],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"watch did not stop in {timeout} s: {out}\n{err}")
    finally:
        stop_job(job)
    return proc.returncode, [json.loads(line) for line in out.splitlines()]


def test_watch_names_the_stalled_rank_soon_after_it_stops(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    elsewhere = tmp_path / "user"
    elsewhere.mkdir()
    job = start_job(dumps, world=8, interval=INTERVAL, mode="stall", culprit=5, after=5)
    code, lines = watch_while(
        job, elsewhere, str(dumps), "--until-hang", "--settle", "0.3", "--wait-missing", "3", "--poll", "0.1"
    )
    states = [x["state"] for x in lines]
    assert code == 1, states
    assert states[-1] == "hung" and states.count("hung") == 1
    assert states.count("progressing") >= 2, states  # healthy snapshots before the stall
    hung = lines[-1]
    assert hung["ranks"] == [5]
    assert hung["group"]["pg_desc"] == "tensor_parallel" and hung["seq"] is not None
    for x in lines:  # a rank the world does not have is never named
        assert set(x["ranks"]) | set(x["missing_ranks"]) <= set(range(8)), x
    report = Path(hung["report"])
    assert report.read_text().startswith("VERDICT: HANG")
    stalled_at = fault_time(dumps)
    assert report.stat().st_mtime - stalled_at <= 2 * INTERVAL + 1.5  # the verdict within two dump intervals

    # Each healthy snapshot alone names no rank beyond the world, and two of them compare.
    healthy = [x["snapshot"] for x in lines if x["state"] == "progressing"]
    earlier, later = dumps / healthy[0], dumps / healthy[1]
    for snap in (earlier, later):
        r = analysis.analyze(snap, use_cache=False)
        assert set(r.missing_dumps) | set(r.suspect_ranks) <= set(range(8)), r.summary
    compared = analysis.analyze(later, earlier=earlier, use_cache=False)
    assert compared.compare["motion"] == "progressing"


def test_a_slow_rank_that_still_moves_is_slow_not_hung(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    job = start_job(dumps, world=4, interval=INTERVAL, mode="slow", culprit=1, after=0)
    code, lines = watch_while(job, tmp_path, str(dumps), "--settle", "0.3", "--poll", "0.1", "--max-snapshots", "6")
    states = [x["state"] for x in lines]
    assert code == 0
    assert not {"hung", "straggler"} & set(states), states
    slow = [x for x in lines if x["state"] == "slow"]
    assert all(x["ranks"] == [1] for x in slow), lines  # never its TP peer, late only by waiting on it
    assert states[-2:] == ["slow", "slow"], [(x["state"], x["ranks"], x["message"]) for x in lines]


def test_a_rank_whose_dumps_stop_is_named_missing_and_the_job_still_progresses(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    job = start_job(dumps, world=4, interval=INTERVAL, mode="nodump", culprit=2, after=3)
    code, lines = watch_while(
        job, tmp_path, str(dumps), "--settle", "0.3", "--wait-missing", "1.5", "--poll", "0.1", "--max-snapshots", "7"
    )
    assert code == 0
    states = [x["state"] for x in lines]
    assert not {"hung", "straggler"} & set(states), states
    # once rank 2's dumps stopped, every later snapshot names it missing and still progresses
    # (when they stop depends on how fast the job started: a first snapshot may lack late
    # starters too, so only the newest run of snapshots without it is read)
    stopped = list(itertools.takewhile(lambda x: x["missing_ranks"] == [2], reversed(lines)))
    assert len(stopped) >= 2, lines
    for x in stopped:
        assert (x["state"], x["ranks_loaded"]) == ("progressing", 3), lines


def test_a_rank_whose_process_stops_is_named_not_the_ranks_that_wait_on_it(tmp_path: Path) -> None:
    """The process of rank 2 stops (SIGSTOP): its dumps stop with it, the others hang in collectives with it."""
    dumps = tmp_path / "dumps"
    job = start_job(dumps, world=4, interval=INTERVAL, mode="freeze", culprit=2, after=3)
    code, lines = watch_while(
        job, tmp_path, str(dumps), "--until-hang", "--settle", "0.3", "--wait-missing", "2", "--poll", "0.1"
    )
    assert code == 1
    hung = lines[-1]
    assert (hung["state"], hung["ranks"], hung["missing_ranks"]) == ("hung", [2], [2]), lines
    assert Path(hung["report"]).read_text().startswith("VERDICT: HANG")


def test_a_healthy_job_stays_progressing_over_20_snapshots(tmp_path: Path) -> None:
    """20 snapshots of a healthy 8-rank job, each compared with the one before: every rank
    read, none missing, every line "progressing" (never slow, straggler or hung). The watch
    starts once every rank has dumped (at the job's start a rank's first dump can take seconds)."""
    dumps = tmp_path / "dumps"
    job = start_job(dumps, world=8, interval=INTERVAL, mode="healthy")
    deadline = time.monotonic() + 90
    while whole_snapshots(dumps, 8) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    code, lines = watch_while(
        job, tmp_path, str(dumps), "--settle", "0.2", "--poll", "0.1", "--max-snapshots", "21", timeout=120
    )
    assert code == 0
    states = [x["state"] for x in lines]
    assert states[0] == "baseline" and len(states) == 21, states
    assert set(states[1:]) == {"progressing"}, [(x["state"], x["ranks"], x["message"]) for x in lines]
    assert all(x["missing_ranks"] == [] and x["ranks_loaded"] == 8 for x in lines), lines
