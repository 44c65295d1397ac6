"""Node health checks (NVIDIA's collector key): read on both paths, kept through the reduce
and the cache, reported, and used only to break ties the dumps leave open."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from collector_sets import as_collector, only_active
from locations import SAMPLE_DUMPS
from test_native_scanner import read_one_way, table_differences

import analysis
from analysis import schema as s
from analysis.cli import main as cli_main
from analysis.diagnosis.findings import Kind
from analysis.ingest import native
from analysis.ingest.health import MAX_OUTPUT_CHARS, UNREADABLE, health_fields, status_is_failed
from analysis.report.report import HEALTH_OUTPUT_CHARS
from analysis.tables.load import load_one
from analysis.tables.parts import read_file_tables, write_file_tables
from analysis.types import DumpFile, Limits
from benchmarks.synth import write_dump_set
from sample_dumps.generate import collector_bytes, collector_health

JSON_SET = SAMPLE_DUMPS / "collector_json_health"  # stuck_compute, rank 5 stuck; GPU of 5, NIC of 2 failed
PICKLE_SET = SAMPLE_DUMPS / "collector_pickle_health"  # stuck_compute, rank 5 stuck; NIC of 5, GPU of 3 failed


def _scenario(folder: Path) -> dict:
    return json.loads((folder / "scenario.json").read_text())


# -- reading the key -------------------------------------------------------------------


def test_fields_as_written_and_none_without_the_key() -> None:
    raw = {"health_check_results": collector_health(3, ["nic"])}
    fields = health_fields(raw)
    assert fields[s.GPU_HEALTH] == "Healthy" and fields[s.NIC_HEALTH] == "Failed"
    assert fields[s.NIC_HEALTH_OUTPUT].startswith("GPU 3 NIC/IB mlx5_3 link down")
    assert set(health_fields({}).values()) == {None}


@pytest.mark.parametrize(
    ("value", "status", "reason"),
    [
        ([1, 2], UNREADABLE, "'health_check_results' is list"),
        ({"gpu": "Failed"}, UNREADABLE, "['gpu'] is str"),
        ({"gpu": {"status": 3}}, UNREADABLE, "['status'] is 3"),
        ({"gpu": {"status": "Failed", "output": 7}}, "Failed", "['output'] is 7"),
    ],
)
def test_a_malformed_key_is_unreadable_not_a_lost_dump(tmp_path, value, status, reason) -> None:
    fields = health_fields({"health_check_results": value})
    assert fields[s.GPU_HEALTH] == status
    assert reason in fields[s.GPU_HEALTH_OUTPUT]
    dump = only_active(pickle.loads((SAMPLE_DUMPS / "healthy" / "rank_0").read_bytes()))
    dump["health_check_results"] = value
    (tmp_path / "_dump_0").write_bytes(pickle.dumps(dump))
    report = analysis.analyze(tmp_path, use_cache=False)
    assert report.file_errors == [] and report.ranks_loaded == 1
    assert report.health[0].gpu == status


def test_long_output_is_cut_where_stored() -> None:
    raw = {"health_check_results": {"gpu": {"status": "Failed", "output": "x" * (MAX_OUTPUT_CHARS * 3)}}}
    out = health_fields(raw)[s.GPU_HEALTH_OUTPUT]
    assert out.startswith("x" * MAX_OUTPUT_CHARS) and "more characters" in out and len(out) < MAX_OUTPUT_CHARS + 64


def test_failed_means_anything_but_healthy_as_nvidia_reads_it() -> None:
    assert [status_is_failed(x) for x in ("Healthy", "Failed", "Degraded", None, UNREADABLE)] == [
        False,
        True,
        True,
        False,
        False,
    ]


@pytest.mark.skipif(not native.available(), reason="the native scanner is not built")
@pytest.mark.parametrize("failed", [{}, {5: ["gpu", "nic"]}])
def test_native_and_full_path_read_the_collector_pickle_alike(tmp_path, failed) -> None:
    dump = only_active(pickle.loads((SAMPLE_DUMPS / "stuck_compute" / "rank_5").read_bytes()))
    path = tmp_path / "_dump_5"
    path.write_bytes(collector_bytes(dump, collector_health(5, failed.get(5, [])), "pickle"))
    fast = read_one_way(path, 5, Limits(), use_native=True)
    full = read_one_way(path, 5, Limits(), use_native=False)
    assert fast.native_taken, "the scanner should take the collector's plain pickle"
    assert fast.kind == full.kind == "tables"
    assert table_differences(fast.value, full.value) == []
    assert fast.value.meta.column(s.GPU_HEALTH).to_pylist() == ["Failed" if failed else "Healthy"]


# -- through the reduce and the cache --------------------------------------------------


def test_health_survives_the_cache_and_stored_parts(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FLIGHTDECK_CACHE_DIR", str(tmp_path / "cache"))
    first = analysis.analyze(PICKLE_SET)
    again = analysis.analyze(PICKLE_SET)  # from the Parquet cache
    assert [h for h in again.health.values()] == [h for h in first.health.values()]
    assert again.health[3].gpu == "Failed" and again.health[5].nic == "Failed"
    parts = []
    for f in sorted(PICKLE_SET.glob("_dump_*")):
        rank = int(f.name.rsplit("_", 1)[1])
        parts.append(read_file_tables(write_file_tables(load_one(DumpFile(str(f), rank)), tmp_path / f.name)))
    combined = analysis.analyze_dumps(analysis.combine(parts))
    assert combined.health == first.health


def test_parts_stored_without_health_columns_still_combine(tmp_path) -> None:
    part = load_one(DumpFile(str(SAMPLE_DUMPS / "stuck_compute" / "rank_5"), 5))
    part.meta = part.meta.drop_columns(list(s.HEALTH_COLUMNS))  # as an older version stored it
    back = read_file_tables(write_file_tables(part, tmp_path / "old"))
    assert back.meta.schema.equals(s.RANK_SCHEMA)
    assert analysis.analyze_dumps(analysis.combine([back])).health == {}


# -- the report ------------------------------------------------------------------------


@pytest.mark.parametrize("folder", [JSON_SET, PICKLE_SET], ids=["json", "pickle"])
def test_report_lists_every_rank_with_statuses_as_written(folder) -> None:
    expected = {int(r): d for r, d in _scenario(folder)["collector"]["health_failed"].items()}
    report = analysis.analyze(folder)
    rows = report.to_dict()["health"]
    assert [r["rank"] for r in rows] == list(range(8))
    for row in rows:
        for device in ("gpu", "nic"):
            assert row[device] == ("Failed" if device in expected.get(row["rank"], []) else "Healthy")
            assert (row[f"{device}_output"] != "") == (device in expected.get(row["rank"], []))
    assert report.suspect_ranks == _scenario(folder)["expected"]["suspect_ranks"] == [5]


def test_no_key_no_health_and_json_says_empty() -> None:
    report = analysis.analyze(SAMPLE_DUMPS / "stuck_compute")
    assert report.to_dict()["health"] == [] and not any("health check" in e for e in report.evidence)


def test_outputs_are_cut_in_the_json(tmp_path) -> None:
    dump = only_active(pickle.loads((SAMPLE_DUMPS / "healthy" / "rank_0").read_bytes()))
    health = {
        "gpu": {"status": "Failed", "output": "NVML Error: " + "y" * 10_000},
        "nic": collector_health(0, [])["nic"],
    }
    (tmp_path / "_dump_0").write_bytes(collector_bytes(dump, health, "pickle"))
    row = analysis.analyze(tmp_path, use_cache=False).to_dict()["health"][0]
    assert row["gpu_output"].startswith("NVML Error: yyy") and len(row["gpu_output"]) < HEALTH_OUTPUT_CHARS + 40


def test_support_and_cleared_ranks_are_stated_without_changing_the_verdict() -> None:
    report = analysis.analyze(JSON_SET)
    assert report.suspect_ranks == [5] and report.failure_class == "missing_participant"
    ev = "\n".join(report.evidence)
    assert "GPU health check failed on rank 5." in ev and "NIC health check failed on rank 2." in ev
    assert "support this: rank 5's GPU" in ev
    assert "Rank 2's NIC" in ev and "clear it" in ev
    assert 2 in report.victim_ranks


def test_health_check_flag_prints_the_table(capsys) -> None:
    assert cli_main([str(PICKLE_SET), "-c", "-v", "-q"]) == 1
    out = capsys.readouterr().out
    table = out[out.index("Node health checks") :]
    rows = [line.split() for line in table.splitlines()[2:] if line.split()[:1] and line.split()[0].isdigit()]
    assert [r[0] for r in rows[:2]] == ["3", "5"], "failed ranks first"
    assert ["3", "Failed", "Healthy"] in rows and ["5", "Healthy", "Failed"] in rows
    assert "Unhealthy ranks gpu: [3]" in table and "Healthy ranks gpu: [0, 1, 2, 4, 5, 6, 7]" in table
    assert "Unhealthy ranks nic: [5]" in table
    assert "Unhealthy, (3: GPU 3: Requires a reset to recover." in table  # -v: the outputs
    assert cli_main([str(PICKLE_SET), "-q"]) == 1
    assert "Node health checks" not in capsys.readouterr().out


# -- the tie-break ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def stalled_set(tmp_path_factory) -> Path:
    """Synthetic NCCL dumps (16 ranks, TP 4 x PP 2 x DP 2): every rank stuck in flight in its DP all_reduce."""
    out = tmp_path_factory.mktemp("stalled")
    write_dump_set(out, 16, entries=300, fault="stalled", tp=4, pp=2)
    return out


def _stalled(stalled_set: Path, tmp_path: Path, fmt: str, failed: dict[int, list[str]]) -> analysis.Report:
    dst = as_collector(stalled_set, tmp_path / fmt, fmt, failed)
    return analysis.analyze(dst, use_cache=False)


def test_without_checks_the_stall_isolates_no_rank(stalled_set) -> None:
    report = analysis.analyze(stalled_set, use_cache=False)
    assert report.failure_class == "stalled_in_flight"
    assert report.suspect_ranks == [] and report.attribution_state == "STOP"


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_a_failed_gpu_breaks_the_tie(stalled_set, tmp_path, fmt) -> None:
    report = _stalled(stalled_set, tmp_path, fmt, {6: ["gpu"]})
    assert report.suspect_ranks == [6]
    assert report.attribution_state == "CONTINUE"
    assert report.failure_class == "stalled_in_flight"
    assert report.victim_ranks == [r for r in range(16) if r != 6]
    assert 6 in report.wavefront.pg_ranks
    assert "rank 6 fails a node health check" in report.summary
    assert any("cannot single out a rank" in e and "rank 6's GPU" in e for e in report.evidence)
    # the decision is data among the findings; every evidence sentence is rendered from one
    assert [f.ranks for f in report.findings if f.kind == Kind.HEALTH_TIE_BROKEN] == [(6,)]
    assert len(report.evidence) == len(report.findings)


def test_a_failed_nic_breaks_the_tie_too(stalled_set, tmp_path) -> None:
    report = _stalled(stalled_set, tmp_path, "json", {3: ["nic"], 12: ["gpu"]})
    assert report.suspect_ranks == [3, 12]
    assert report.attribution_state == "CONTINUE"


@pytest.mark.parametrize(
    ("failed", "sentence"),
    [({}, "passed: they do not single out"), ({r: ["gpu"] for r in range(16)}, "do not break the tie")],
    ids=["all passed", "all failed"],
)
def test_checks_that_do_not_discriminate_leave_the_tie(stalled_set, tmp_path, failed, sentence) -> None:
    report = _stalled(stalled_set, tmp_path, "pickle", failed)
    assert report.suspect_ranks == [] and report.attribution_state == "STOP"
    assert any(sentence in e for e in report.evidence)


def test_isolated_suspects_are_never_replaced_by_a_failed_check(tmp_path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLE_DUMPS / "stuck_compute", src)
    dst = as_collector(src, tmp_path / "c", "pickle", {1: ["gpu"]}, active_only=False)
    report = analysis.analyze(dst, use_cache=False)
    assert report.suspect_ranks == [5] and report.attribution_state == "CONTINUE"
    assert any("Rank 1's GPU" in e and "stated, not blamed" in e for e in report.evidence)


# -- fresh real runs -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_fresh_real_run_written_as_the_collector_writes(tmp_path, fmt) -> None:
    pytest.importorskip("torch")
    from sample_dumps.generate import generate

    failed = {6: ["gpu"], 0: ["nic"]}
    info = generate("two_culprits", tmp_path, world_size=8, culprit=5, seed=1, collector=fmt, health_failed=failed)
    names = sorted(p.name for p in tmp_path.glob("_dump_*"))
    assert names == sorted(f"_dump_{r}" + (".json" if fmt == "json" else "") for r in range(8))
    report = analysis.analyze(tmp_path, use_cache=False)
    assert report.file_errors == []
    assert report.suspect_ranks == info["expected"]["suspect_ranks"]
    assert report.attribution_state == "CONTINUE"
    assert report.health[6].gpu == "Failed" and report.health[0].nic == "Failed"
    assert sum(h.failed for h in report.health.values()) == 2
    ev = "\n".join(report.evidence)
    assert ("support this: rank 6's GPU" in ev) == (6 in report.suspect_ranks)
    assert "Rank 0's NIC" in ev and "stated, not blamed" in ev


def test_nvidia_drop_in_prints_the_table_with_their_flag(capsys) -> None:
    from argparse import Namespace

    result, state = analysis.CollectiveAnalyzer().run_sync(Namespace(fr_path=str(JSON_SET), health_check=True))
    assert state == "CONTINUE" and result["health"][5]["gpu"] == "Failed"
    assert "Unhealthy ranks gpu: [5]" in capsys.readouterr().err
