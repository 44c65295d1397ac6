"""Load every rank's dump: a map over files (see ``mapstep``), then one concatenation.

The map step is :func:`load_one` (file -> per-file Arrow tables or a FileError), run by
an engine over batches; the reduce step is :func:`combine`. Both are plain functions of
their inputs, so the map can run in this process, in local worker processes, or on a
Dask cluster (``dask_engine``; see docs/cluster.md).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from ..ingest.discover import discover
from ..ingest.process_limits import KEPT_FREE_BYTES, may_set_process_limits
from ..ingest.safe_pickle import collector_paused
from ..types import DEFAULT_LIMITS, DumpFile, DumpSet, FileError, FileTables, Limits
from . import cache
from .background import BackgroundImports
from .combine import TablesBuilder, combine_tables, return_freed_memory
from .mapstep import BatchResult, Inline, MapEngine, file_size, load_batch, load_one, plan_batches
from .pool import WorkerPool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["choose_engine", "combine", "combine_results", "load", "load_batch", "load_one", "map_files"]


def _to_pandas(table: pa.Table, keep_table: bool = False) -> pd.DataFrame:
    """Arrow-backed numbers and nullable values; dictionary strings become categoricals.

    The table is freed column by column as it converts, unless ``keep_table`` (another
    thread still reads it)."""
    import pandas as pd  # imported while the workers read (see load), not before the map starts

    return table.to_pandas(
        types_mapper=lambda t: (
            pd.ArrowDtype(t) if not pa.types.is_dictionary(t) and not pa.types.is_string(t) else None
        ),
        self_destruct=not keep_table,
    )


def to_dumpset(tables: dict[str, pa.Table], errors: Sequence[FileError] = (), keep: Collection[str] = ()) -> DumpSet:
    """Arrow tables -> the pandas view the analysis works on; stacks deduplicated across ranks.
    Each table is freed as it converts, but those named in ``keep`` (another thread reads them)."""
    size = sum(t.nbytes for name, t in tables.items() if name not in keep)  # before the conversion frees them
    frames = {
        name: _to_pandas(tables[name], name in keep) for name in ("entries", "stacks", "configs", "status", "files")
    }
    dumps = DumpSet(**frames, file_errors=list(errors))
    if size >= KEPT_FREE_BYTES:
        return_freed_memory()  # the tables' columns, freed as they were converted
    return dumps


def combine(parts: Iterable[FileTables], errors: Sequence[FileError] = ()) -> DumpSet:
    """Reduce step: fold per-file tables into one DumpSet; a generator is read one part at a time."""
    return to_dumpset(combine_tables(parts), errors)


def combine_results(results: Iterable[FileTables | FileError], errors: Sequence[FileError] = ()) -> DumpSet:
    """Reduce the map step's results as any engine returns them (tables and errors mixed)."""
    problems = list(errors)
    builder = TablesBuilder()
    for result in results:
        if isinstance(result, FileError):
            problems.append(result)
        else:
            builder.add(result)
    return to_dumpset(builder.finish(), problems)


