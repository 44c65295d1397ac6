"""What a request may read: paths under the root only, within the limits.

A path from a request is taken relative to the root (an absolute one must lie under it)
and resolved (``..`` collapsed, every symlink followed) before it is checked, so ``..``,
``/etc/passwd`` or a symlink out of the root get one refusal that shows no contents.
Every dump file found inside an allowed folder is checked the same way before it is
opened: a symlink such as ``rank_3 -> /etc/passwd`` becomes a per-file error, not a read.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..types import DumpFile, FileError, Limits


class Refused(Exception):
    """A request the service will not run; the message names the path and the reason."""


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    """Bounds on one request and on the server."""

    max_files: int = 32_768
    """Files under a requested folder (dump or not): more is refused before any is read."""
    max_bytes: int = 16 << 30
    """Bytes of dump files one set of a request reads (a comparison reads two sets)."""
    max_file_bytes: int = 1 << 30
    """Bytes of one dump file, also after gzip decompression (a per-file error past it)."""
    max_concurrent: int = 2
    """Analyses running at once; further requests wait for a slot."""
    wait_s: float = 600.0
    """How long a request waits for a slot before it is refused as busy."""
    cached_reports: int = 8
    """Reports kept in memory for the next question on the same dumps."""

    def loader_limits(self) -> Limits:
        return Limits(max_file_bytes=self.max_file_bytes)


FILE_OUTSIDE = "not read: it resolves outside the root (a symlink out of it?)"
NOT_A_FILE = "not read: not a regular file (a pipe, a device or a socket)"


class Root:
    """The one folder the service reads under, and the checks every request goes through."""

    def __init__(self, root: str | os.PathLike[str], limits: ServiceLimits | None = None) -> None:
        self.path = os.path.realpath(os.path.abspath(os.fspath(root)))
        if not os.path.isdir(self.path):
            raise Refused(f"--root {os.fspath(root)}: not a folder")
        self.limits = limits or ServiceLimits()

    def within(self, real: str) -> bool:
        """``real`` (a resolved path) is the root or lies below it."""
        return real == self.path or real.startswith(self.path.rstrip(os.sep) + os.sep)

    def resolve(self, path: str) -> str:
        """The real location of a requested folder or file, or :class:`Refused`."""
        if not isinstance(path, str) or not path.strip():
            raise Refused("path: empty; give a folder or file under the root, e.g. '.' for the root itself")
        if "\0" in path:
            raise Refused(f"{path!r}: refused: a path cannot hold a NUL character")
        real = os.path.realpath(os.path.join(self.path, path.strip()))
        if not self.within(real):
            raise Refused(
                f"{path}: refused: it resolves outside the root {self.path} (.., an absolute path or a symlink)"
            )
        if not os.path.exists(real):
            raise Refused(f"{path}: no such file or folder under the root")
        self.count_files(path, real)
        return real

    def count_files(self, shown: str, real: str) -> None:
        """Refuse a folder with more files than ``max_files``, counting no further than that."""
        if not os.path.isdir(real):
            return
        seen, cap = 0, self.limits.max_files
        for _, _, files in os.walk(real, followlinks=False):
            seen += len(files)
            if seen > cap:
                raise Refused(f"{shown}: refused: the folder holds more than {cap} files (limit --max-files)")

    def split_files(self, files: list[DumpFile]) -> tuple[list[DumpFile], list[FileError]]:
        """The files to read (their real location under the root) and an error for every other.

        Refuses the whole request when the files to read add up to more than ``max_bytes``.
        Used as the loader's ``file_filter``: it runs before any file is opened.
        """
        ok: list[DumpFile] = []
        refused: list[FileError] = []
        total = 0
        for f in files:
            try:
                real, st = self._real_file(f.path)
            except OSError as exc:
                refused.append(FileError(f.path, f"not read: {exc.strerror or exc}"))
                continue
            if real is None:
                refused.append(FileError(f.path, FILE_OUTSIDE))
            elif not stat.S_ISREG(st.st_mode):
                refused.append(FileError(f.path, NOT_A_FILE))
            else:
                total += st.st_size
                ok.append(DumpFile(real, f.rank))
        if total > self.limits.max_bytes:
            where = os.path.commonpath([f.path for f in ok]) if len(ok) > 1 else ok[0].path
            raise Refused(
                f"{self.shown(where)}: refused: its dump files hold {total:,} bytes, more than the "
                f"{self.limits.max_bytes:,} one request may read (limit --max-mb)"
            )
        return ok, refused

    def _real_file(self, path: str) -> tuple[str | None, os.stat_result]:
        """The file's real location (None: outside the root) and its status.

        The files come from walking a resolved folder under the root without following
        links, so only the file itself can be a link: resolved only then (``realpath`` on
        every file of a large set costs more than the rest of a cached answer)."""
        st = os.lstat(path)
        if not stat.S_ISLNK(st.st_mode) and os.path.normpath(path) == path and self.within(path):
            return path, st
        real = os.path.realpath(path)
        return (real, os.stat(real)) if self.within(real) else (None, st)

    def shown(self, real: str) -> str:
        """A real path as the client sees it: relative to the root."""
        rel = os.path.relpath(real, self.path)
        return "." if rel == "." else rel
