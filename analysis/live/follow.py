"""A watch driven from outside, one poll at a time: what the dashboard's live mode shows.

:class:`LiveWatch` is ``flightdeck watch`` without its loop, printing or report files:
each :meth:`LiveWatch.step` polls the folder, analyses the snapshots completed since,
each against the previous one (the same ``judge``), and keeps the lines, the collectives
each rank had completed in every snapshot (for the timeline per rank class), the newest
snapshot's report and the first hung one's. Thread-safe: several browser tabs may step
the same watch.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..api import import_analysis
from ..tables.load import FileFilter, load
from ..types import HostMap
from ..views.live import completed_per_rank
from .lines import STOPPED, Line
from .snapshots import Snapshot, SnapshotFinder
from .watch import judge

if TYPE_CHECKING:
    from ..diagnosis.analysis import Analysis
    from ..report.report import Report

MAX_KEPT = 200
"""Snapshots whose lines and per-rank counts are kept (the oldest go first)."""


@dataclass(frozen=True, slots=True)
class Judged:
    """One snapshot as the live mode shows it."""

    snapshot: Snapshot
    line: Line
    report: Report


class LiveWatch:
    """The snapshots of ``root`` as they arrive (see the module); ``settle``, ``wait_missing``,
    ``world`` as for ``flightdeck watch``. The snapshots already there when the watch starts
    are passed over except the newest, the baseline."""

    def __init__(
        self,
        root: str | Path,
        *,
        world: int | None = None,
        settle: float = 1.0,
        wait_missing: float = 10.0,
        hosts: HostMap | None = None,
        file_filter: FileFilter | None = None,
    ) -> None:
        self.root = Path(root)
        self.finder = SnapshotFinder(self.root, world=world, settle=settle, wait_missing=wait_missing)
        self.hosts = hosts
        self.file_filter = file_filter
        """Passed to ``load`` for the snapshot folders under ``root`` (the dashboard confines
        them); the copies of in-place generations hold only regular files the finder copied."""
        self.lines: list[Line] = []
        self.history: list[tuple[str, dict[int, int]]] = []
        """(snapshot, collectives completed per rank), oldest first."""
        self.latest: Judged | None = None
        self.hung: Judged | None = None
        """The first snapshot in which no rank moved: the full report's."""
        self._previous: Analysis | None = None
        self._lock = threading.Lock()

    def step(self) -> list[Line]:
        """Poll once; the lines of the snapshots completed since the last step, oldest first."""
        with self._lock:
            found = self.finder.poll()
            if found:
                import_analysis()
            return [self._judge(snap) for snap in found]

    def notes(self) -> list[str]:
        """What the folder's contents are worth saying (the debug server's tables, a missing folder)."""
        return list(self.finder.notes)

    def waiting(self) -> dict[str, tuple[int, ...]]:
        """Snapshots seen but not complete yet, and the ranks each still lacks."""
        with self._lock:
            return self.finder.waiting()

    def close(self) -> None:
        self.finder.close()

    def _judge(self, snap: Snapshot) -> Line:
        from ..diagnosis.analysis import run_analysis

        t0 = time.perf_counter()
        inside = snap.path.is_relative_to(self.root)
        dumps = load(snap.path, use_cache=False, file_filter=self.file_filter if inside else None)
        a = run_analysis(dumps)
        last = self.lines[-1] if self.lines else None
        line, report = judge(snap, a, self._previous if dumps.ranks else None, last, self.hosts, t0)
        if dumps.ranks:
            self._previous = a
        self.lines.append(line)
        self.history.append((snap.name, completed_per_rank(a)))
        del self.lines[:-MAX_KEPT], self.history[:-MAX_KEPT]
        self.latest = Judged(snap, line, report)
        if line.state in STOPPED and self.hung is None:
            self.hung = self.latest
        return line
