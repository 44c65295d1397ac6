"""Where process-wide settings may change: a worker process, or a process with one thread.

Reading a dump caps the address space (``RLIMIT_AS``) and pauses the cyclic garbage
collector, and the parent of a pool used to shorten the thread switch interval. Each of
these holds for the whole process: in a server (Streamlit runs a dozen threads) they would
bind threads that never asked for them, so there they are left alone and the files are
read in worker processes instead, which set them for themselves.
"""

from __future__ import annotations

import threading

_worker_process = False


def mark_worker_process() -> None:
    """This process exists to read dumps (a map-step worker): its settings are its own."""
    global _worker_process
    _worker_process = True


def may_set_process_limits() -> bool:
    """True in a map-step worker, or where this thread is the process's only thread."""
    return _worker_process or threading.active_count() == 1
