"""Where dumps come from: bundled sample scenarios, a server folder, or uploaded files.

Plain functions (no Streamlit) so they can be tested directly.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.ingest.discover import discover, rank_from_name

from .confine import resolve_roots, root_of_dumps

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_ROOT = REPO_ROOT / "sample_dumps"
DEFAULT_SCENARIO = "large_32_stuck"

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

#: Upload limits (MB): per file (also ``server.maxUploadSize`` in .streamlit/config.toml) and per tab.
MAX_UPLOAD_FILE_MB = 256
MAX_UPLOAD_TOTAL_MB = 1024
MAX_UPLOAD_FILES = 4096
#: Upload folders left behind (a crash, a killed server) are removed at startup after this long.
UPLOAD_MAX_AGE_HOURS = 24.0
UPLOAD_PREFIX = "flightdeck-upload-"


@dataclass(frozen=True, slots=True)
class Args:
    """Command-line options given after ``--`` to ``streamlit run dashboard/app.py``."""

    dumps: str | None = None
    """Folder (or file, glob, prefix) holding the per-rank dumps to open."""
    samples: Path = SAMPLE_ROOT
    """Folder whose sub-folders are the sample scenarios offered in the sidebar."""
    dumps_roots: tuple[str, ...] = field(default_factory=tuple)
    """Extra folders the path box may read (``--dumps-root``, repeatable)."""
    max_upload_mb: int = MAX_UPLOAD_FILE_MB
    max_upload_total_mb: int = MAX_UPLOAD_TOTAL_MB
    proxy_ops: str | None = None
    """NCCL proxy-op waits (file or folder) shown beside the dumps (``--proxy-ops``)."""

    def roots(self) -> tuple[str, ...]:
        """Real paths of every folder the path box may read: ``--dumps-root``s, the samples, ``--dumps``."""
        extra = [root_of_dumps(self.dumps)] if self.dumps else []
        return resolve_roots([*self.dumps_roots, self.samples, *extra])


def parse_args(argv: Sequence[str]) -> Args:
    """Parse the app's own options; unknown ones are ignored so Streamlit's never clash."""
    parser = argparse.ArgumentParser(prog="dashboard/app.py", add_help=False)
    parser.add_argument("--dumps", default=os.environ.get("FLIGHTDECK_DUMPS"))
    parser.add_argument("--samples", default=os.environ.get("FLIGHTDECK_SAMPLES"))
    parser.add_argument("--dumps-root", action="append", default=[])
    parser.add_argument("--max-upload-mb", type=int, default=MAX_UPLOAD_FILE_MB)
    parser.add_argument("--max-upload-total-mb", type=int, default=MAX_UPLOAD_TOTAL_MB)
    parser.add_argument("--proxy-ops", default=os.environ.get("FLIGHTDECK_PROXY_OPS"))
    ns, _ = parser.parse_known_args(list(argv))
    env_roots = [r for r in os.environ.get("FLIGHTDECK_DUMPS_ROOTS", "").split(os.pathsep) if r]
    return Args(
        dumps=ns.dumps or None,
        samples=Path(ns.samples) if ns.samples else SAMPLE_ROOT,
        dumps_roots=tuple(env_roots + ns.dumps_root),
        max_upload_mb=max(1, ns.max_upload_mb),
        max_upload_total_mb=max(1, ns.max_upload_total_mb),
        proxy_ops=ns.proxy_ops or None,
    )


def sample_scenarios(root: Path = SAMPLE_ROOT) -> list[str]:
    """Every sub-folder of ``root`` that holds at least one rank file, sorted by name."""
    if not root.is_dir():
        return []
    found = []
    for sub in sorted(root.iterdir()):
        if sub.is_dir() and discover(sub)[0]:
            found.append(sub.name)
    return found


def default_scenario(scenarios: Sequence[str]) -> str | None:
    """The 32-rank stuck job when bundled, else the first scenario."""
    if DEFAULT_SCENARIO in scenarios:
        return DEFAULT_SCENARIO
    return scenarios[0] if scenarios else None


def fingerprint(path: str) -> str:
    """A short key that changes when any file under ``path`` is added, removed or rewritten.

    Names, sizes and modification times only: the contents are never read, so this
    is cheap enough to recompute on every rerun.
    """
    h = hashlib.sha1(os.path.abspath(path).encode())
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                h.update(f"{os.path.relpath(full, path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    elif os.path.isfile(path):
        st = os.stat(path)
        h.update(f"{st.st_size}\0{st.st_mtime_ns}".encode())
    else:
        h.update(b"missing")
    return h.hexdigest()[:16]


def safe_file_name(name: str) -> str:
    """An uploaded file's base name reduced to harmless characters (no folders, no dots-only)."""
    base = _SAFE_NAME.sub("_", os.path.basename(name.replace("\\", "/"))).strip(".")
    return base or "upload"


