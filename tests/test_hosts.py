"""Hosts and the drain list: from ``--ranks-per-node``, a hostfile, or host names in the dump
file names; a bad hostfile is a clear error naming the file, the line and the reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from locations import ROOT, SAMPLE_DUMPS

import analysis
from analysis.ingest.hosts import host_in_name, read_hostfile
from analysis.report.hosts import host_fields
from analysis.types import FailureClass, HostMap, InputError

SCENARIOS = sorted(p.parent for p in SAMPLE_DUMPS.glob("*/scenario.json"))
STUCK = SAMPLE_DUMPS / "stuck_compute"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


# -- where the hosts come from ---------------------------------------------------------------


def test_hostfile_with_header_and_comments(tmp_path) -> None:
    f = tmp_path / "hosts.csv"
    f.write_text("rank,host\n# rack 1\n0, gpu-a01\n1,gpu-a01\n\n2,gpu-b02.cluster\n")
    hosts = read_hostfile(f)
    assert hosts.listed == {0: "gpu-a01", 1: "gpu-a01", 2: "gpu-b02.cluster"}
    assert hosts.host(2) == "gpu-b02.cluster" and hosts.host(7) is None
    assert str(f) in hosts.source


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0,a\n1\n", "line 2: expected 'rank,host', found 1 field"),
        ("0,a\nx,b\n", "line 2: rank 'x' is not a whole number"),
        ("0,a\n-1,b\n", "line 2: rank '-1' is not a whole number"),
        ("0,a\n1,b c\n", "line 2: 'b c' is not a host name"),
        ("0,a\n0,b\n", "line 2: rank 0 is listed twice (a, b)"),
        ("rank,host\n# nothing\n", "no 'rank,host' line"),
        ("0,a\n99999999,b\n", "line 2: rank 99999999 is above the limit"),
    ],
)
def test_bad_hostfile_names_the_file_line_and_reason(tmp_path, text, reason) -> None:
    f = tmp_path / "hosts.csv"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        read_hostfile(f)
    assert str(f) in str(err.value) and reason in str(err.value)


def test_missing_or_binary_hostfile(tmp_path) -> None:
    with pytest.raises(InputError, match=r"hostfile .*nope\.csv: No such file"):
        read_hostfile(tmp_path / "nope.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        read_hostfile(tmp_path / "bin.csv")


def test_bad_hostfile_on_the_command_line_exits_2_with_the_reason(tmp_path) -> None:
    f = tmp_path / "hosts.csv"
    f.write_text("0,a\n1;b\n")
    proc = run_cli(str(STUCK), "--hostfile", str(f), "--quiet")
    assert proc.returncode == 2
    assert f"hostfile {f}, line 2: expected 'rank,host'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli(str(STUCK), "--ranks-per-node", "0", "--quiet")
    assert proc.returncode == 2 and "--ranks-per-node must be at least 1" in proc.stderr


def test_ranks_per_node() -> None:
    hosts = HostMap(source="8 ranks per node", ranks_per_node=8)
    assert [hosts.host(r) for r in (0, 7, 8, 3155)] == ["node0", "node0", "node1", "node394"]


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("nccl_trace_host-a_rank_12", "host-a"),
        ("job_gpu-b07.cluster_rank_3.pkl.gz", "gpu-b07.cluster"),
        ("host-a_rank_0", "host-a"),
        ("nccl_trace_rank_12", None),
        ("comm_lib_trace_rank_3", None),
        ("rank_3", None),
        ("_dump_3", None),
        ("job_trace_rank_3", None),
    ],
)
def test_host_in_file_name(name, host) -> None:
    assert host_in_name(name) == host


# -- the drain list ------------------------------------------------------------------------


def test_drain_order_follows_the_evidence() -> None:
    hosts = HostMap(source="test", listed={0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c", 6: "d", 7: "d"})
    suspects = {6: FailureClass.STALLED_IN_FLIGHT, 2: FailureClass.DESYNC, 5: FailureClass.MISSING_DUMP}
    rows, drain = host_fields(hosts, range(8), suspects, without_dump={5, 1}, wave_ranks=(6, 7))
    # the wavefront group's suspect first, then by class (desync before a missing dump), then no dump only
    assert drain == ["d", "b", "c", "a"]
    assert rows[2] == {"host": "c", "ranks": [4, 5], "suspect_ranks": [5], "ranks_without_dump": [5]}
    assert rows[3] == {"host": "a", "ranks": [0, 1], "suspect_ranks": [], "ranks_without_dump": [1]}
    assert host_fields(None, range(8), suspects, set()) == ([], [])


@pytest.mark.parametrize("folder", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_drain_names_the_injected_ranks_hosts_on_every_sample(folder) -> None:
    scenario = json.loads((folder / "scenario.json").read_text())
    expected = scenario["expected"]["suspect_ranks"]
    for per_node in (8, 2):
        report = analysis.analyze(folder, hosts=HostMap(source="test", ranks_per_node=per_node))
        want = {f"node{r // per_node}" for r in expected}
        assert set(report.drain_hosts) == want, per_node
        assert all(set(h["suspect_ranks"]) <= set(expected) for h in report.hosts)
    assert scenario["scenario"] != "healthy" or report.drain_hosts == []


def test_host_names_in_files_and_an_unreadable_dump(tmp_path) -> None:
    """Hosts come from the file names, also for a file that could not be read."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    for src in STUCK.glob("rank_*"):
        r = int(src.name.split("_")[1])
        shutil.copy(src, folder / f"job_host-{'ab'[r // 4]}_rank_{r}")
    (folder / "job_host-a_rank_2").write_bytes(b"\x80\x02 truncated")
    report = analysis.analyze(folder, use_cache=False)
    assert report.host_map is not None and report.host_map.source == "file names"
    assert report.drain_hosts == ["host-b", "host-a"], "host-b holds the stuck rank 5"
    by_host = {h["host"]: h for h in report.hosts}
    assert by_host["host-a"]["ranks_without_dump"] == [2]
    assert by_host["host-b"]["suspect_ranks"] == [5]


def test_text_report_ends_with_the_drain_list() -> None:
    proc = run_cli(str(STUCK), "--ranks-per-node", "2", "--quiet")
    assert proc.returncode == 1
    lines = proc.stdout.rstrip().splitlines()
    assert lines[-2:] == ["Drain, in order of evidence:", "  node2  (suspect 5)"]
    assert json.loads(run_cli(str(STUCK), "--ranks-per-node", "2", "--json").stdout)["drain_hosts"] == ["node2"]


def test_drain_and_classes_at_scale(tmp_path) -> None:
    """A generated 512-rank NCCL job (TP 8 x PP 4 x DP 16) with one stuck rank."""
    from benchmarks.synth import write_dump_set

    truth = write_dump_set(tmp_path, ranks=512, entries=150, culprit=301, seed=3, processes=2)
    assert truth["culprit"] == [301]
    report = analysis.analyze(tmp_path, use_cache=False, hosts=HostMap(source="test", ranks_per_node=8))
    assert report.suspect_ranks == [301]
    assert report.drain_hosts == [f"node{301 // 8}"]
    alone = [c for c in report.rank_classes if 301 in c["ranks"]]
    assert alone[0]["ranks"] == [301] and alone[0]["suspect"]
    assert sum(c["size"] for c in report.rank_classes) == 512
    assert len(report.rank_classes) <= 16, "a few classes for the whole job"
