"""Two snapshots of one job: dead or slow.

Real runs: ``slow_rank`` (rank 5 sleeps 2.5 s before its tensor-parallel all_reduce in
every step, then goes on) and ``stuck_twice`` (rank 5 never comes back), each dumped
twice about three seconds apart (the earlier snapshot in ``<name>.earlier``). In both
single snapshots rank 5 looks the same: the others wait on it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import raw_dumps
from locations import ROOT, SAMPLE_DUMPS
from nccl_sets import tp_job, write_set

import analysis
from analysis.types import InputError

SLOW, STUCK = SAMPLE_DUMPS / "slow_rank", SAMPLE_DUMPS / "stuck_twice"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _finished(folder, rank: int) -> dict[str, int]:
    """Per group name, the highest collective seq the rank finished, from its pickle."""
    out: dict[str, int] = {}
    for e in raw_dumps.raw_dump(folder, rank)["entries"]:
        if e["retired"] and not e["is_p2p"]:
            name = e["process_group"][0]
            out[name] = max(out.get(name, -1), e["collective_seq_id"])
    return out


def _moved_in_files(later, earlier) -> set[int]:
    moved = set()
    for r in range(8):
        before, after = _finished(earlier, r), _finished(later, r)
        if any(after[g] > before.get(g, -1) for g in after):
            moved.add(r)
    return moved


def test_each_snapshot_alone_cannot_tell_slow_from_stuck() -> None:
    for folder in (SLOW, SLOW.with_name("slow_rank.earlier"), STUCK, STUCK.with_name("stuck_twice.earlier")):
        report = analysis.analyze(folder)
        assert report.suspect_ranks == [5] and report.failure_class == "missing_participant", folder.name
        assert report.compare is None


def test_a_slow_rank_moved_between_the_snapshots() -> None:
    earlier = SLOW.with_name("slow_rank.earlier")
    assert _moved_in_files(SLOW, earlier) == set(range(8)), "every rank finished collectives in between"
    report = analysis.analyze(SLOW, earlier=earlier)
    c = report.compare
    assert c["motion"] == "progressing"
    assert c["progressing_ranks"] == list(range(8)) and c["stalled_ranks"] == []
    assert c["slow_ranks"] == [5] and c["stuck_ranks"] == []
    assert c["interval_s"] > 0
    assert "the job is slow, not hung" in c["summary"] and "Rank 5" in c["summary"]
    deltas = report.tables["compare"]
    tp = deltas.loc[(deltas["rank"] == 5) & (deltas["pg_key"] == "3")].iloc[0]
    assert tp["completed_later"] == _finished(SLOW, 5)["3"]
    assert tp["completed_earlier"] == _finished(earlier, 5)["3"]


def test_the_slow_rank_is_measured_from_when_each_rank_came_into_the_collectives() -> None:
    """Rank 5 came into each of its tensor-parallel all_reduces 2.5 s after its peer: the others
    waited on it alone for most of the interval. Its peer (rank 4), late into its data-parallel
    collectives only because it waited on rank 5 first, and the ranks waiting on both, are not slow."""
    from analysis.diagnosis.lateness import WAIT_SHARE

    c = analysis.analyze(SLOW, earlier=SLOW.with_name("slow_rank.earlier"), use_cache=False).comparison
    assert c.slow == (5,)
    t = c.lateness.set_index("rank")
    assert t.loc[5, "wait_share"] >= WAIT_SHARE and t.loc[5, "recurring_ns"] <= t.loc[5, "wait_ns"]
    others = t.drop(index=5)
    assert (others["wait_share"] < WAIT_SHARE).all(), t
    assert t.loc[4, "lead_ns"] > WAIT_SHARE * c.interval_ns  # late by the wait on 5, not its own doing
    stuck = analysis.analyze(STUCK, earlier=STUCK.with_name("stuck_twice.earlier"), use_cache=False).comparison
    assert stuck.slow == () and stuck.lateness is None  # a hang is not measured for slowness


def test_a_stuck_rank_did_not_move_nor_did_anyone() -> None:
    earlier = STUCK.with_name("stuck_twice.earlier")
    assert _moved_in_files(STUCK, earlier) == set(), "nobody finished anything in between"
    report = analysis.analyze(STUCK, earlier=earlier)
    c = report.compare
    assert c["motion"] == "hung" and c["progressing_ranks"] == [] and c["stalled_ranks"] == list(range(8))
    assert c["stuck_ranks"] == [5] and c["slow_ranks"] == []
    assert c["summary"].startswith("No rank completed a collective")


def test_compare_on_the_command_line() -> None:
    slow = run_cli(str(SLOW), "--compare", str(SLOW.with_name("slow_rank.earlier")), "--quiet")
    stuck = run_cli(str(STUCK), "--compare", str(STUCK.with_name("stuck_twice.earlier")), "--quiet")
    assert slow.returncode == stuck.returncode == 1
    assert "Compared with the earlier dumps:" in slow.stdout and "is slow, not stuck" in slow.stdout
    assert "the job is hung, not slow" in stuck.stdout and "is stuck" in stuck.stdout
    data = json.loads(run_cli(str(SLOW), "--compare", str(SLOW.with_name("slow_rank.earlier")), "--json").stdout)
    assert data["compare"]["slow_ranks"] == [5]


def test_a_rank_that_did_not_move_while_its_peers_did(tmp_path) -> None:
    """Rank 1 stays at seq 3 while ranks 0, 2, 3 finish seqs 3 to 5 (they wait on it at 6)."""
    early = {r: e[:3] for r, e in tp_job(4, 6, stuck_rank=-1, stuck_state="completed").items()}
    late = tp_job(4, 6, stuck_rank=1)
    late[1] = late[1][:3]
    write_set(tmp_path / "early", early)
    write_set(tmp_path / "late", late)
    report = analysis.analyze(tmp_path / "late", earlier=tmp_path / "early", use_cache=False)
    c = report.compare
    assert c["motion"] == "straggler" and c["stalled_ranks"] == [1] and c["stuck_ranks"] == [1]
    assert c["progressing_ranks"] == [0, 2, 3]
    assert c["summary"].startswith("Rank 1 completed nothing") and "3 other ranks went on" in c["summary"]


def test_bad_earlier_folders_are_clear_errors(tmp_path) -> None:
    proc = run_cli(str(STUCK), "--compare", str(tmp_path / "nope"), "--quiet")
    assert proc.returncode == 2 and f"--compare {tmp_path / 'nope'}: no such file or folder" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = run_cli(str(STUCK), "--compare", str(tmp_path / "empty"), "--quiet")
    assert (
        proc.returncode == 2 and f"--compare {tmp_path / 'empty'}: no Flight Recorder dump could be read" in proc.stderr
    )
    assert "Traceback" not in proc.stderr
    with pytest.raises(InputError, match="swapped"):
        analysis.analyze(STUCK.with_name("slow_rank.earlier"), earlier=SLOW)
    other = tmp_path / "other"
    write_set(other, tp_job(4, 3, stuck_rank=1))
    with pytest.raises(InputError, match="not snapshots of one job"):
        analysis.analyze(other, earlier=STUCK, use_cache=False)


def test_comparing_a_set_with_a_copy_of_itself_is_a_hang(tmp_path) -> None:
    shutil.copytree(SAMPLE_DUMPS / "stuck_compute", tmp_path / "copy")
    report = analysis.analyze(SAMPLE_DUMPS / "stuck_compute", earlier=tmp_path / "copy")
    assert report.compare["motion"] == "hung" and report.compare["interval_s"] == 0.0
