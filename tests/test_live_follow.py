"""The live mode's library side: ``LiveWatch`` stepped poll by poll over snapshot folders made
of sample sets, the timeline per rank class, and the dashboard's ``--watch`` options."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from locations import SAMPLE_DUMPS

from analysis.live.follow import LiveWatch
from analysis.views.figures.progress import progress_figure
from analysis.views.live import class_progress, completed_per_rank
from dashboard.args import parse_args


def add_snapshot(job: Path, name: str, sample: str) -> None:
    shutil.copytree(SAMPLE_DUMPS / sample, job / name, ignore=shutil.ignore_patterns("*.json"))


def settled(watch: LiveWatch, polls: int = 3) -> list[str]:
    """The states of the snapshots completed over a few polls (settle 0: two polls see them stable)."""
    states = []
    for _ in range(polls):
        states += [line.state for line in watch.step()]
        time.sleep(0.01)
    return states


def test_the_watch_follows_the_snapshots_to_the_hang(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "snap-00", "slow_rank.earlier")
    watch = LiveWatch(tmp_path, settle=0.0)
    assert settled(watch) == ["baseline"] and watch.hung is None
    add_snapshot(tmp_path, "snap-01", "slow_rank")
    assert settled(watch) == ["slow"] and watch.lines[-1].ranks == (5,)
    add_snapshot(tmp_path, "snap-02", "stuck_twice.earlier")
    add_snapshot(tmp_path, "snap-03", "stuck_twice")
    assert settled(watch) == ["baseline", "hung"]  # another job's snapshot starts a new baseline
    assert watch.hung is not None and watch.hung.snapshot.name == "snap-03"
    assert watch.hung.line.ranks == (5,) and watch.hung.report.verdict == "hang"
    assert watch.hung.report.comparison is not None  # the full report compares it with snap-02
    assert [name for name, _ in watch.history] == ["snap-00", "snap-01", "snap-02", "snap-03"]

    frame = class_progress(watch.history, watch.latest.report.rank_classes)
    suspect = frame[frame["class"].str.contains(r"\*")]
    assert set(suspect["class"]) == {"class 2 * · ranks 5"}
    by_snapshot = dict(zip(suspect["snapshot"], suspect["completed"], strict=True))
    assert by_snapshot["snap-02"] == by_snapshot["snap-03"]  # nobody moved: a flat line
    assert by_snapshot["snap-01"] > by_snapshot["snap-00"]
    fig = progress_figure(frame)
    assert len(fig.data) == len(watch.latest.report.rank_classes)


def test_the_file_filter_decides_what_is_read(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "snap-00", "slow_rank.earlier")
    watch = LiveWatch(tmp_path, settle=0.0, file_filter=lambda files: ([], []))
    assert settled(watch) == ["unreadable"]


def test_completed_per_rank_counts_collectives_over_groups(tmp_path: Path) -> None:
    add_snapshot(tmp_path, "snap-00", "stuck_twice")
    watch = LiveWatch(tmp_path, settle=0.0)
    settled(watch)
    assert watch.history[0][1] == completed_per_rank(watch._previous)
    assert sorted(watch.history[0][1]) == list(range(8))


def test_the_dashboard_takes_a_folder_to_watch(tmp_path: Path) -> None:
    job = tmp_path / "job"
    args = parse_args(["--watch", str(job), "--watch-every", "0.01", "--watch-settle", "0.5"])
    assert (args.watch, args.watch_every, args.watch_settle) == (str(job), 0.2, 0.5)
    job.mkdir()
    assert str(job.resolve()) in args.roots()  # the path box may read it
    assert str(tmp_path.resolve()) not in args.roots()  # never its parent
