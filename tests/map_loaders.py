"""Map-step loaders that misbehave on purpose, for the worker pool's tests.

Each reads its orders from files beside the dumps (worker processes come from a server
started once, so environment variables set by a test would not reach them): the names
listed in ``kill.txt`` make the worker kill itself, those in ``sleep.txt`` make it sleep
far past any deadline, and ``slow.txt`` holds seconds to wait before every batch.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from analysis.tables.mapstep import BatchResult, load_batch
from analysis.types import DumpFile, Limits


def _listed(items: Sequence[DumpFile], order: str) -> bool:
    for item in items:
        listing = Path(item.path).parent / order
        if listing.exists() and Path(item.path).name in listing.read_text().split():
            return True
    return False


def _pause(items: Sequence[DumpFile]) -> None:
    if items and (slow := Path(items[0].path).parent / "slow.txt").exists():
        time.sleep(float(slow.read_text()))


def misbehaving(items: Sequence[DumpFile], limits: Limits) -> BatchResult:
    """``load_batch``, except where the folder's order files say otherwise."""
    _pause(items)
    if _listed(items, "kill.txt"):
        os.kill(os.getpid(), signal.SIGKILL)
    if _listed(items, "sleep.txt"):
        time.sleep(3600)
    return load_batch(items, limits)
