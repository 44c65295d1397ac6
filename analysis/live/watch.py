"""The watch loop: each complete snapshot read, analysed against the previous one, one line said.

Each snapshot costs only its own files: the previous snapshot's analysis is kept in
memory and compared with, never read again. The first snapshot in which no rank moved
gets the full report, written next to the snapshots (or to ``report_dir``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..api import import_analysis
from ..tables.load import load
from ..types import HostMap, InputError
from .lines import STOPPED, Line, line_of
from .snapshots import Snapshot, SnapshotFinder

if TYPE_CHECKING:
    from ..diagnosis.analysis import Analysis
    from ..report.report import Report

EXIT_STOPPED, EXIT_HUNG, EXIT_INTERRUPTED = 0, 1, 130


@dataclass
class WatchOptions:
    """What ``flightdeck watch`` was asked for (see ``--help``)."""

    world: int | None = None
    settle: float = 1.0
    wait_missing: float = 10.0
    poll: float = 0.25
    pattern: str | None = None
    until_hang: bool = False
    json_lines: bool = False
    on_hang: str | None = None
    report_dir: str | None = None
    workers: int | None = None
    use_cache: bool = False
    """Each snapshot is read once, so by default its tables are not cached."""
    hosts: HostMap | None = None
    all_existing: bool = False
    """Also analyse the snapshots already there when the watch starts (default: the newest only)."""
    max_snapshots: int | None = None


class Watcher:
    """Snapshots in, lines out; :meth:`step` handles what one poll found."""

    def __init__(self, root: str | Path, opts: WatchOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr):
        self.root = Path(root)
        self.opts = opts
        self.out, self.err = out, err
        self.finder = SnapshotFinder(
            self.root,
            world=opts.world,
            settle=opts.settle,
            wait_missing=opts.wait_missing,
            pattern=opts.pattern,
            skip_existing=not opts.all_existing,
        )
        self.previous: Analysis | None = None
        self.last: Line | None = None
        self.reported = False
        self.seen = 0
        self.on_hang: subprocess.Popen | None = None
        self.full_text = ""

    def run(self) -> int:
        """Watch until a hang (with ``until_hang``), ``max_snapshots`` or Ctrl-C."""
        try:
            import_analysis()
            while True:
                for snap in self.finder.poll():
                    line = self.analyse(snap)
                    self.say(line)
                    self.seen += 1
                    if line.state in STOPPED and self.opts.until_hang:
                        if self.on_hang is not None:
                            self.on_hang.wait()  # the user's command finishes before the watch does
                        return EXIT_HUNG
                    if self.opts.max_snapshots is not None and self.seen >= self.opts.max_snapshots:
                        return EXIT_STOPPED
                self.say_notes()
                time.sleep(self.opts.poll)
        except KeyboardInterrupt:
            print("flightdeck watch: stopped (Ctrl-C)", file=self.err)
            return EXIT_INTERRUPTED
        finally:
            self.finder.close()

    def say_notes(self) -> None:
        while self.finder.notes:
            print(f"note: {self.finder.notes.pop(0)}", file=self.err)

    def analyse(self, snap: Snapshot) -> Line:
        """Read ``snap``, compare it with the previous snapshot, and write the full report on
        the first hang."""
        from ..diagnosis.analysis import run_analysis

        t0 = time.perf_counter()
        dumps = load(snap.path, pattern=self.opts.pattern, workers=self.opts.workers, use_cache=self.opts.use_cache)
        a = run_analysis(dumps)
        line, report = judge(snap, a, self.previous if dumps.ranks else None, self.last, self.opts.hosts, t0)
        if dumps.ranks:
            self.previous = a
        if line.state in STOPPED and not self.reported:
            self.reported = True
            line.report = self.write_report(report, snap)
            self.run_on_hang(line.report)
        self.last = line
        return line

    def say(self, line: Line) -> None:
        """The line; after the first hung one, the full report too (unless JSON lines)."""
        if self.opts.json_lines:
            self.out.write(json.dumps(line.to_dict()) + "\n")
        else:
            self.out.write(line.text() + "\n")
            if line.report and self.full_text:
                self.out.write("\n" + self.full_text + "\n\n")
        self.out.flush()

    def write_report(self, report: Report, snap: Snapshot) -> str:
        """The full report as text (and ``.json`` beside it); its path. :meth:`say` prints
        the text after the line, unless JSON lines were asked for."""
        from ..report.text import render_text

        text = render_text(report)
        folder = Path(self.opts.report_dir) if self.opts.report_dir else self.root
        name = f"flightdeck_hang_{snap.name}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{name}.txt"
            path.write_text(text + "\n")
        except OSError:  # a read-only dump folder: a private one instead
            folder = Path(tempfile.mkdtemp(prefix="flightdeck-watch-report-"))
            path = folder / f"{name}.txt"
            path.write_text(text + "\n")
        (folder / f"{name}.json").write_text(json.dumps(report.to_dict()) + "\n")
        self.full_text = text
        return os.fspath(path)

    def run_on_hang(self, path: str) -> None:
        """``--on-hang CMD``: ``{report}`` in CMD becomes the report's path, else it is the
        last argument; FLIGHTDECK_REPORT holds it too. The watch goes on meanwhile."""
        if not self.opts.on_hang:
            return
        cmd = self.opts.on_hang
        quoted = shlex.quote(path)
        cmd = cmd.replace("{report}", quoted) if "{report}" in cmd else f"{cmd} {quoted}"
        try:
            self.on_hang = subprocess.Popen(
                cmd, shell=True, env={**os.environ, "FLIGHTDECK_REPORT": path}
            )  # the user's own command
        except OSError as exc:
            print(f"flightdeck watch: --on-hang failed: {exc}", file=self.err)


def judge(
    snap: Snapshot,
    a: Analysis,
    previous: Analysis | None,
    last: Line | None,
    hosts: HostMap | None = None,
    t0: float | None = None,
) -> tuple[Line, Report]:
    """The line for ``snap`` (analysed as ``a``) against the previous snapshot's analysis and
    line (``None``: the first one), and its report. ``t0``: when reading began
    (``time.perf_counter``), for the line's ``seconds``."""
    from ..api import report_of

    start = time.perf_counter() if t0 is None else t0
    try:
        report = report_of(a, hosts, previous)
    except InputError as exc:  # not comparable: this snapshot starts a new baseline
        report = report_of(a, hosts, None)
        line = line_of(report, snap, None, time.perf_counter() - start)
        line.message = f"not compared with the previous snapshot ({exc})"
    else:
        line = line_of(report, snap, last, time.perf_counter() - start)
    return line, report


def watch(root: str | Path, opts: WatchOptions | None = None) -> int:
    """Watch ``root`` for snapshots; the exit code (1: hung with ``until_hang``, 130: Ctrl-C)."""
    return Watcher(root, opts or WatchOptions()).run()
