"""The dashboard's load job: a load and analysis in a thread the page polls, with
progress, cancel and errors (no Streamlit server needed)."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from locations import ROOT

from analysis import analyze_dumps, load
from analysis.report.report import Report
from analysis.types import LoadCancelled
from dashboard.loadjob import JobRegistry, JobState, LoadJob, Progress

SAMPLE = ROOT / "sample_dumps" / "stuck_compute"


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch) -> None:
    """Every load reads the files (an empty Parquet cache per test)."""
    monkeypatch.setenv("FLIGHTDECK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """256 ranks, rank 7 stuck: enough files that a cancel lands while they are read."""
    out = tmp_path_factory.mktemp("big") / "r256"
    subprocess.run(
        [sys.executable, "-m", "benchmarks.synth", str(out), "--ranks", "256", "--entries", "200"]
        + ["--fault", "stuck", "--culprit", "7"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    return out


def _analysis(path: Path, workers: int | None = None):
    def work(job: LoadJob[Report]) -> Report:
        job.stage("Reading the dumps", reading=True)
        dumps = load(path, workers=workers, on_progress=job.files, cancel=job.cancel_event)
        job.stage("Analysing")
        return analyze_dumps(dumps)

    return work


def _ends(job: LoadJob, seconds: float) -> None:
    assert job.wait(seconds), f"the job is still {job.state.value} after {seconds} s"


def test_a_job_on_a_sample_folder_ends_with_its_report_and_every_file_counted() -> None:
    seen: list[Progress] = []
    job = LoadJob("sample", _analysis(SAMPLE)).start()
    while not job.wait(0.01):
        seen.append(job.progress())
    _ends(job, 0)
    assert job.state is JobState.DONE and job.error is None
    report = job.result()
    assert report.verdict == "hang" and 5 in report.suspect_ranks
    files = len(list(SAMPLE.glob("rank_*")))
    last = job.progress()
    assert last.stage == "Analysing" and (last.done, last.total) == (files, files)
    reads = [p for p in seen if p.stage == "Reading the dumps" and p.total]
    assert all(p.total == files for p in reads)
    assert [p.done for p in reads] == sorted(p.done for p in reads)
    assert job.seconds > 0


def test_cancel_stops_the_read_promptly_and_leaves_no_worker(big: Path) -> None:
    job = LoadJob("big", _analysis(big, workers=2)).start()
    deadline = time.monotonic() + 120
    while job.progress().done == 0 and not job.wait(0.02):
        assert time.monotonic() < deadline, "no file was read in 2 minutes"
    assert job.state is JobState.RUNNING, "the read ended before it could be cancelled"
    asked = time.monotonic()
    job.cancel()
    assert job.state in (JobState.CANCELLING, JobState.CANCELLED)
    _ends(job, 5)
    assert time.monotonic() - asked < 5
    assert job.state is JobState.CANCELLED
    assert job.progress().done < job.progress().total
    with pytest.raises(LoadCancelled):
        job.result()
    assert multiprocessing.active_children() == []


def test_cancel_between_steps_drops_the_result() -> None:
    go_on = threading.Event()

    def work(job: LoadJob[int]) -> int:
        go_on.wait(10)
        return 1

    job = LoadJob("slow", work).start()
    job.cancel()
    assert job.state is JobState.CANCELLING
    go_on.set()
    _ends(job, 5)
    assert job.state is JobState.CANCELLED


def test_an_error_in_the_load_is_kept_and_reported() -> None:
    def work(job: LoadJob[Report]) -> Report:
        job.stage("Reading the dumps")
        raise ValueError("rank_3: not a dump")

    job = LoadJob("broken", work).start()
    _ends(job, 5)
    assert job.state is JobState.FAILED
    assert isinstance(job.error, ValueError) and "rank_3" in str(job.error)
    with pytest.raises(ValueError, match="rank_3"):
        job.result()


def test_result_while_running_is_refused() -> None:
    go_on = threading.Event()
    job = LoadJob("waiting", lambda job: go_on.wait(10)).start()
    with pytest.raises(RuntimeError, match="still running"):
        job.result()
    go_on.set()
    _ends(job, 5)
    assert job.result() is True


def test_the_registry_hands_back_the_running_job_and_starts_afresh_when_forgotten() -> None:
    go_on = threading.Event()
    starts: list[int] = []

    def work(job: LoadJob[int]) -> int:
        starts.append(1)
        go_on.wait(10)
        return len(starts)

    jobs: JobRegistry[int] = JobRegistry(keep=2)
    first = jobs.job("a", work)
    assert jobs.job("a", work) is first
    jobs.forget("a")
    assert first.cancel_event.is_set()
    second = jobs.job("a", work)
    assert second is not first
    go_on.set()
    _ends(first, 5)
    _ends(second, 5)
    assert first.state is JobState.CANCELLED and second.state is JobState.DONE
    assert jobs.job("a", work) is second and len(starts) == 2


def test_the_registry_keeps_only_the_latest_ended_jobs() -> None:
    jobs: JobRegistry[str] = JobRegistry(keep=2)
    for key in "abc":
        _ends(jobs.job(key, lambda job, key=key: key), 5)
    jobs.job("c", lambda job: "again")
    assert len(jobs) == 2
    assert jobs.job("c", lambda job: "again").result() == "c"
    assert jobs.job("a", lambda job: "fresh").wait(5)
    assert jobs.job("a", lambda job: "other").result() == "fresh"
