"""Where dumps come from: bundled sample scenarios, a server folder, or uploaded files.

Plain functions (no Streamlit) so they can be tested directly.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.discover import discover

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_ROOT = REPO_ROOT / "sample_dumps"
DEFAULT_SCENARIO = "large_32_stuck"

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Args:
    """Command-line options given after ``--`` to ``streamlit run dashboard/app.py``."""

    dumps: str | None = None
    """Folder (or file, glob, prefix) holding the per-rank dumps to open."""
    samples: Path = SAMPLE_ROOT
    """Folder whose sub-folders are the sample scenarios offered in the sidebar."""


def parse_args(argv: Sequence[str]) -> Args:
    """Parse the app's own options; unknown ones are ignored so Streamlit's never clash."""
    parser = argparse.ArgumentParser(prog="dashboard/app.py", add_help=False)
    parser.add_argument("--dumps", default=os.environ.get("FLIGHTDECK_DUMPS"))
    parser.add_argument("--samples", default=os.environ.get("FLIGHTDECK_SAMPLES"))
    ns, _ = parser.parse_known_args(list(argv))
    return Args(dumps=ns.dumps or None, samples=Path(ns.samples) if ns.samples else SAMPLE_ROOT)


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
    base = _SAFE_NAME.sub("_", os.path.basename(name.replace("\\", "/"))).strip("._")
    return base or "upload"


def write_uploads(folder: Path, files: Sequence[tuple[str, bytes]]) -> list[str]:
    """Replace the contents of ``folder`` with ``files`` (name, bytes); returns the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.is_file():
            old.unlink()
    written = []
    for name, data in files:
        safe = safe_file_name(name)
        (folder / safe).write_bytes(data)
        written.append(safe)
    return written
