"""The map step on a Dask cluster gives the same report as on this machine's processes.

Clusters: ``--dask local:2`` (a LocalCluster the engine starts and stops) and a scheduler
plus workers started as processes from the venv's own ``dask`` command, in a folder outside
the checkout, with no ``PYTHONPATH`` (``dask_cluster``), as one would on a real cluster.
The command line runs as a user runs it: ``flightdeck`` from yet another folder. Loaders
that misbehave on purpose reach the workers by Dask's ``--preload`` (``dask_loaders``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dask_cluster import VENV_BIN, Cluster, clean_env, flightdeck_json
from locations import ROOT, SAMPLE_DUMPS, SHARED_FIXTURES, TESTS

pytest.importorskip("distributed")

from dask_loaders import failing_loader, slow_loader, stuck_loader

from analysis import analyze_dumps
from analysis.cli import main
from analysis.tables import dask_engine
from analysis.tables.dask_engine import DaskEngine
from analysis.tables.dask_local import close_shared_clusters, shared_local_cluster
from analysis.tables.load import load
from analysis.types import DumpFile, DumpSet, InputError, Limits
from dashboard.args import parse_args

SCENARIOS = sorted(p.parent for p in SAMPLE_DUMPS.glob("*/scenario.json"))
NVRX_SETS = sorted(p for p in (SHARED_FIXTURES / "nvrx").glob("*") if p.is_dir())
"""NVIDIA's real 16-rank NCCL dumps, where this machine has them."""
CLI_TIMEOUT_S = 240
"""Each run starts a cluster on a machine that may be busy: generous, but a hang still fails."""
LOADERS = TESTS / "dask_loaders.py"


def report_json(path: Path, *extra: str, cwd: Path | None = None) -> dict[str, Any]:
    """The venv's ``flightdeck PATH --json`` from a folder outside the checkout (``/`` unless
    ``cwd``)."""
    return flightdeck_json(VENV_BIN, path, cwd or Path("/"), *extra, timeout_s=CLI_TIMEOUT_S)


