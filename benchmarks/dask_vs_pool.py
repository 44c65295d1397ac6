"""The map step on local worker processes vs on a Dask cluster of as many workers.

    python -m benchmarks.dask_vs_pool --sizes 4096,16384 --workers 2 --dir /tmp/fd-dask

For each size it makes a synthetic set (``benchmarks.synth``, stuck rank, ``--entries``
per rank; reused while its truth.json matches), reads every file once to warm the page
cache, then times ``analysis.tables.load.load`` (no cache) with

- ``pool``: ``WorkerPool(workers)``, the default engine for large sets;
- ``dask local``: ``DaskEngine("local:<workers>")``, which starts and stops its cluster;
- ``dask running``: ``DaskEngine(address)`` of a LocalCluster started beforehand, as
  with a cluster that is already up (no start-up in the time);

``--rounds`` times each (each engine first in turn) and prints the median seconds, per
1,000 files, and over the pool's (the cluster's overhead). Every engine must give the
same tables; the script checks it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from analysis.tables.dask_engine import DaskEngine
from analysis.tables.dask_local import local_cluster_options
from analysis.tables.load import load
from analysis.tables.mapstep import MapEngine
from analysis.tables.pool import WorkerPool
from analysis.types import DumpSet

from .synth import write_dump_set


def dump_set(folder: Path, ranks: int, entries: int) -> Path:
    """The synthetic set of ``ranks`` ranks under ``folder``, made unless already there."""
    out = folder / f"ranks_{ranks}_e{entries}"
    truth = out / "truth.json"
    if truth.exists() and json.loads(truth.read_text()).get("world_size") == ranks:
        return out
    write_dump_set(out, ranks, entries=entries, culprit=ranks // 3, fault="stuck")
    return out


def warm(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_file():
            path.read_bytes()


def timed(folder: Path, workers: int, engine: MapEngine) -> tuple[float, DumpSet]:
    started = time.perf_counter()
    dumps = load(folder, workers=workers, engine=engine, use_cache=False)
    return time.perf_counter() - started, dumps


def same_tables(a: DumpSet, b: DumpSet) -> bool:
    return all(getattr(a, n).equals(getattr(b, n)) for n in ("entries", "stacks", "configs", "status", "files"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096", help="comma-separated rank counts (default: 4096)")
    parser.add_argument("--entries", type=int, default=200, help="ring buffer entries per rank (default: 200)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of each engine (default: 2)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each engine, in turn (default: 1)")
    parser.add_argument("--dir", default="/tmp/fd-dask", help="where the synthetic sets are made")
    args = parser.parse_args()

    from distributed import LocalCluster

    print(f"{'ranks':>7} {'engine':<13} {'median s':>8} {'s/1k files':>10} {'x pool':>7}  runs (s)")
    for ranks in (int(r) for r in args.sizes.split(",")):
        folder = dump_set(Path(args.dir), ranks, args.entries)
        warm(folder)
        with LocalCluster(**local_cluster_options(args.workers)) as running:
            engines: dict[str, Callable[[], MapEngine]] = {
                "pool": lambda: WorkerPool(args.workers),
                "dask local": lambda: DaskEngine(f"local:{args.workers}"),
                "dask running": lambda: DaskEngine(running.scheduler_address),
            }
            runs: dict[str, list[float]] = {name: [] for name in engines}
            reference: DumpSet | None = None
            for round_ in range(args.rounds):
                names = list(engines)
                for name in names[round_ % 3 :] + names[: round_ % 3]:  # each engine first in turn
                    seconds, dumps = timed(folder, args.workers, engines[name]())
                    assert not dumps.file_errors, dumps.file_errors[:3]
                    if reference is None:
                        reference = dumps
                    else:
                        assert same_tables(dumps, reference), f"{name}: tables differ"
                    runs[name].append(seconds)
                    del dumps
            pool = statistics.median(runs["pool"])
            for name, times in runs.items():
                median = statistics.median(times)
                print(
                    f"{ranks:>7} {name:<13} {median:>8.2f} {1000 * median / ranks:>10.3f} {median / pool:>7.2f}  "
                    + " ".join(f"{t:.1f}" for t in times),
                    flush=True,
                )


if __name__ == "__main__":
    main()
