"""The floor: the least any pickle-based analyser must spend, i.e. read + unpickle every dump.

Each file is unpickled from an open buffered file (as a tool would, not from
an in-memory copy) by an Unpickler that refuses to resolve classes, which is
the safe way to read untrusted dumps. Nothing is analysed and results are
dropped right away, so the time is pure read + parse cost.

The garbage collector is off while the files are unpickled (``--gc off``, the
default), as torch's fr_trace turns it off while it loads: a dump is millions of
small containers, none of them garbage, and with the collector on every few
hundred allocations start a pass over the young ones (and, as they pile up, over
all of them). Any reader can do the same, so the floor a tool is judged against
is the one without those passes; ``--gc on`` gives the old, slower floor.

Run as a separate process so the benchmark can measure its tree's RSS:
    python -m benchmarks.floor DIR --procs 2 [--gc off|on]
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import pickle
import sys
import time

from benchmarks.synth import FILE_PREFIX


class NoClassUnpickler(pickle.Unpickler):
    """An Unpickler that loads only builtin containers and scalars."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"refusing to load class {module}.{name}")


def load_one(path: str) -> int:
    """Unpickle one dump and return its entry count (the object is dropped)."""
    with open(path, "rb") as f:
        dump = NoClassUnpickler(f).load()
    return len(dump.get("entries", ()))


def dump_files(directory: str) -> list[str]:
    """The per-rank dump files of a set, by name prefix."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.startswith(FILE_PREFIX))


def _collector(on: bool) -> None:
    """Run in each worker as it starts: the collector as the parent has it."""
    if on:
        gc.enable()
    else:
        gc.disable()


def read_all(directory: str, procs: int = 1, collector: bool = False) -> dict:
    """Load every dump of ``directory`` with ``procs`` processes, the garbage collector on or
    off while they unpickle (``collector``); return counts and seconds."""
    files = dump_files(directory)
    t0 = time.perf_counter()
    _collector(collector)
    try:
        if procs <= 1:
            entries = sum(map(load_one, files))
        else:
            with mp.get_context("fork").Pool(procs, initializer=_collector, initargs=(collector,)) as pool:
                entries = sum(pool.imap_unordered(load_one, files, chunksize=8))
    finally:
        gc.enable()
    return {
        "files": len(files),
        "entries": entries,
        "seconds": time.perf_counter() - t0,
        "procs": procs,
        "gc": "on" if collector else "off",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument(
        "--gc",
        choices=("off", "on"),
        default="off",
        help="the garbage collector while unpickling (off, as fr_trace has it; on: the old floor)",
    )
    args = ap.parse_args(argv)
    print(json.dumps(read_all(args.dir, args.procs, collector=args.gc == "on")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