def within(seconds: float, work: Callable[[threading.Event], Any]) -> Any:
    """``work(cancel)`` in a thread; cancelled, and the test failed, if it overruns ``seconds``."""
    cancel = threading.Event()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work(cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        cancel.set()
        thread.join(30)
        pytest.fail(f"the load took over {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def report_of(dumps: DumpSet) -> dict[str, Any]:
    return json.loads(json.dumps(analyze_dumps(dumps).to_dict()))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,024 ranks, one of them (77) stuck: a set big enough for many batches, small to make."""
    out = tmp_path_factory.mktemp("synth1024")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.synth",
            str(out),
            *("--ranks", "1024", "--entries", "200", "--fault", "stuck", "--culprit", "77"),
        ],
        cwd=ROOT,  # the generator is part of the checkout, not of the package
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=CLI_TIMEOUT_S,
    )
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """As the README says: ``dask scheduler`` and two ``dask worker --nthreads 1``."""
    started = Cluster(tmp_path_factory.mktemp("cluster"), workers=2)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="module")
def cluster_with_loaders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The same, with the misbehaving loaders preloaded."""
    started = Cluster(tmp_path_factory.mktemp("cluster_loaders"), workers=2, preload=[LOADERS])
    try:
        yield started
    finally:
        started.close()


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_a_cluster_started_by_hand_gives_the_same_report_on_every_sample(cluster: Cluster, folder: Path) -> None:
    assert report_json(folder, "--dask", cluster.address) == report_json(folder)


@pytest.mark.parametrize("folder", SCENARIOS[:2], ids=[p.name for p in SCENARIOS[:2]])
def test_local_cluster_gives_the_same_report_on_samples(folder: Path) -> None:
    assert report_json(folder, "--dask", "local:2") == report_json(folder)


def test_local_cluster_gives_the_same_report_on_1024_ranks(synthetic: Path) -> None:
    with_dask = report_json(synthetic, "--dask", "local:2")
    assert with_dask == report_json(synthetic)
    assert with_dask["ranks_loaded"] == 1024
    assert 77 in with_dask["suspect_ranks"]


def test_a_cluster_started_by_hand_gives_the_same_report(cluster: Cluster, synthetic: Path, tmp_path: Path) -> None:
    local = report_json(synthetic)
    assert local["ranks_loaded"] == 1024 and 77 in local["suspect_ranks"]
    assert report_json(synthetic, "--dask", cluster.address) == local
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    through_scratch = ("--dask-scratch", str(scratch), "--dask-scratch-above", "0")
    assert report_json(synthetic, "--dask", cluster.address, *through_scratch, cwd=tmp_path) == local
    assert list(scratch.iterdir()) == [], "each part is deleted once read back"


@pytest.mark.parametrize("folder", NVRX_SETS, ids=[p.name for p in NVRX_SETS])
def test_a_cluster_started_by_hand_gives_the_same_report_on_nvidia_sets(
    cluster: Cluster, folder: Path, tmp_path: Path
) -> None:
    local = report_json(folder)
    assert report_json(folder, "--dask", cluster.address) == local
    through_scratch = ("--dask-scratch", str(tmp_path), "--dask-scratch-above", "0")
    assert report_json(folder, "--dask", cluster.address, *through_scratch) == local


def test_parts_through_a_scratch_folder_give_the_same_tables(
    synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    read_back: list[str] = []
    read_file_tables = dask_engine.read_file_tables

    def counted(folder: str) -> Any:
        read_back.append(folder)
        return read_file_tables(folder)

    monkeypatch.setattr(dask_engine, "read_file_tables", counted)
    engine = DaskEngine("local:2", scratch=scratch, scratch_threshold_bytes=0)
    dumps = within(CLI_TIMEOUT_S, lambda cancel: load(synthetic, engine=engine, use_cache=False, cancel=cancel))
    plain = load(synthetic, use_cache=False)
    assert dumps.file_errors == []
    assert len(read_back) > 1, "the parts should have come back through the scratch folder"
    assert all(Path(folder).is_relative_to(scratch) for folder in read_back)
    for name in ("entries", "stacks", "configs", "status", "files"):
        assert getattr(dumps, name).equals(getattr(plain, name)), name
    assert list(scratch.iterdir()) == []


def test_a_worker_killed_mid_run_loses_no_file(tmp_path: Path) -> None:
    """Three workers without nannies (a killed one stays dead); one is killed after the
    first batch is in: Dask runs its tasks again on the other two."""
    folder = SAMPLE_DUMPS / "large_32_stuck"
    started = Cluster(tmp_path, workers=3, nanny=False, preload=[LOADERS])
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if not killed and done < total:
            victim = started.workers[0]
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    try:
        engine = DaskEngine(started.address, loader=slow_loader)
        dumps = within(
            CLI_TIMEOUT_S,
            lambda cancel: load(folder, workers=8, engine=engine, use_cache=False, on_progress=kill_one, cancel=cancel),
        )
        assert killed and started.workers[0].wait(timeout=10) == -signal.SIGKILL
    finally:
        started.close()
    assert dumps.file_errors == []
    assert len(dumps.ranks) == 32
    assert report_of(dumps) == report_of(load(folder, use_cache=False))


def test_a_task_that_keeps_failing_costs_only_its_files(cluster_with_loaders: Cluster) -> None:
    folder = SAMPLE_DUMPS / "large_32_stuck"
    engine = DaskEngine(cluster_with_loaders.address, loader=failing_loader)
    dumps = within(CLI_TIMEOUT_S, lambda cancel: load(folder, workers=8, engine=engine, use_cache=False, cancel=cancel))
    failed = {Path(e.file).name for e in dumps.file_errors}
    assert "rank_3" in failed and len(failed) < 32
    assert all("its Dask task failed: RuntimeError: rank 3's batch always fails" in e.error for e in dumps.file_errors)
    assert len(dumps.ranks) == 32 - len(failed)


def test_a_task_that_never_finishes_costs_only_its_files(tmp_path: Path) -> None:
    """Dask has no deadline of its own (a task waits for ever, as do tasks on a cluster
    whose workers all died): after a stall the tasks still out are reported per file.
    A cluster of its own: the stuck task keeps its worker busy."""
    folder = SAMPLE_DUMPS / "large_32_stuck"
    own = Cluster(tmp_path, workers=2, preload=[LOADERS])
    try:
        engine = DaskEngine(own.address, loader=stuck_loader, stall_base_s=3.0)
        started = time.monotonic()
        dumps = within(CLI_TIMEOUT_S, lambda c: load(folder, workers=8, engine=engine, use_cache=False, cancel=c))
        assert time.monotonic() - started < 60
    finally:
        own.close()
    failed = {Path(e.file).name for e in dumps.file_errors}
    assert "rank_5" in failed and len(failed) < 32
    assert all("its Dask task did not finish: no task finished for 3 s" in e.error for e in dumps.file_errors)
    assert len(dumps.ranks) == 32 - len(failed)


def test_a_cancelled_load_stops(cluster_with_loaders: Cluster) -> None:
    from analysis.types import LoadCancelled

    cancel = threading.Event()
    engine = DaskEngine(cluster_with_loaders.address, loader=slow_loader)
    with pytest.raises(LoadCancelled):
        load(
            SAMPLE_DUMPS / "large_32_stuck",
            workers=8,
            engine=engine,
            use_cache=False,
            on_progress=lambda *_: cancel.set(),
            cancel=cancel,
        )


def test_no_scheduler_is_an_error_message_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main([str(SAMPLE_DUMPS / "healthy"), "--no-cache", "-q", "--dask", "tcp://127.0.0.1:9"]) == 2
    assert time.monotonic() - started < 60
    err = capsys.readouterr().err
    assert err.startswith("error: --dask tcp://127.0.0.1:9: cannot reach the Dask scheduler")
    assert "Traceback" not in err


def test_without_dask_the_cli_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dask_engine, "dask_available", lambda: False)
    assert main([str(SAMPLE_DUMPS / "healthy"), "--no-cache", "-q", "--dask", "local"]) == 2
    assert "pip install -r requirements-dask.txt" in capsys.readouterr().err


def test_bad_local_worker_counts_and_scratch_alone_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(SAMPLE_DUMPS / "healthy"), "-q", "--dask", "local:0"]) == 2
    assert main([str(SAMPLE_DUMPS / "healthy"), "-q", "--dask-scratch", "/tmp"]) == 2
    err = capsys.readouterr().err
    assert "local:N with N a positive number" in err and "--dask-scratch needs --dask" in err


