"""The map step cannot hang: dead and stuck workers cost their files only, a load can be
cancelled, and loads from a busy, many-threaded process (a server) finish every time
without touching that process's own limits."""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from map_loaders import misbehaving

from analysis.tables.load import choose_engine, load
from analysis.tables.mapstep import Inline, load_batch, pack, unpack
from analysis.tables.pool import WORKER_NAME, WorkerPool
from analysis.types import DumpFile, LoadCancelled

SAMPLE = Path(__file__).resolve().parents[1] / "sample_dumps" / "large_32_stuck"


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    folder = tmp_path / "dumps"
    shutil.copytree(SAMPLE, folder, ignore=shutil.ignore_patterns("*.json", "*.md"))
    return folder


def _workers_alive() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.name == WORKER_NAME]


def _reference(folder: Path) -> dict[int, int]:
    dumps = load(folder, workers=1, use_cache=False, engine=Inline())
    assert not dumps.file_errors
    return dumps.entries.groupby("rank").size().to_dict()


def test_a_worker_that_dies_mid_batch_costs_its_file_only(dumps: Path) -> None:
    expected = _reference(dumps)
    (dumps / "kill.txt").write_text("rank_5\n")
    started = time.monotonic()
    got = load(dumps, workers=2, use_cache=False, engine=WorkerPool(2, loader=misbehaving))
    assert time.monotonic() - started < 60
    assert [(Path(e.file).name, e.error) for e in got.file_errors] == [
        ("rank_5", "its reader process died (exit code -9), also when retried alone")
    ]
    assert got.entries.groupby("rank").size().to_dict() == {r: n for r, n in expected.items() if r != 5}
    assert not _workers_alive()


def test_workers_killed_from_outside_are_replaced_and_no_file_is_lost(dumps: Path) -> None:
    expected = _reference(dumps)
    (dumps / "slow.txt").write_text("0.4")
    killed: list[int] = []

    def kill_once(done: int, total: int) -> None:
        if not killed:
            for worker in _workers_alive():
                killed.append(worker.pid or 0)
                worker.kill()

    got = load(dumps, workers=2, use_cache=False, engine=WorkerPool(2, loader=misbehaving), on_progress=kill_once)
    assert killed, "no worker was running when the first batch came back"
    assert got.file_errors == []
    assert got.entries.groupby("rank").size().to_dict() == expected
    assert not _workers_alive()


def test_a_worker_stuck_past_its_deadline_costs_its_file_only(dumps: Path) -> None:
    expected = _reference(dumps)
    (dumps / "sleep.txt").write_text("rank_12\n")
    pool = WorkerPool(2, loader=misbehaving, deadline_base_s=3.0, deadline_bytes_per_s=1 << 40)
    started = time.monotonic()
    got = load(dumps, workers=2, use_cache=False, engine=pool)
    # the batch holding the file overruns, then the file alone overruns once more
    assert time.monotonic() - started < 60
    assert [(Path(e.file).name, e.error) for e in got.file_errors] == [
        ("rank_12", "its reader took longer than its deadline of 3 s, also when retried alone")
    ]
    assert got.entries.groupby("rank").size().to_dict() == {r: n for r, n in expected.items() if r != 12}
    assert not _workers_alive()


def test_a_cancelled_load_stops_at_once_and_leaves_no_worker(dumps: Path) -> None:
    (dumps / "slow.txt").write_text("2")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(LoadCancelled):
        load(dumps, workers=2, use_cache=False, engine=WorkerPool(2, loader=misbehaving), cancel=cancel)
    assert time.monotonic() - started < 5
    assert not _workers_alive()


def test_a_process_with_other_threads_reads_in_worker_processes(dumps: Path) -> None:
    from analysis.ingest.discover import discover

    files, _ = discover(dumps)
    spinner = threading.Thread(target=time.sleep, args=(2,))
    spinner.start()
    try:
        assert isinstance(choose_engine(files, 2), WorkerPool)
        assert isinstance(choose_engine(files, 1), WorkerPool)
    finally:
        spinner.join()


