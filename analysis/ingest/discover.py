"""Find the per-rank dump files of a job and the global rank each one belongs to."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from pathlib import Path

from ..types import DumpFile, FileError

#: File-name prefixes written by PyTorch and by common launchers.
KNOWN_PREFIXES = ("nccl_trace_rank_", "comm_lib_trace_rank_", "_dump_", "rank_")
_SUFFIXES = (".gz", ".json", ".pkl", ".pickle")
_TRAILING_INT = re.compile(r"(\d+)$")


def strip_suffixes(name: str) -> str:
    """``rank_3.json.gz`` -> ``rank_3``: drop compression and format suffixes."""
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
                changed = True
    return name


def rank_from_name(name: str) -> int | None:
    """The global rank is the trailing integer of the file name, suffixes stripped."""
    match = _TRAILING_INT.search(strip_suffixes(name))
    return int(match.group(1)) if match else None


def _has_known_prefix(name: str) -> bool:
    stem = strip_suffixes(name)
    return any(stem.startswith(p) and stem[len(p) :].isdigit() for p in KNOWN_PREFIXES) or bool(
        re.search(r"(?:^|_)(?:rank_|_dump_)\d+$", stem)
    )


def is_dump_name(name: str, pattern: str | None = None) -> bool:
    """Whether a file called ``name`` is read as a dump: it matches ``pattern``, or by default
    one of the known prefixes followed by the rank."""
    return fnmatch.fnmatch(name, pattern) if pattern else _has_known_prefix(name)


def _candidates(path: str, pattern: str | None) -> list[str]:
    if os.path.isdir(path):
        found = []
        for root, dirs, files in os.walk(path, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                ok = fnmatch.fnmatch(name, pattern) if pattern else _has_known_prefix(name)
                if ok:
                    found.append(os.path.join(root, name))
        return found
    if os.path.isfile(path):
        return [path]
    if glob.has_magic(path):
        return sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    # A path prefix such as /dumps/_dump_ : every file in that folder starting with it.
    parent, prefix = os.path.split(path)
    if parent and os.path.isdir(parent) and prefix:
        return sorted(
            os.path.join(parent, n)
            for n in os.listdir(parent)
            if n.startswith(prefix) and os.path.isfile(os.path.join(parent, n))
        )
    return []


def discover(path: str | Path, pattern: str | None = None) -> tuple[list[DumpFile], list[FileError]]:
    """Dump files under ``path`` (folder, file, glob or prefix), one per rank.

    A file whose name carries no rank, or a second file claiming a rank already
    taken, becomes a :class:`FileError` instead of silently replacing data.
    """
    files: list[DumpFile] = []
    errors: list[FileError] = []
    owner: dict[int, str] = {}
    for candidate in _candidates(os.fspath(path), pattern):
        rank = rank_from_name(os.path.basename(candidate))
        if rank is None:
            errors.append(FileError(candidate, "no rank number at the end of the file name"))
            continue
        if rank in owner:
            errors.append(FileError(candidate, f"duplicate rank {rank}: already read from {owner[rank]}"))
            continue
        owner[rank] = candidate
        files.append(DumpFile(candidate, rank))
    files.sort(key=lambda f: f.rank)
    return files, errors
