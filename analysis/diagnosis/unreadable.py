"""Ranks whose dump file is there but could not be read: they lived to write one."""

from __future__ import annotations

import os

from ..ingest.discover import rank_from_name
from ..types import FileError
from .analysis import Analysis


def unreadable_files(a: Analysis) -> dict[int, FileError]:
    """Ranks whose dump file exists but was not read (malformed, refused), by rank."""
    loaded = set(a.dumps.ranks)
    out: dict[int, FileError] = {}
    for e in a.dumps.file_errors:
        rank = rank_from_name(os.path.basename(e.file))
        if rank is None or rank in loaded or rank in out:
            continue
        if os.path.lexists(e.file) and not os.path.isdir(e.file):
            out[rank] = e
    return out