def upload_name(name: str) -> str | None:
    """The name an uploaded file is stored under, or None when it is not a dump name.

    Only the base name is kept (no folders), reduced to ``[A-Za-z0-9._-]``, and it must end
    in a rank number (``rank_3``, ``_dump_3.pkl``, ``nccl_trace_rank_3.json.gz``).
    """
    safe = safe_file_name(name)
    if safe == "upload" or len(safe) > 200 or rank_from_name(safe) is None:
        return None
    return safe


@dataclass(frozen=True, slots=True)
class UploadCheck:
    """Which uploaded files will be stored (by index and safe name), and why the others are not."""

    accepted: list[tuple[int, str]]
    refused: list[tuple[str, str]]
    too_big: bool = False


def check_uploads(
    files: Sequence[tuple[str, int]], max_file_mb: int = MAX_UPLOAD_FILE_MB, max_total_mb: int = MAX_UPLOAD_TOTAL_MB
) -> UploadCheck:
    """Vet uploaded (name, size) pairs: names, duplicates, per-file and total size, count."""
    accepted: list[tuple[int, str]] = []
    refused: list[tuple[str, str]] = []
    seen: set[str] = set()
    total = 0
    for i, (name, size) in enumerate(files):
        safe = upload_name(name)
        if safe is None:
            refused.append((name, "not a dump file name (expected rank_0, _dump_0, nccl_trace_rank_0, ...)"))
        elif safe in seen:
            refused.append((name, f"a second file named {safe}"))
        elif size > max_file_mb << 20:
            refused.append((name, f"larger than {max_file_mb} MB"))
        else:
            seen.add(safe)
            accepted.append((i, safe))
            total += size
    if total > max_total_mb << 20 or len(accepted) > MAX_UPLOAD_FILES:
        return UploadCheck([], refused, too_big=True)
    return UploadCheck(accepted, refused)


def write_uploads(folder: Path, files: Sequence[tuple[str, bytes]]) -> list[str]:
    """Replace the contents of ``folder`` with ``files`` (safe name, bytes); returns the names written.

    Files are created fresh (never through an existing name or symlink), readable by
    this user only, and never executable.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file() or old.is_symlink():
            old.unlink()
    written = []
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for name, data in files:
        safe = safe_file_name(name)
        fd = os.open(folder / safe, flags, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        written.append(safe)
    return written


class UploadFolder:
    """A private folder (mode 0700) for one browser tab's uploads, removed with this object.

    Kept in ``st.session_state``: when Streamlit drops a closed tab's session the object is
    collected and the folder deleted (also at interpreter exit). Folders that outlive a
    crash are removed by :func:`sweep_stale_uploads` when the next server starts.
    """

    def __init__(self, parent: str | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=UPLOAD_PREFIX, dir=parent)
        os.chmod(self.path, 0o700)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def remove(self) -> None:
        self._finalizer()

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and os.path.isdir(self.path)


def sweep_stale_uploads(
    parent: str | None = None, max_age_hours: float = UPLOAD_MAX_AGE_HOURS, now: float | None = None
) -> list[str]:
    """Remove this user's upload folders older than ``max_age_hours``; returns those removed."""
    parent = parent or tempfile.gettempdir()
    now = time.time() if now is None else now
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(UPLOAD_PREFIX):
            continue
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < max_age_hours * 3600:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
