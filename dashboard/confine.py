"""Which files the dashboard may read: only those under the configured dump roots.

The path box is typed by whoever can reach the page, so a path is used only when its
real location (``os.path.realpath``: ``..`` collapsed, every symlink followed) lies
under one of the roots. Files found inside an allowed folder are checked the same
way, so a symlink such as ``rank_3 -> /etc/passwd`` is refused instead of read.

A refusal never says whether the path exists and never shows any file contents.
Plain functions (no Streamlit) so they can be tested directly.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence

from analysis.ingest.discover import DumpFile, FileError

#: Shown for a typed path outside every root (the same words whether it exists or not).
PATH_REFUSED = (
    "This path is outside the dump folders this server may read. "
    "Start the dashboard with --dumps-root DIR to allow another folder."
)
#: Per-file reason for a discovered file whose real location is outside every root.
FILE_REFUSED = "not read: it resolves outside the allowed dump folders (a symlink out of the folder?)"


def _real(path: str) -> str | None:
    """``realpath`` of an absolute version of ``path``; None for text no path can hold."""
    if not path or "\0" in path:
        return None
    try:
        return os.path.realpath(os.path.abspath(path))
    except (OSError, ValueError):
        return None


def resolve_roots(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Each root's real location, duplicates dropped, order kept."""
    out: list[str] = []
    for p in paths:
        real = _real(os.fspath(p))
        if real and real not in out:
            out.append(real)
    return tuple(out)


def root_of_dumps(dumps: str) -> str:
    """The folder a ``--dumps`` value allows: the folder itself, or the folder holding the file, glob or prefix."""
    if os.path.isdir(dumps):
        return dumps
    head = dumps
    while glob.has_magic(head):
        head = os.path.dirname(head)
    if os.path.isdir(head) and head != dumps:
        return head
    return os.path.dirname(head) or "."


def is_within(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it (both already real, absolute paths)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # one relative, or different drives
        return False


def confine(path: str, roots: Sequence[str]) -> str | None:
    """The real location of ``path`` when it lies under one of ``roots`` (real paths), else None.

    Globs and file prefixes are resolved as text first (``..`` collapsed, symlinks in the
    existing part followed); the files they match are checked again by :func:`split_files`.
    """
    real = _real(path.strip())
    if real is None:
        return None
    return real if any(is_within(real, root) for root in roots) else None


def split_files(files: Sequence[DumpFile], roots: Sequence[str]) -> tuple[list[DumpFile], list[FileError]]:
    """Files whose real location is under a root, and a per-file error for every other one."""
    ok: list[DumpFile] = []
    refused: list[FileError] = []
    for f in files:
        real = _real(f.path)
        if real is not None and any(is_within(real, root) for root in roots):
            ok.append(DumpFile(real, f.rank))
        else:
            refused.append(FileError(f.path, FILE_REFUSED))
    return ok, refused
