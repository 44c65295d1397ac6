"""Where process-wide settings may change: a worker process, or a process with one thread.

Reading a dump caps the address space (``RLIMIT_AS``) and pauses the cyclic garbage
collector, workers and the command line keep freed memory for reuse (see
:func:`reuse_freed_memory`), and the parent of a pool used to shorten the thread switch
interval. Each of these holds for the whole process: in a server (Streamlit runs a
dozen threads) they would bind threads that never asked for them, so there they are
left alone and the files are read in worker processes instead, which set them for
themselves.
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


M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
"""glibc's ``mallopt`` parameters (malloc.h)."""
KEPT_FREE_BYTES = 256 << 20
"""Free memory at the top of the heap that glibc keeps instead of handing back at once."""


def reuse_freed_memory() -> bool:
    """Let glibc reuse freed blocks instead of unmapping them and faulting fresh pages in.

    By default a block of more than a few MB (a dump file read into memory, a column) is
    mapped on its own and unmapped when freed, so the next one costs a page fault per
    4 KB (or a cleared 2 MB huge page): the analysis allocates and frees hundreds of
    column-sized arrays. Here every block comes from the heap and goes back to it (at 256
    ranks a tenth of the command line's CPU time went to the kernel before; at 4,096
    ranks 11.9 -> 10.8 s, with numpy's huge-page advice off, see ``__main__``). Where
    the loader frees much at once it hands the memory back on purpose
    (``combine.return_freed_memory``). Process-wide, so only where
    :func:`may_set_process_limits`; returns whether it was set (False off glibc too).
    """
    if not may_set_process_limits():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_FREE_BYTES))


def memory_available() -> int:
    """The memory the kernel says is available (free plus reclaimable), or 0 where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