def default_workers() -> int:
    """One worker per core the process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class _Progress:
    """A one-line progress bar on stderr, only for a person watching a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled and sys.stderr.isatty()
        self.last = 0.0

    def step(self, count: int = 1) -> None:
        self.done += count
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last > 0.1 or self.done == self.total:
            self.last = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            sys.stderr.write(f"\rloading dumps [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


class PartSink(Protocol):
    """Where :func:`map_files` folds the parts in as they arrive."""

    def add(self, part: FileTables) -> None: ...


def map_files(
    files: Sequence[DumpFile],
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
    builder: PartSink | None = None,
    engine: MapEngine | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[list[FileTables], list[FileError]]:
    """Run the map step over ``files`` with ``engine`` (default: see :func:`choose_engine`).

    Workers read batches of files and send one merged part per batch (see merge_parts).
    With ``builder``, each part is folded into it as it arrives and not returned (see
    TablesBuilder); without, the parts are returned. ``on_progress(done, total)`` hears
    of every batch done; setting ``cancel`` stops the load with LoadCancelled.
    """
    workers = default_workers() if workers is None else workers
    engine = engine or choose_engine(files, workers)
    bar = _Progress(len(files), progress)
    parts: list[FileTables] = []
    errors: list[FileError] = []

    def collect(batch: Sequence[DumpFile], result: BatchResult) -> None:
        part, problems = result
        errors.extend(problems)
        if part is not None:
            if builder is not None:
                builder.add(part)
            else:
                parts.append(part)
        bar.step(len(batch))
        if on_progress is not None:
            on_progress(bar.done, len(files))

    # the collector is paused (where this process may): the folded-in columns are many
    # objects, none in a cycle
    with collector_paused():
        engine.run(plan_batches(files, workers), limits or Limits(), collect, cancel)
    return parts, errors


def choose_engine(files: Sequence[DumpFile], workers: int) -> MapEngine:
    """This thread for a small set in a process that may set its own limits; else worker
    processes (always in a process with other threads: see ``process_limits``). A daemonic
    process may not start children, so it reads in this thread whatever the size."""
    small = workers <= 1 or len(files) < 8 or sum(file_size(f.path) for f in files) < 8 << 20
    if (small and may_set_process_limits()) or multiprocessing.current_process().daemon:
        return Inline()
    return WorkerPool(workers)


FileFilter = Callable[[list[DumpFile]], tuple[list[DumpFile], list[FileError]]]


def load(
    path: str | Path,
    pattern: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
    use_cache: bool = True,
    file_filter: FileFilter | None = None,
    engine: MapEngine | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> DumpSet:
    """Find, read and combine every dump under ``path``.

    With ``use_cache`` an unchanged dump set is reopened from a Parquet cache.
    ``file_filter`` sees the discovered files before any is opened and returns those to
    read plus errors for the rest (the dashboard confines reads to allowed folders).
    ``engine``, ``on_progress`` and ``cancel``: see :func:`map_files`.
    ``meanwhile`` imports what the caller needs next; it runs with pandas' import on a
    thread while worker processes read the files (see ``background``), or after the
    files are read where this thread reads them itself.
    """
    files, discover_errors = _discovered(path, pattern, file_filter)
    key = cache.fingerprint(files, discover_errors, repr(limits or DEFAULT_LIMITS)) if use_cache and files else None
    if key and (writer := _CACHE_WRITERS.pop(key, None)):
        writer.join()  # this process is still writing that set's cache
    imports = BackgroundImports(lambda: _import_pandas_and(meanwhile))
    if key and cache.has_cached(key):
        imports.join()
        if hit := cache.read_cached(key):
            return to_dumpset(*hit)
    engine = engine or choose_engine(files, default_workers() if workers is None else workers)
    if not isinstance(engine, Inline):  # Inline reads in this thread under process-wide limits
        imports.start()
    builder = _AfterImports(TablesBuilder(), imports)
    _, read_errors = map_files(
        files, workers, progress, limits, builder, engine=engine, on_progress=on_progress, cancel=cancel
    )
    errors = [*discover_errors, *read_errors]
    tables = builder.finish()
    return _cached_behind(key, tables, errors) if key else to_dumpset(tables, errors)


def _discovered(
    path: str | Path, pattern: str | None, file_filter: FileFilter | None
) -> tuple[list[DumpFile], list[FileError]]:
    """The dump files under ``path`` that ``file_filter`` lets through, and an error for
    each refused one; an error naming ``path`` where there is none at all."""
    files, errors = discover(path, pattern)
    if file_filter is not None:
        files, refused = file_filter(files)
        errors = [*errors, *refused]
    if not files and not errors:
        reason = (
            "no such file or folder"
            if not os.path.exists(path)
            else "no dump files found (expected names like rank_0, _dump_0, nccl_trace_rank_0)"
        )
        errors = [FileError(os.fspath(path), reason)]
    return list(files), list(errors)


def _cached_behind(key: str, tables: dict[str, pa.Table], errors: Sequence[FileError]) -> DumpSet:
    """The dump set, its cache written on another thread while the analysis runs.

    The interpreter waits for it at exit. The entries are written from the pandas frame's
    own buffers, not from the Arrow table it was made from: kept alive for the writer, that
    table's text codes and the writer's buffers beside the analysis' temporaries raised the
    peak RSS at 4,096 ranks from 1.07 (written first) to 1.33-1.49 GB; written first, the
    run took 1-2 s more."""
    from .from_frame import arrow_view  # imports pandas: by now imported (see background)

    small = [name for name in tables if name != "entries"]
    dumps = to_dumpset(tables, errors, keep=small)
    written = {**{name: tables[name] for name in small}, "entries": arrow_view(dumps.entries)}
    writer = threading.Thread(target=cache.write_cached, args=(key, written, list(errors)), name="flightdeck-cache")
    writer.start()
    _CACHE_WRITERS[key] = writer
    return dumps


def _import_pandas_and(meanwhile: Callable[[], object] | None) -> None:
    import pandas  # noqa: F401 - to_dumpset needs it

    if meanwhile is not None:
        meanwhile()


class _AfterImports:
    """Folds parts into ``builder`` once the background imports are done; until then it
    holds them, so that this process goes on handing out batches (see ``background``)."""

    def __init__(self, builder: TablesBuilder, imports: BackgroundImports) -> None:
        self.builder, self.imports = builder, imports
        self.held: list[FileTables] = []

    def add(self, part: FileTables) -> None:
        self.held.append(part)
        if self.imports.done():
            self._fold_in()

    def finish(self) -> dict[str, pa.Table]:
        self.imports.join()
        self._fold_in()
        return self.builder.finish()

    def _fold_in(self) -> None:
        while self.held:
            self.builder.add(self.held.pop(0))


_CACHE_WRITERS: dict[str, threading.Thread] = {}


def finish_cache_writes() -> None:
    """Wait for the tables caches still being written in the background."""
    while _CACHE_WRITERS:
        _CACHE_WRITERS.pop(next(iter(_CACHE_WRITERS))).join()
