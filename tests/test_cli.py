"""The command line: exit codes, one JSON object, Parquet export, NVIDIA's flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
from locations import ROOT
from nccl_sets import tp_job, write_set


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_json_is_one_object_with_the_schema(tmp_path) -> None:
    write_set(tmp_path, tp_job(world=4, steps=4, stuck_rank=1))
    proc = run_cli(str(tmp_path), "--json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert report["schema"] == "flightdeck.report/1"
    assert report["verdict"] == "hang"
    assert report["suspect_ranks"] == [1]
    assert report["wavefront"]["collective_seq_id"] == 4
    assert report["wavefront"]["pg_ranks"] == [0, 1, 2, 3]
    for key in ("victim_ranks", "attribution_state", "summary", "evidence", "ranks_loaded", "missing_dumps"):
        assert key in report
    assert report["file_errors"] == []


def test_text_output_puts_the_verdict_first(tmp_path) -> None:
    write_set(tmp_path, tp_job(world=4, steps=4, stuck_rank=2))
    proc = run_cli(str(tmp_path), "--verbose", "--quiet")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "VERDICT: HANG (missing_participant)"
    assert "suspect ranks  2" in proc.stdout
    assert "Per-group frontier" in proc.stdout


def test_healthy_exits_zero_and_nothing_exits_two(tmp_path) -> None:
    write_set(tmp_path / "ok", {r: tp_job(world=2, steps=3, stuck_rank=-1, stuck_state="completed")[r] for r in (0, 1)})
    assert run_cli(str(tmp_path / "ok"), "--quiet").returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli(str(empty))
    assert proc.returncode == 2
    assert "no dump files found" in proc.stderr
    assert run_cli(str(tmp_path / "does-not-exist"), "--json").returncode == 2


def test_nvidia_flags_and_debug_json_copies(tmp_path) -> None:
    write_set(tmp_path, tp_job(world=4, steps=3, stuck_rank=3), prefix="_dump_")
    proc = run_cli("--fr-path", str(tmp_path), "-p", "_dump_*", "-v", "--debug")
    assert proc.returncode == 1
    assert "suspect ranks  3" in proc.stdout
    copies = sorted(p.name for p in tmp_path.glob("*.json"))
    assert copies == [f"_dump_{r}.json" for r in range(4)]
    assert json.loads((tmp_path / "_dump_0.json").read_text())["version"] == "2.10"


def test_parquet_export_holds_the_tables(tmp_path) -> None:
    dumps = write_set(tmp_path / "dumps", tp_job(world=4, steps=3, stuck_rank=0))
    out = tmp_path / "out"
    assert run_cli(str(dumps), "--parquet", str(out), "--quiet").returncode == 1
    entries = pd.read_parquet(out / "entries.parquet")
    assert set(entries["rank"]) == {0, 1, 2, 3}
    groups = pd.read_parquet(out / "groups.parquet")
    assert list(groups["ranks"].iloc[0]) == [0, 1, 2, 3]
    assert json.loads((out / "report.json").read_text())["suspect_ranks"] == [0]


def test_single_file_glob_and_prefix_inputs(tmp_path) -> None:
    write_set(tmp_path, tp_job(world=4, steps=3, stuck_rank=2), prefix="_dump_")
    assert json.loads(run_cli(str(tmp_path / "_dump_0"), "--json").stdout)["ranks_loaded"] == 1
    assert json.loads(run_cli(str(tmp_path / "_dump_[01]"), "--json").stdout)["ranks_loaded"] == 2
    assert json.loads(run_cli(str(tmp_path / "_dump_"), "--json").stdout)["suspect_ranks"] == [2]


def test_collective_analyzer_drop_in(tmp_path) -> None:
    import argparse

    import analysis

    write_set(tmp_path, tp_job(world=4, steps=3, stuck_rank=1), prefix="_dump_")
    args = argparse.Namespace(fr_path=str(tmp_path), pattern="_dump_*", verbose=False)
    result, state = analysis.CollectiveAnalyzer(args).run_sync(args)
    assert state is analysis.AttributionState.CONTINUE
    assert result["suspect_ranks"] == [1]
    assert result["hanging_ranks"] == "hanging ranks: [1]"


def test_map_reduce_path_matches_the_pool(tmp_path) -> None:
    """The map step is a plain function: any engine's map gives the same report as the pool."""
    from concurrent.futures import ThreadPoolExecutor

    import analysis
    from analysis import analyze_dumps
    from analysis.ingest.discover import discover
    from analysis.tables.load import combine_results, load_one

    write_set(tmp_path, tp_job(world=8, steps=4, stuck_rank=6))
    (tmp_path / "nccl_trace_rank_9").write_bytes(b"not a dump")
    files, errors = discover(tmp_path)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(load_one, files))
    mapped = analyze_dumps(combine_results(results, errors))
    pooled = analysis.analyze(tmp_path, workers=2, use_cache=False)
    assert mapped.to_dict() == pooled.to_dict()
    assert mapped.suspect_ranks == [6]
    assert [e.file for e in mapped.file_errors] == [str(tmp_path / "nccl_trace_rank_9")]


def test_map_step_output_as_parquet_files(tmp_path) -> None:
    """A cluster map writes each file's tables as Parquet; the reduce reads them back."""
    import analysis
    from analysis import analyze_dumps
    from analysis.ingest.discover import discover
    from analysis.tables.load import combine, load_one
    from analysis.tables.parts import read_file_tables, write_file_tables
    from analysis.types import FileError

    dumps = tmp_path / "dumps"
    dumps.mkdir()
    write_set(dumps, tp_job(world=8, steps=4, stuck_rank=3))
    files, errors = discover(dumps)
    folders = []
    for f in files:
        result = load_one(f)
        assert not isinstance(result, FileError)
        folders.append(write_file_tables(result, tmp_path / "tables" / f"rank_{f.rank}"))
    report = analyze_dumps(combine([read_file_tables(d) for d in folders], errors))
    assert report.to_dict() == analysis.analyze(dumps, use_cache=False).to_dict()
    assert report.suspect_ranks == [3]


def test_a_run_that_exits_without_teardown_leaves_a_cache_the_next_run_reopens(tmp_path) -> None:
    """The command leaves without the interpreter's teardown (after joining the thread that
    writes the tables cache): the cache is there, and the next run gives the same report
    from it without writing anything new."""
    dumps, cache = tmp_path / "dumps", tmp_path / "cache"
    write_set(dumps, tp_job(world=4, steps=4, stuck_rank=1))
    env = {**os.environ, "FLIGHTDECK_CACHE_DIR": str(cache)}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "analysis", str(dumps), "--json", "--quiet"],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    first = run()
    assert first.returncode == 1 and json.loads(first.stdout)["suspect_ranks"] == [1]
    written = sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file())
    assert written, "no cache was written"
    second = run()
    assert second.returncode == 1 and json.loads(second.stdout) == json.loads(first.stdout)
    assert sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()) == written
