"""How map-step workers start: ``forkserver`` where the platform has it, else ``spawn``.

Both are safe from a process with many threads (a fork of such a process can inherit a
lock another thread held). The fork server imports the reader once, so each worker is
a fork of a clean, single-threaded, ready process. This module imports nothing heavy, so
a command line can start the server first thing and let it import while it does too.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context

WORKER_IMPORTS = ["analysis.tables.arrow_without_pandas", "analysis.tables.pool"]
"""What the fork server imports before it forks any worker; first, what keeps pyarrow
from importing pandas (which the reader does not use) in the server and its workers."""


def start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def worker_context() -> multiprocessing.context.BaseContext:
    """The context map-step workers are started from."""
    context = multiprocessing.get_context(start_method())
    if start_method() == "forkserver":
        context.set_forkserver_preload(WORKER_IMPORTS)
    return context


def start_server_early() -> None:
    """Start the fork server now, so that its imports overlap the caller's own."""
    if start_method() != "forkserver" or multiprocessing.current_process().daemon:
        return
    worker_context()
    from multiprocessing import forkserver

    forkserver.ensure_running()
