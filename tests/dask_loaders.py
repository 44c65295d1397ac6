"""Map-step loaders that misbehave on purpose, for the Dask tests.

Workers and the scheduler load this file with ``--preload`` (Dask's own way to give them
code of one's own), as module ``dask_loaders``; no ``PYTHONPATH`` anywhere. It imports only
the standard library and the installed package.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from analysis.tables.mapstep import BatchResult, load_batch
from analysis.types import DumpFile, Limits


def slow_loader(batch: Sequence[DumpFile], limits: Limits) -> BatchResult:
    """The real map step, half a second slower per batch: a worker can be killed mid-run."""
    time.sleep(0.5)
    return load_batch(batch, limits)


def failing_loader(batch: Sequence[DumpFile], limits: Limits) -> BatchResult:
    """The real map step, except that the batch holding rank 3 fails on every try."""
    if any(f.rank == 3 for f in batch):
        raise RuntimeError("rank 3's batch always fails")
    return load_batch(batch, limits)


def stuck_loader(batch: Sequence[DumpFile], limits: Limits) -> BatchResult:
    """The real map step, except that the batch holding rank 5 never finishes."""
    if any(f.rank == 5 for f in batch):
        time.sleep(3600)
    return load_batch(batch, limits)


def map_seconds(dask_scheduler: object) -> float:
    """On the scheduler (``client.run_on_scheduler``): seconds Flight Deck's map tasks ran."""
    prefixes = dask_scheduler.task_prefixes  # type: ignore[attr-defined]
    return sum(sum(p.all_durations.values()) for name, p in prefixes.items() if str(name).startswith("flightdeck"))
