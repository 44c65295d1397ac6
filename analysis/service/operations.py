"""The operations the MCP server and the HTTP API share: a path under the root in, a dict out.

Each request's paths are confined to the root and checked against the limits
(``paths``) before any dump is opened; the reports are kept in memory (``memo``) so the
next question on the same, unchanged dumps is answered without reading them again.
Every failure a caller can cause is raised as :class:`Refused`, :class:`NotInDumps` or
:class:`InputError`, each naming the path and the reason.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..api import analyze as run_analysis
from ..ingest.discover import discover
from ..live.lines import line_of
from ..live.snapshots import Snapshot, SnapshotFinder
from ..live.watch import judge
from ..report.report import Report
from ..tables.cache import fingerprint
from ..types import InputError
from .answers import NotInDumps, explain, group_states
from .memo import Busy, Memo
from .paths import Refused, Root, ServiceLimits

__all__ = ["ANSWERABLE", "Busy", "InputError", "NotInDumps", "Operations", "Refused", "ServiceLimits"]

ANSWERABLE = (Refused, NotInDumps, InputError)
"""What a caller can cause: each is answered with its message (Busy is a Refused)."""


MAX_NAMES = 100
"""Snapshot names listed in a watch_status answer (the newest ones; the count says how many)."""


class Operations:
    """analyze, explain_rank, group_states, compare and watch_status on dumps under one root."""

    def __init__(self, root: str | os.PathLike[str], limits: ServiceLimits | None = None) -> None:
        self.root = Root(root, limits)
        self.limits = self.root.limits
        self.memo: Memo[Report] = Memo(self.limits.cached_reports, self.limits.max_concurrent, self.limits.wait_s)
        self.lines: Memo[dict[str, Any]] = Memo(
            self.limits.cached_reports, self.limits.max_concurrent, self.limits.wait_s
        )

    def analyze(self, path: str) -> dict[str, Any]:
        """The report of the dumps under ``path`` (the JSON of ``flightdeck PATH --json``)."""
        return self.report(path).to_dict()

    def explain_rank(self, path: str, rank: int) -> dict[str, Any]:
        """One rank: newest entries, stack at the wavefront against the majority's, who it waits on and who on it."""
        return explain(self.report(path), int(rank))

    def group_states(self, path: str, group: str, max_seqs: int = 64) -> dict[str, Any]:
        """The rank x seq states of one process group, identical rows folded."""
        return group_states(self.report(path), str(group), max(1, min(int(max_seqs), 1024)))

    def compare(self, earlier: str, later: str) -> dict[str, Any]:
        """The later snapshot's report with ``compare``: who moved in between (``flightdeck LATER --compare EARLIER``)."""
        return self.report(later, earlier=earlier).to_dict()

    def watch_status(
        self, path: str, world: int | None = None, settle: float = 1.0, wait_missing: float = 10.0
    ) -> dict[str, Any]:
        """The live line of ``flightdeck watch`` for the newest complete snapshot in the folder
        ``path``, against the complete snapshot before it (``line``, the ``--json-lines`` dict),
        the snapshots' names, and the ranks still missing from snapshots not complete yet.

        Complete as ``watch`` says it (every expected rank's file there and unchanged for
        ``settle`` seconds, or ``wait_missing`` seconds with ranks missing, or a newer snapshot
        complete), with the files' modification times standing in for the watch's polls.
        Nothing is written: ``line.report`` is None (``analyze`` on the snapshot gives it).
        """
        if world is not None and not 1 <= int(world) <= self.limits.max_files:
            raise Refused(f"{path}: refused: world {world} is not between 1 and {self.limits.max_files} (--max-files)")
        real = self.root.resolve(path)
        if not os.path.isdir(real):
            raise Refused(f"{path}: not a folder: give the folder the snapshots are written to")
        finder = SnapshotFinder(
            Path(real), world=world, settle=settle, wait_missing=wait_missing, skip_existing=False, one_look=True
        )
        snaps = finder.poll()
        waiting = [
            {"snapshot": name, "missing_ranks": list(missing)} for name, missing in sorted(finder.waiting().items())
        ]
        answer: dict[str, Any] = {
            "path": path,
            "line": None,
            "latest": None,
            "previous": None,
            "complete": len(snaps),
            "snapshots": [s.name for s in snaps[-MAX_NAMES:]],
            "waiting": waiting,
            "expected_ranks": len(finder.expected()),
            "notes": list(finder.notes),
        }
        if not snaps:
            answer["message"] = (
                "no complete snapshot yet" if waiting else "no snapshot here: no dump file in it or in its subfolders"
            )
            return answer
        latest, previous = snaps[-1], (snaps[-2] if len(snaps) > 1 else None)
        answer["latest"] = latest.name
        answer["previous"] = None if previous is None else previous.name
        key = (real, self._snapshot_key(latest), None if previous is None else self._snapshot_key(previous))
        line, _ = self.lines.get(key, lambda: self._line(latest, previous), path)
        answer["line"] = line
        return answer

    def _snapshot_key(self, snap: Snapshot) -> tuple[str, tuple[int, ...], str]:
        real = os.fspath(snap.path)
        return (real, snap.missing, self._fingerprint(real))

    def _line(self, latest: Snapshot, previous: Snapshot | None) -> dict[str, Any]:
        """The line for ``latest`` against ``previous``, each snapshot's report from the memo."""
        t0 = time.perf_counter()
        later = self.report(self.root.shown(os.fspath(latest.path)))
        earlier, last = None, None
        if previous is not None:
            before = self.report(self.root.shown(os.fspath(previous.path)))
            if before.ranks_loaded:
                earlier = before.analysis
                last = line_of(before, previous, None, 0.0)  # its candidates: who the others waited on then
        if later.analysis is None:
            raise InputError(f"{self.root.shown(os.fspath(latest.path))}: no Flight Recorder dump could be read")
        line, _ = judge(latest, later.analysis, earlier if later.ranks_loaded else None, last, None, t0)
        return line.to_dict()

    def report(self, path: str, earlier: str | None = None) -> Report:
        """The report on ``path`` (compared with ``earlier``), from memory when the files are unchanged."""
        real = self.root.resolve(path)
        before = None if earlier is None else self.root.resolve(earlier)
        key = (real, before, self._fingerprint(real), None if before is None else self._fingerprint(before))
        what = path if earlier is None else f"{earlier} -> {path}"
        report, _ = self.memo.get(key, lambda: self._analyze(real, before), what)
        return report

    def _fingerprint(self, real: str) -> str:
        files, errors = discover(real)
        files, refused = self.root.split_files(files)
        return fingerprint(files, [*errors, *refused])

    def _analyze(self, real: str, before: str | None) -> Report:
        try:
            return run_analysis(
                real,
                earlier=before,
                limits=self.limits.loader_limits(),
                file_filter=self.root.split_files,
            )
        except InputError as exc:  # name the paths as the client gave them, not the server's real paths
            raise InputError(str(exc).replace(self.root.path + os.sep, "").replace("--compare ", "earlier ")) from None
