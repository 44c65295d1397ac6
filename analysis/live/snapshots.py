"""Which snapshots of a running job are complete: every rank's file there and no longer growing.

Two layouts are watched (see docs/live.md for what torch writes where):

- one subfolder per snapshot (``dump_every``, or any script that dumps into a new folder
  each time): a folder is a snapshot once every expected rank's file is present and no
  file has changed for ``settle`` seconds; after ``wait_missing`` seconds without a change
  it is taken as it is, the ranks still missing named;
- the dump files directly in the folder, rewritten in place at each dump (the dump pipe,
  ``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``, and the watchdog write ``<prefix><rank>`` again
  each time): a new generation is complete once every rank's file was rewritten and is
  stable; it is copied aside (the next dump overwrites it) and read from the copy.

A file is stable when its size and modification time did not change between polls
``settle`` seconds apart. The expected ranks are ``0 .. world-1``: ``world`` as given, or
one more than the highest rank any snapshot has shown.

``one_look`` is for a caller with no history of polls (the servers' ``watch_status``): the
files' modification times stand in for the polls that would have seen them unchanged, by
the same rules, and nothing is copied: a generation written in place is read in place.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..ingest.discover import discover, is_dump_name, rank_from_name
from ..types import DumpFile, FileError

#: The debug server's periodic dumps (``torch.distributed.debug.start_debug_server(dump_dir=...)``):
#: ``fr_trace_<YYYYmmdd_HHMMSS>.txt``, fr_trace's tables for all ranks, not per-rank dumps.
DEBUG_SERVER_TEXT = re.compile(r"^(fr_trace|fr_trace_nccl|torchcomms_fr_trace)_\d{8}_\d{6}\.txt$")
_NUMBERS = re.compile(r"(\d+)")

Signature = tuple[tuple[int, int, int], ...]
"""Per file: (rank, size, mtime_ns)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A complete snapshot: the folder to read, the ranks it holds and the ranks it lacks."""

    name: str
    path: Path
    ranks: tuple[int, ...]
    missing: tuple[int, ...]
    """Expected ranks with no file when the snapshot was taken (after ``wait_missing``)."""
    waited_s: float
    """From first sight of the snapshot to its being complete."""


@dataclass(slots=True)
class _Pending:
    signature: Signature
    first_seen: float
    changed_at: float
    ranks: tuple[int, ...] = ()


def _newest(sig: Signature) -> float:
    """The newest modification time among the files, in seconds (``time.time``'s clock)."""
    return max(m for _, _, m in sig) / 1e9


def _natural(name: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in _NUMBERS.split(name)]


def _signature(folder: Path, pattern: str | None, recursive: bool = True) -> Signature:
    files, _ = discover(folder, pattern) if recursive else _flat_files(folder, pattern)
    sig = []
    for f in files:
        try:
            st = os.stat(f.path)
        except OSError:
            continue  # renamed or removed between listing and stat: seen at the next poll
        sig.append((f.rank, st.st_size, st.st_mtime_ns))
    return tuple(sig)


def _flat_files(folder: Path, pattern: str | None) -> tuple[list[DumpFile], list[FileError]]:
    """The dump files directly in ``folder`` (not in its subfolders), one per rank."""
    files: dict[int, DumpFile] = {}
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
    except OSError:
        return [], []
    for name in names:
        rank = rank_from_name(name) if is_dump_name(name, pattern) else None
        if rank is not None and rank not in files:
            files[rank] = DumpFile(os.path.join(folder, name), rank)
    return sorted(files.values(), key=lambda f: f.rank), []


@dataclass
class SnapshotFinder:
    """Polls ``root`` and returns each complete snapshot once, oldest first (see the module)."""

    root: Path
    world: int | None = None
    settle: float = 1.0
    wait_missing: float = 10.0
    pattern: str | None = None
    skip_existing: bool = True
    """Snapshot folders already complete at the first poll are passed over, except the newest
    (the baseline the next one is compared with)."""
    clock: Callable[[], float] = time.monotonic
    one_look: bool = False
    """No history of polls: a file's modification time stands in for the polls that would have
    seen it unchanged (the clock is then ``time.time``), and a generation written in place is
    read in place, not copied (see the module)."""
    notes: list[str] = field(default_factory=list)
    """Things worth one line to the user (written once each)."""
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _done: set[str] = field(default_factory=set)
    _last: list[object] | None = None
    """The sort key of the newest folder returned: an older one appearing later is passed over."""
    _highest: int = -1
    _first: bool = True
    _flat_taken: dict[int, tuple[int, int]] = field(default_factory=dict)
    _flat_generation: int = 0
    _copies: Path | None = None
    _noted: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if self.one_look and self.clock is time.monotonic:
            self.clock = time.time

    def expected(self) -> tuple[int, ...]:
        """The ranks every snapshot should hold."""
        return tuple(range(self.world if self.world is not None else self._highest + 1))

    def waiting(self) -> dict[str, tuple[int, ...]]:
        """Snapshots seen but not complete yet, and the expected ranks each still lacks."""
        want = set(self.expected())
        return {name: tuple(sorted(want - set(p.ranks))) for name, p in self._pending.items()}

    def poll(self) -> list[Snapshot]:
        """The snapshots completed since the last poll, oldest first."""
        now = self.clock()
        if not self.root.is_dir():
            self._note("missing", f"{self.root} is not a folder (yet): waiting for it")
            return []
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: _natural(e.name))
        except OSError:
            return []
        folders, text_dumps = [], False
        for e in entries:
            if e.name.startswith("."):
                continue
            if e.is_dir(follow_symlinks=False):
                folders.append(e.name)
            elif DEBUG_SERVER_TEXT.match(e.name):
                text_dumps = True
        if text_dumps:
            self._note(
                "debug_server",
                f"{self.root} holds the debug server's fr_trace_<time>.txt files: they are fr_trace's tables "
                "of all ranks, not per-rank dumps, and cannot be analysed; dump per rank with "
                "analysis.live.dump_every(folder, seconds) instead",
            )
        if self._first:
            self._first = False
            if self.skip_existing:
                self._done.update(folders[:-1])
        found = self._in_order(folders, now)
        if self.one_look and (found or self._pending):
            return found  # read in place, a generation of the files in root would take its subfolders' too
        return found + self._check_flat(now)

    def _in_order(self, folders: list[str], now: float) -> list[Snapshot]:
        """Complete folders, oldest first, never one older than a folder already returned. Once
        a newer folder is complete, the job has moved on: an older one still short of ranks
        is taken as soon as it is stable, its missing ranks named."""
        last = self._last
        live = [n for n in folders if n not in self._done and (last is None or _natural(n) > last)]
        for name in live:
            self._update(name, now)
        complete = [name for name in live if self._is_complete(name, now, force=False)]
        newest = live.index(complete[-1]) if complete else -1
        found = []
        for i, name in enumerate(live):
            if name not in self._pending:
                continue
            if not self._is_complete(name, now, force=i < newest):
                break  # the older one first
            p = self._pending.pop(name)
            self._done.add(name)
            self._done.update(live[:i])  # empty folders passed over
            found.append(Snapshot(name, self.root / name, p.ranks, self._missing(p), now - p.first_seen))
            self._last = _natural(name)
        return found

    def _missing(self, p: _Pending) -> tuple[int, ...]:
        have = set(p.ranks)
        return tuple(r for r in self.expected() if r not in have)

    def _note(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(text)

    def _update(self, name: str, now: float) -> None:
        sig = _signature(self.root / name, self.pattern)
        if not sig:
            return  # not a snapshot, or not yet one
        ranks = tuple(sorted({r for r, _, _ in sig}))
        self._highest = max(self._highest, ranks[-1])
        p = self._pending.get(name)
        if p is None:
            seen = _newest(sig) if self.one_look else now
            self._pending[name] = _Pending(sig, seen, seen, ranks)
        elif sig != p.signature:
            p.signature, p.changed_at, p.ranks = sig, now, ranks

    def _is_complete(self, name: str, now: float, force: bool) -> bool:
        """Stable for ``settle`` seconds, and every expected rank there, or ``wait_missing``
        seconds without a change, or ``force`` (a newer snapshot is complete)."""
        p = self._pending.get(name)
        if p is None or now - p.changed_at < self.settle or now == p.first_seen:
            return False
        return force or not self._missing(p) or now - p.changed_at >= self.wait_missing

    def _check_flat(self, now: float) -> list[Snapshot]:
        """The in-place layout: the files directly in ``root`` that were rewritten since the
        last generation taken, once they are stable, as a copy of that generation."""
        sig = _signature(self.root, self.pattern, recursive=False)
        fresh = tuple(t for t in sig if self._flat_taken.get(t[0]) != (t[1], t[2]))
        if not fresh:
            return []
        for r, _, _ in sig:
            self._highest = max(self._highest, r)
        key = "."  # the root's own generation
        ranks = tuple(sorted(r for r, _, _ in fresh))
        p = self._pending.get(key)
        if p is None and self.one_look:
            p = self._pending[key] = _Pending(fresh, _newest(fresh), _newest(fresh), ranks)
        elif p is None:
            self._pending[key] = _Pending(fresh, now, now, ranks)
            return []
        elif fresh != p.signature:
            p.signature, p.changed_at, p.ranks = fresh, now, ranks
            return []
        if not self._is_complete(key, now, force=False):
            return []
        del self._pending[key]
        self._flat_generation += 1
        name = f"generation-{self._flat_generation:05d}"
        copy = self.root if self.one_look else self._copy_generation(name, set(ranks))
        for r, size, mtime in fresh:
            self._flat_taken[r] = (size, mtime)
        return [Snapshot(name, copy, ranks, self._missing(p), now - p.first_seen)]

    def _copy_generation(self, name: str, ranks: set[int]) -> Path:
        """The generation's files copied aside (the next dump rewrites them); older copies but
        the previous one are removed."""
        if self._copies is None:
            self._copies = Path(tempfile.mkdtemp(prefix="flightdeck-watch-"))
        target = self._copies / name
        target.mkdir()
        files, _ = _flat_files(self.root, self.pattern)
        for f in files:
            if f.rank in ranks:
                shutil.copy2(f.path, target / os.path.basename(f.path))
        for old in sorted(self._copies.iterdir(), key=lambda p: _natural(p.name))[:-2]:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def close(self) -> None:
        """Remove the copies of in-place generations, if any were made."""
        if self._copies is not None:
            shutil.rmtree(self._copies, ignore_errors=True)
            self._copies = None
