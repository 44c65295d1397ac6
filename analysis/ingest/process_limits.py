"""Where process-wide settings may change: a worker process, or a process with one thread.

Reading a dump caps the address space (``RLIMIT_AS``) and pauses the cyclic garbage
collector, workers and the command line keep freed memory for reuse (see
:func:`reuse_freed_memory`), and the parent of a pool used to shorten the thread switch
interval. Each of
these holds for the whole process: in a server (Streamlit runs a dozen threads) they would
bind threads that never asked for them, so there they are left alone and the files are
read in worker processes instead, which set them for themselves.
"""

from __future__ import annotations

import ctypes
import threading

_worker_process = False


def mark_worker_process() -> None:
    """This process exists to read dumps (a map-step worker): its settings are its own."""
    global _worker_process
    _worker_process = True


def may_set_process_limits() -> bool:
    """True in a map-step worker, or where this thread is the process's only thread."""
    return _worker_process or threading.active_count() == 1


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameters (malloc.h)."""
REUSED_BLOCK_BYTES = 32 << 20
"""Blocks up to this size come from the heap and go back to it (glibc's largest mmap threshold)."""
KEPT_FREE_BYTES = 256 << 20
"""Free memory at the top of the heap that glibc keeps instead of handing back at once."""


def reuse_freed_memory() -> bool:
    """Let glibc reuse freed blocks instead of unmapping them and faulting fresh pages in.

    By default a block of a few MB (a dump file read into memory, a column of a few
    hundred ranks) is mapped on its own and unmapped when freed, so the next one costs a
    page fault per 4 KB: at 256 ranks about a tenth of the command line's CPU time went
    to the kernel that way. Where the loader frees much at once it still hands the memory
    back on purpose (``combine.return_freed_memory``). Process-wide, so only where
    :func:`may_set_process_limits`; returns whether it was set (False off glibc too).
    """
    if not may_set_process_limits():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, REUSED_BLOCK_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_FREE_BYTES))
