"""Dask clusters on this machine: ``local`` or ``local:N`` as the address of ``--dask``, one
started per load or one per process shared by every load (the dashboard's). Dask is
imported only inside the functions, so the rest of Flight Deck works without it."""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING, Any

from ..types import InputError
from .load import default_workers

if TYPE_CHECKING:
    from distributed import LocalCluster


def parse_local(address: str) -> int | None:
    """Workers of ``local`` (one per core) or ``local:N``; None for a scheduler's address."""
    if address != "local" and not address.startswith("local:"):
        return None
    count = address.partition(":")[2]
    if not count:
        return default_workers()
    if not count.isdigit() or int(count) < 1:
        raise InputError(f"--dask {address}: expected local or local:N with N a positive number of workers")
    return int(count)


def local_cluster_options(workers: int) -> dict[str, Any]:
    """A LocalCluster of ``workers`` single-threaded processes. No dashboard; the
    scheduler's HTTP server (always started) on a free port, not on 8787, which another
    cluster or a user's own dashboard may hold."""
    return {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
        "scheduler_kwargs": {"dashboard_address": ":0"},
    }


_SHARED_CLUSTERS: dict[int, LocalCluster] = {}
_SHARED_LOCK = threading.Lock()


def shared_local_cluster(workers: int) -> LocalCluster:
    """This process's local cluster of ``workers`` workers, started on first use and closed
    at exit: a server that loads many sets starts one cluster, not one per load."""
    from distributed import LocalCluster

    with _SHARED_LOCK:
        cluster = _SHARED_CLUSTERS.get(workers)
        if cluster is None or cluster.status.name in ("closing", "closed", "failed"):
            cluster = LocalCluster(**local_cluster_options(workers))
            _SHARED_CLUSTERS[workers] = cluster
            if len(_SHARED_CLUSTERS) == 1:
                atexit.register(close_shared_clusters)
        return cluster


def close_shared_clusters() -> None:
    with _SHARED_LOCK:
        for cluster in _SHARED_CLUSTERS.values():
            cluster.close()
        _SHARED_CLUSTERS.clear()
