"""The floor: the least any pickle-based analyser must spend, i.e. read + unpickle every dump.

Each file is unpickled from an open buffered file (as a tool would, not from
an in-memory copy) by an Unpickler that refuses to resolve classes, which is
the safe way to read untrusted dumps. Nothing is analysed and results are
dropped right away, so the time is pure read + parse cost.

Run as a separate process so the benchmark can measure its tree's RSS:
    python -m benchmarks.floor DIR --procs 2
"""

from __future__ import annotations

import argparse
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


def read_all(directory: str, procs: int = 1) -> dict:
    """Load every dump of ``directory`` with ``procs`` processes; return counts and seconds."""
    files = dump_files(directory)
    t0 = time.perf_counter()
    if procs <= 1:
        entries = sum(map(load_one, files))
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            entries = sum(pool.imap_unordered(load_one, files, chunksize=8))
    return {
        "files": len(files),
        "entries": entries,
        "seconds": time.perf_counter() - t0,
        "procs": procs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--procs", type=int, default=1)
    args = ap.parse_args(argv)
    print(json.dumps(read_all(args.dir, args.procs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
