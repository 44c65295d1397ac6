"""Where the memory of ``python -m analysis DIR --json --quiet`` goes, stage by stage.

Two measurements of one dump set, each on an empty tables cache (a cold run):

- ``tree``: the command itself, its peak RSS summed over its process tree (the poller
  of ``measure``) and its wall time;
- ``stages`` (in this process, with the command's settings and calls): each stage of
  the pipeline is wrapped, and for each the RSS it ends with and its own peak (the kernel's
  high-water mark, reset as the stage starts) are printed, with its time.

    python -m benchmarks.memory_stages /tmp/s4096 [--only tree|stages] [--repeat N]
    python -m benchmarks.memory_stages /tmp/s4096 --only tree --checkout /tmp/before  # a worktree

The parent's RSS is what the stages show; the workers' (the map step) adds to the tree's.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.flightdeck import REPO_ROOT, command
from benchmarks.measure import run_measured

GB = 1 << 30

STAGES = (
    ("analysis.tables.load", "map_files", "read + fold (map step)"),
    ("analysis.tables.combine", "TablesBuilder.finish", "combined tables"),
    ("analysis.tables.load", "to_dumpset", "tables -> pandas"),
    ("analysis.diagnosis.analysis", "build_groups", "groups"),
    ("analysis.diagnosis.analysis", "build_cells", "cells"),
    ("analysis.diagnosis.analysis", "compute_progress", "progress"),
    ("analysis.diagnosis.analysis", "program_families", "families"),
    ("analysis.diagnosis.analysis", "model_mismatches", "mismatches"),
    ("analysis.diagnosis.analysis", "find_imbalances", "imbalances"),
    ("analysis.api", "report_of", "verdict + report"),
    ("analysis.cli", "show", "JSON out"),
)
"""(module, function, label): each is replaced, in its module, by a wrapper that measures it."""


def _status(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` figure of this process, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    """Start the high-water mark again from the current RSS (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _measured(label: str, fn: Callable[..., Any], rows: list[tuple[str, float, int, int]]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if rows:  # the peak since the stage before ended: the code between the two stages
            rows.append((f"  (before {label})", 0.0, _status("VmRSS"), _status("VmHWM")))
        _reset_peak()
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        rows.append((label, time.perf_counter() - start, _status("VmRSS"), _status("VmHWM")))
        _reset_peak()
        return result

    return wrapper


@contextmanager
def _empty_cache() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="fd-memory-stages-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_tree(dump_dir: str, checkout: Path = REPO_ROOT) -> None:
    """The command on an empty cache: peak RSS over its process tree, and its wall time.
    ``checkout``: the source tree whose ``analysis`` runs (another commit's worktree)."""
    with _empty_cache() as cache:
        env = {**os.environ, "FLIGHTDECK_CACHE_DIR": cache, "PYTHONPATH": str(checkout)}
        run = run_measured(command(dump_dir), cwd=str(checkout), env=env)
    print(
        f"tree: peak {run.peak_rss / GB:.2f} GB over the tree, {run.peak_rss_main / GB:.2f} GB the main process, "
        f"{run.processes} processes at most, {run.wall_s:.1f} s, exit {run.rc}"
    )


def run_stages(dump_dir: str) -> None:
    """The command's calls in this process, each stage's end RSS and own peak printed."""
    from analysis.__main__ import prepare_process

    prepare_process()  # the command's allocator settings: they decide how much freed memory stays
    from analysis.cli import main
    from analysis.tables.load import finish_cache_writes

    rows: list[tuple[str, float, int, int]] = []
    for module_name, name, label in STAGES:
        owner: Any = importlib.import_module(module_name)
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, attribute, _measured(label, getattr(owner, attribute), rows))
    with _empty_cache() as cache:
        os.environ["FLIGHTDECK_CACHE_DIR"] = cache
        start = time.perf_counter()
        saved, sys.stdout = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 - the JSON report is not wanted
        try:
            main([dump_dir, "--json", "--quiet"])
            finish_cache_writes()
        finally:
            sys.stdout.close()
            sys.stdout = saved
        total = time.perf_counter() - start
    print(f"{'stage':<26} {'time s':>7} {'RSS after GB':>13} {'stage peak GB':>14}")
    for label, seconds, rss, peak in rows:
        print(f"{label:<26} {seconds:>7.2f} {rss / GB:>13.2f} {peak / GB:>14.2f}")
    print(f"whole command in this process: {total:.1f} s, peak {max(p for *_, p in rows) / GB:.2f} GB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.memory_stages", description=__doc__.split("\n")[0])
    p.add_argument("dump_dir")
    p.add_argument("--only", choices=("tree", "stages"), help="one of the two measurements (default both)")
    p.add_argument(
        "--checkout",
        type=Path,
        default=REPO_ROOT,
        help="with --only tree: the source tree to run (e.g. a git worktree of the commit before)",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs of the tree measurement")
    args = p.parse_args(argv)
    if not Path(args.dump_dir).is_dir():
        p.error(f"no such folder: {args.dump_dir}")
    if args.only != "stages":
        for _ in range(args.repeat):
            run_tree(args.dump_dir, args.checkout.resolve())
    if args.only != "tree":
        run_stages(args.dump_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
