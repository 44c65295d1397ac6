"""The dashboard's own command-line options: ``flightdeck-dashboard [--dumps DIR] ...``
(which hands them to the app after ``--``), or after ``--`` to ``streamlit run``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .confine import resolve_roots, root_of_dumps

_CHECKOUT_SAMPLES = Path(__file__).resolve().parents[1] / "sample_dumps"
_INSTALLED_SAMPLES = Path(__file__).resolve().parent / "sample_dumps"
SAMPLE_ROOT = _CHECKOUT_SAMPLES if _CHECKOUT_SAMPLES.is_dir() else _INSTALLED_SAMPLES
"""The bundled sample dumps: the checkout's folder (an editable install), or the copy a
built package carries inside ``dashboard/``."""

#: Upload limits (MB): per file (also ``server.maxUploadSize`` in .streamlit/config.toml) and per tab.
MAX_UPLOAD_FILE_MB = 256
MAX_UPLOAD_TOTAL_MB = 1024


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
    compare: str | None = None
    """Earlier dumps of the same job to compare ``dumps`` with (``--compare``)."""
    ranks_per_node: int = 0
    """Ranks r // N share a host (``--ranks-per-node``; 0: host names from the file names)."""
    hostfile: str | None = None
    """CSV of ``rank,host`` lines (``--hostfile``)."""
    proxy_ops: str | None = None
    """NCCL proxy-op waits (file or folder) shown beside the dumps (``--proxy-ops``)."""
    dask: str | None = None
    """Read the dumps on this Dask cluster: a scheduler's address or ``local[:N]`` (``--dask``)."""
    watch: str | None = None
    """A folder a running job writes snapshots into, watched live (``--watch``)."""
    watch_every: float = 2.0
    """Seconds between the live mode's polls of the watched folder (``--watch-every``)."""
    watch_settle: float = 1.0
    """Seconds a snapshot's files must stay unchanged before it is read (``--watch-settle``)."""

    def roots(self) -> tuple[str, ...]:
        """Real paths of every folder the path boxes may read: ``--dumps-root``s, the samples,
        ``--dumps``, ``--compare`` and ``--watch``."""
        extra = [root_of_dumps(p) for p in (self.dumps, self.compare) if p]
        if self.watch:
            extra.append(self.watch)  # a folder, perhaps not there yet: itself, never its parent
        return resolve_roots([*self.dumps_roots, self.samples, *extra])


def build_parser(add_help: bool = False) -> argparse.ArgumentParser:
    """The app's own options (``add_help``: with ``--help`` and each option's meaning)."""
    parser = argparse.ArgumentParser(
        prog="flightdeck-dashboard",
        add_help=add_help,
        description="The Flight Deck dashboard. Options with a dot (--server.port 8502) go to Streamlit.",
    )
    add = parser.add_argument
    add("--dumps", default=os.environ.get("FLIGHTDECK_DUMPS"), help="the dumps to open: folder, file, glob or prefix")
    add("--samples", default=os.environ.get("FLIGHTDECK_SAMPLES"), help="folder of sample sets for the sidebar")
    add("--dumps-root", action="append", default=[], help="another folder the path box may read (repeatable)")
    add("--max-upload-mb", type=int, default=MAX_UPLOAD_FILE_MB, help="upload limit per file (MB)")
    add("--max-upload-total-mb", type=int, default=MAX_UPLOAD_TOTAL_MB, help="upload limit per browser tab (MB)")
    add("--compare", default=None, help="earlier dumps of the same job")
    add("--ranks-per-node", type=int, default=0, help="ranks r // N share a host")
    add("--hostfile", default=None, help="CSV of rank,host lines")
    add("--proxy-ops", default=os.environ.get("FLIGHTDECK_PROXY_OPS"), help="NCCL proxy-op waits (file or folder)")
    add(
        "--dask", default=os.environ.get("FLIGHTDECK_DASK"), help="read on a Dask cluster: tcp://host:8786 or local[:N]"
    )
    add("--watch", default=None, help="watch a folder a running job writes snapshots into (live mode)")
    add("--watch-every", type=float, default=2.0, help="seconds between polls of the watched folder")
    add("--watch-settle", type=float, default=1.0, help="seconds a snapshot's files stay unchanged before it is read")
    return parser


def parse_args(argv: Sequence[str]) -> Args:
    """Parse the app's own options; unknown ones are ignored so Streamlit's never clash."""
    ns, _ = build_parser().parse_known_args(list(argv))
    env_roots = [r for r in os.environ.get("FLIGHTDECK_DUMPS_ROOTS", "").split(os.pathsep) if r]
    return Args(
        dumps=ns.dumps or None,
        samples=Path(ns.samples) if ns.samples else SAMPLE_ROOT,
        dumps_roots=tuple(env_roots + ns.dumps_root),
        max_upload_mb=max(1, ns.max_upload_mb),
        max_upload_total_mb=max(1, ns.max_upload_total_mb),
        compare=ns.compare or None,
        ranks_per_node=max(0, ns.ranks_per_node),
        hostfile=ns.hostfile or None,
        proxy_ops=ns.proxy_ops or None,
        dask=ns.dask or None,
        watch=ns.watch or None,
        watch_every=max(0.2, ns.watch_every),
        watch_settle=max(0.0, ns.watch_settle),
    )
