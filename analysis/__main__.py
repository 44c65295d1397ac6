"""``flightdeck PATH`` and ``python -m analysis PATH``: the command line, set up for speed.

Both run :func:`main`. A worker process started by spawn or forkserver imports the
main module too; nothing here runs on import.
"""

import os
import sys
from typing import NoReturn


def main() -> NoReturn:
    """The command line (``analysis.cli``), after the process-wide settings it reads fastest with."""
    prepare_process()
    from .cli import main as cli_main

    try:
        code = cli_main()
        from .tables.load import finish_cache_writes

        finish_cache_writes()
        sys.stdout.flush()
        sys.stderr.flush()
    except KeyboardInterrupt:  # Ctrl-C: no traceback
        sys.stderr.write("interrupted\n")
        os._exit(130)
    except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        os._exit(0)
    # Everything is written: skip the interpreter's teardown of pandas, pyarrow and numpy
    # (about 0.2 s, a seventh of a 256-rank run).
    os._exit(code)


def prepare_process() -> None:
    """The process-wide settings of the command line; call before numpy or pyarrow is imported."""
    # No linear algebra here: without this, numpy's OpenBLAS starts a thread per core in
    # this process and in the workers' server, and they spin on the cores the workers read
    # on (0.1 s of CPU in a 256-rank run). Set before numpy is imported; inherited by both.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # One allocator for the columns and the buffers they are built from: Arrow's own pool
    # (mimalloc) takes fresh pages, in huge pages, for every combined column while the parts'
    # buffers are freed to glibc's heap; from that heap the memory is reused instead
    # (4,096 ranks: combining the parts 1.6 -> 0.4 s, the run 13.6 -> 11-12 s).
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # The heap is reused (process_limits.reuse_freed_memory); huge pages advised on it gain
    # nothing then and cost clearing 2 MB at each first touch.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    from .tables.worker_start import start_server_early

    start_server_early()  # the workers' server imports the reader while this process does too
    from .ingest.process_limits import reuse_freed_memory

    reuse_freed_memory()  # this process has one thread yet: see process_limits


if __name__ == "__main__":
    main()
