"""Reopen an unchanged dump set from Parquet instead of unpickling it again.

The key is every dump file's name, size and modification time (plus the loader's
version), so any change to any file invalidates the cache. Files live under
``$FLIGHTDECK_CACHE_DIR`` (default ``~/.cache/flightdeck``), one folder per dump set.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from ..types import DumpFile, FileError

CACHE_FORMAT = "flightdeck-tables/7"  # 4: entries keep output_sizes; 5: the files table holds the node health checks; 6: entries without entry_index; 7: the rank int16 where it fits
TABLES = ("entries", "stacks", "configs", "status", "files")
KEEP_SETS = 16


def cache_root() -> Path:
    env = os.environ.get("FLIGHTDECK_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flightdeck"


_PACKAGE = Path(__file__).resolve().parents[1]
LOADER_CODE = ("ingest", "tables", "types.py", "schema.py", "opnames.py")
"""What the cached tables depend on: the readers, the reduce and the types they build.
Every source file below these is part of the key, so no module can be left out."""


@functools.cache
def loader_version() -> str:
    """A digest of the loading code itself: a new parser never reuses an old parser's tables."""
    h = hashlib.sha256()
    for path in loader_sources():
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def loader_sources() -> list[Path]:
    """Every source file of the loader (Python and C), in a stable order."""
    found: list[Path] = []
    for name in LOADER_CODE:
        root = _PACKAGE / name
        found += [root] if root.is_file() else [p for p in root.rglob("*") if p.suffix in (".py", ".c")]
    return sorted(found)


def fingerprint(files: Sequence[DumpFile], errors: Sequence[FileError], extra: str = "") -> str:
    """A digest of every file's path, rank, size and mtime: equal only for an unchanged set."""
    h = hashlib.sha256(f"{CACHE_FORMAT}\n{loader_version()}\n{extra}\n".encode())
    for f in files:
        try:
            st = os.stat(f.path)
            h.update(f"{os.path.abspath(f.path)}\0{f.rank}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{f.path}\0missing\n".encode())
    for e in errors:
        h.update(f"error\0{e.file}\0{e.error}\n".encode())
    return h.hexdigest()


def has_cached(key: str) -> bool:
    """Whether tables for ``key`` were stored (they may still turn out unreadable)."""
    return (cache_root() / key[:32] / "manifest.json").is_file()


def read_cached(key: str) -> tuple[dict[str, pa.Table], list[FileError]] | None:
    """The cached tables for ``key``, or None when there are none (or they are unreadable)."""
    import pyarrow.parquet as pq  # imported where used: a cold run needs it only after the map step

    folder = cache_root() / key[:32]
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest.get("key") != key or manifest.get("format") != CACHE_FORMAT:
            return None
        tables = {name: pq.read_table(folder / f"{name}.parquet") for name in TABLES}
        errors = [FileError(e["file"], e["error"]) for e in manifest.get("file_errors", [])]
        return tables, errors
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        return None


def write_cached(key: str, tables: dict[str, pa.Table], errors: Sequence[FileError]) -> None:
    """Store the tables; failures (read-only home, full disk) only cost the next open its speed."""
    import pyarrow.parquet as pq  # imported where used: a cold run needs it only after the map step

    root = cache_root()
    folder = root / key[:32]
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)  # dumps hold paths and call stacks
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        for name in TABLES:
            # big row groups, no statistics: the cache is only ever read whole (4,096 ranks: read 1.4 s -> 0.6 s)
            pq.write_table(
                tables[name], tmp / f"{name}.parquet", compression="lz4", row_group_size=1 << 22, write_statistics=False
            )
        manifest = {
            "key": key,
            "format": CACHE_FORMAT,
            "file_errors": [{"file": e.file, "error": e.error} for e in errors],
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest))
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        _prune(root)
    except (OSError, pa.ArrowException):
        shutil.rmtree(locals().get("tmp", folder / "_none"), ignore_errors=True)


def _prune(root: Path) -> None:
    """Keep the most recently written dump sets only."""
    sets = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")), key=os.path.getmtime)
    for old in sets[:-KEEP_SETS]:
        shutil.rmtree(old, ignore_errors=True)
