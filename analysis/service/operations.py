"""The operations the MCP server and the HTTP API share: a path under the root in, a dict out.

Each request's paths are confined to the root and checked against the limits
(``paths``) before any dump is opened; the reports are kept in memory (``memo``) so the
next question on the same, unchanged dumps is answered without reading them again.
Every failure a caller can cause is raised as :class:`Refused`, :class:`NotInDumps` or
:class:`InputError`, each naming the path and the reason.
"""

from __future__ import annotations

import os
from typing import Any

from ..api import analyze as run_analysis
from ..ingest.discover import discover
from ..report.report import Report
from ..tables.cache import fingerprint
from ..types import InputError
from .answers import NotInDumps, explain, group_states
from .memo import Busy, Memo
from .paths import Refused, Root, ServiceLimits

__all__ = ["ANSWERABLE", "Busy", "InputError", "NotInDumps", "Operations", "Refused", "ServiceLimits"]

ANSWERABLE = (Refused, NotInDumps, InputError)
"""What a caller can cause: each is answered with its message (Busy is a Refused)."""


class Operations:
    """analyze, explain_rank, group_states and compare on dumps under one root."""

    def __init__(self, root: str | os.PathLike[str], limits: ServiceLimits | None = None) -> None:
        self.root = Root(root, limits)
        self.limits = self.root.limits
        self.memo: Memo[Report] = Memo(self.limits.cached_reports, self.limits.max_concurrent, self.limits.wait_s)

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