def test_dask_is_imported_only_when_asked_for() -> None:
    code = (
        "import sys, analysis.cli, analysis.tables.load, dashboard.args;"
        "assert 'distributed' not in sys.modules and 'dask' not in sys.modules, 'dask imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd="/", env=clean_env(), check=True, timeout=CLI_TIMEOUT_S)


def test_the_dashboard_takes_a_cluster_address(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_args(["--dumps", "d", "--dask", "tcp://h:8786"]).dask == "tcp://h:8786"
    monkeypatch.setenv("FLIGHTDECK_DASK", "local:2")
    assert parse_args([]).dask == "local:2"
    monkeypatch.delenv("FLIGHTDECK_DASK")
    assert parse_args([]).dask is None


def test_a_scratch_folder_that_cannot_be_written_is_refused_before_any_cluster(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("")
    files = [DumpFile(str(SAMPLE_DUMPS / "healthy" / "rank_0"), 0)]
    engine = DaskEngine("tcp://127.0.0.1:9", scratch=blocker / "scratch", scratch_threshold_bytes=0)
    started = time.monotonic()
    with pytest.raises(InputError, match="--dask-scratch .*cannot write there"):
        engine.run([files], Limits(), lambda *_: None)
    assert time.monotonic() - started < 5, "it should not have tried the scheduler first"


def test_the_dashboard_starts_one_local_cluster_and_keeps_it() -> None:
    """``--dask local`` in the dashboard: every load uses the server process's one cluster."""
    folder = SAMPLE_DUMPS / "stuck_compute"
    plain = report_of(load(folder, use_cache=False))
    seen = []
    try:
        for _ in range(2):
            engine = DaskEngine("local:1", keep_local_cluster=True)
            dumps = within(
                CLI_TIMEOUT_S, lambda cancel, e=engine: load(folder, engine=e, use_cache=False, cancel=cancel)
            )
            assert report_of(dumps) == plain
            cluster = shared_local_cluster(1)
            assert cluster.status.name == "running", "the cluster outlives the load"
            seen.append((id(cluster), cluster.scheduler_address))
    finally:
        close_shared_clusters()
    assert seen[0] == seen[1]


def test_a_worker_that_does_not_answer_stops_the_check_not_the_load_for_ever(tmp_path: Path) -> None:
    """A worker stopped (SIGSTOP: there, but silent) before the build check: the check gives
    up after its deadline with one clear error instead of waiting for ever."""
    from distributed import Client

    from analysis.tables.cluster_check import check_cluster

    started = Cluster(tmp_path, workers=1, nanny=False)
    try:
        os.kill(started.workers[0].pid, signal.SIGSTOP)
        with Client(started.address, timeout=30, set_as_default=False) as client:
            # within: a check that waits for ever fails the test instead of hanging it
            error = within(60, lambda cancel: _raised(lambda: check_cluster(client, started.address, timeout_s=3)))
        assert isinstance(error, InputError) and "did not answer within 3 s" in str(error), error
    finally:
        os.kill(started.workers[0].pid, signal.SIGCONT)
        started.close()


def _raised(work: Callable[[], object]) -> BaseException | None:
    """What ``work()`` raised, or None."""
    try:
        work()
    except BaseException as exc:  # noqa: BLE001 - handed to the test
        return exc
    return None