class _Watch:
    """Samples the process-wide settings a load must leave alone while it runs."""

    def __init__(self) -> None:
        self.before = (resource.getrlimit(resource.RLIMIT_AS), gc.isenabled(), sys.getswitchinterval())
        self.changed: list[tuple] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            now = (resource.getrlimit(resource.RLIMIT_AS), gc.isenabled(), sys.getswitchinterval())
            if now != self.before:
                self.changed.append(now)
            time.sleep(0.005)


def _busy(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(2000))


@pytest.mark.parametrize("busy_cores", [False, True], ids=["idle-machine", "busy-cores"])
def test_thirty_loads_from_a_thread_of_a_busy_server_like_process(dumps: Path, busy_cores: bool) -> None:
    expected = _reference(dumps)
    burners = []
    if busy_cores:  # other processes keep every core busy, as on a shared box
        burners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(multiprocessing.cpu_count())
        ]
    stop = threading.Event()
    spinners = [threading.Thread(target=_busy, args=(stop,), daemon=True) for _ in range(2)]
    watch = _Watch()
    results: list[object] = []

    def loads() -> None:
        for _ in range(30):
            try:
                got = load(dumps, workers=2, use_cache=False)
                results.append(got.entries.groupby("rank").size().to_dict())
            except Exception as exc:  # noqa: BLE001 - recorded and asserted on below
                results.append(exc)

    try:
        for t in spinners:
            t.start()
        watch.thread.start()
        loader = threading.Thread(target=loads, name="script-thread")
        loader.start()
        loader.join(timeout=300)
        assert not loader.is_alive(), f"a load hung after {len(results)} loads"
    finally:
        stop.set()
        watch.stop.set()
        for proc in burners:
            proc.kill()
            proc.wait()
    assert results == [expected] * 30
    assert watch.changed == [], "a load changed a process-wide setting of the server process"
    assert not _workers_alive()


def test_a_script_without_a_main_guard_still_loads_every_file(dumps: Path, tmp_path: Path) -> None:
    """Workers re-run such a script as their main module and cannot start: the load says
    so and reads in its own process instead of reporting every file as lost."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys, warnings\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "from analysis.tables.load import load\n"
        "from analysis.tables.pool import WorkerPool\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    got = load({str(dumps)!r}, use_cache=False, engine=WorkerPool(2))\n"
        "print(len(got.ranks), len(got.file_errors), any('__main__' in str(w.message) for w in caught))\n"
    )
    done = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["32", "0", "True"]


def test_freed_memory_is_kept_for_reuse_only_where_this_process_may_decide() -> None:
    """glibc's thresholds hold for every thread of a process: a one-thread command line
    sets them, a process running other threads (a server) does not."""
    script = (
        "import sys, threading, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "from analysis.ingest.process_limits import reuse_freed_memory\n"
        "alone = reuse_freed_memory()\n"
        "t = threading.Thread(target=time.sleep, args=(1,)); t.start()\n"
        "print(alone, reuse_freed_memory())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]


def test_a_batch_result_packed_for_sending_reads_back_the_same(dumps: Path) -> None:
    (dumps / "rank_40").write_bytes(b"\x80\x04not a pickle")
    batch = [DumpFile(str(dumps / f"rank_{r}"), r) for r in (0, 1, 2, 40)]
    part, errors = load_batch(batch)
    assert part is not None and [Path(e.file).name for e in errors] == ["rank_40"]
    got, got_errors = unpack(pickle.loads(pickle.dumps(pack((part, errors)))))
    assert got_errors == errors
    for name in ("entries", "stacks", "configs", "status", "meta"):
        assert getattr(got, name).equals(getattr(part, name), check_metadata=True), name
    assert unpack(pack((None, errors))) == (None, errors)
