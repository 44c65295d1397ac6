"""Local worker processes for the map step: a dead or stuck worker costs its files, never the load.

Each worker is a process started by ``forkserver`` (a clean, single-threaded server
that has already imported the reader), so it is safe to start from a process with many
threads, and it reads one batch at a time over its own pipe. The parent therefore
always knows which batch a worker holds: when the worker dies (its pipe closes, its
process ends) or overruns the batch's deadline (it is killed), that batch is tried once
more, file by file, each in a fresh worker; a file that fails again becomes a
:class:`FileError` and the load goes on with the rest.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

from ..ingest.process_limits import mark_worker_process, reuse_freed_memory
from ..types import DumpFile, FileError, Limits, LoadCancelled
from .mapstep import BatchResult, Inline, InOrder, OnResult, file_size, load_batch, pack, unpack
from .worker_start import worker_context

Loader = Callable[[Sequence[DumpFile], Limits], BatchResult]

DEADLINE_BASE_S = 60.0
"""Every batch gets this long, whatever its size: a busy machine's scheduling and start-up."""
DEADLINE_BYTES_PER_S = 1 << 20
"""...plus one second per MiB: real dumps read at 50 MiB/s or more, on a loaded machine too."""
WORKER_NAME = "flightdeck-map-worker"
_POLL_S = 0.2
"""How often a wait looks at the cancel flag and the deadlines."""


READY = "ready"
"""A worker's first message: it has started (the main module, if re-imported, is done)."""


class WorkersCannotStart(Exception):
    """No worker of the run got as far as its first message."""


def _serve(conn: Connection, loader: Loader, limits: Limits) -> None:
    """A worker's life: read batches until told to stop or the parent goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: no traceback here
    mark_worker_process()
    reuse_freed_memory()
    conn.send(READY)
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        conn.send(pack(loader(batch, limits)))


@dataclass
class _Task:
    index: int
    files: Sequence[DumpFile]
    deadline_s: float
    retry: bool = False
    position: int = 0
    """Where a retried file stood in its batch, so results keep the batch's order."""


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    task: _Task | None = None
    started: float = 0.0
    ready: bool = False

    def overdue(self, now: float) -> bool:
        return self.task is not None and now - self.started > self.task.deadline_s

    def died(self) -> str:
        """Why the worker is gone, once its end is known (its pipe may close first)."""
        self.process.join(timeout=1.0)
        return f"process died (exit code {self.process.exitcode})"

    def stop(self, kill: bool) -> None:
        if not kill:
            try:
                self.conn.send(None)
            except OSError:
                kill = True
        if kill and self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=None if kill else 2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class WorkerPool:
    """The map step in up to ``workers`` local processes (see the module docstring)."""

    def __init__(
        self,
        workers: int,
        loader: Loader = load_batch,
        deadline_base_s: float = DEADLINE_BASE_S,
        deadline_bytes_per_s: float = DEADLINE_BYTES_PER_S,
    ) -> None:
        self.size = max(1, workers)
        self.loader = loader
        self.deadline_base_s = deadline_base_s
        self.deadline_bytes_per_s = deadline_bytes_per_s

    def deadline_s(self, files: Sequence[DumpFile]) -> float:
        """How long a worker may take over ``files`` before it is taken for stuck."""
        return self.deadline_base_s + sum(file_size(f.path) for f in files) / self.deadline_bytes_per_s

    def run(
        self,
        batches: Sequence[Sequence[DumpFile]],
        limits: Limits,
        on_result: OnResult,
        cancel: threading.Event | None = None,
    ) -> None:
        try:
            _Run(self, limits, InOrder(on_result)).run(batches, cancel)
        except WorkersCannotStart as exc:
            # Nothing was delivered (no worker ever started). The usual cause: a script run
            # as ``python script.py`` that loads at import time, which each worker re-runs
            # as its main module (spawn and forkserver do) and so cannot start.
            warnings.warn(
                f"map-step workers could not start ({exc}); reading in this process instead. "
                'In a script, call the analysis under `if __name__ == "__main__":`.',
                RuntimeWarning,
                stacklevel=2,
            )
            Inline().run(batches, limits, on_result, cancel)


class _Run:
    """One map step on a :class:`WorkerPool`: the queue, the workers, their tasks."""

    def __init__(self, pool: WorkerPool, limits: Limits, order: InOrder[BatchResult]) -> None:
        self.pool, self.limits, self.order = pool, limits, order
        self.queue: deque[_Task] = deque()
        self.workers: list[_Worker] = []
        self.context = worker_context()
        self.any_ready = False

    def run(self, batches: Sequence[Sequence[DumpFile]], cancel: threading.Event | None) -> None:
        for index, files in enumerate(batches):
            self.order.expect(index, len(files))
            self.queue.append(_Task(index, files, self.pool.deadline_s(files)))
        try:
            while self.queue or any(w.task for w in self.workers):
                if cancel is not None and cancel.is_set():
                    raise LoadCancelled("the load was cancelled")
                self.hand_out()
                self.collect()
        except BaseException:
            for worker in self.workers:
                worker.stop(kill=True)
            raise
        for worker in self.workers:
            worker.stop(kill=False)

    def start(self) -> _Worker:
        parent_end, child_end = self.context.Pipe()
        process = self.context.Process(
            target=_serve, args=(child_end, self.pool.loader, self.limits), name=WORKER_NAME, daemon=True
        )
        process.start()
        child_end.close()
        worker = _Worker(process, parent_end)
        self.workers.append(worker)
        return worker

    def hand_out(self) -> None:
        """Give queued tasks to idle workers, starting workers up to the pool's size."""
        while self.queue:
            idle = next((w for w in self.workers if w.task is None), None)
            if idle is None and len(self.workers) >= self.pool.size:
                return
            worker = idle or self.start()
            task = self.queue.popleft()
            try:
                worker.conn.send(task.files)
            except OSError:  # it died while idle: not this task's doing
                self.queue.appendleft(task)
                self.workers.remove(worker)
                worker.stop(kill=True)
                continue
            worker.task, worker.started = task, time.monotonic()

    def collect(self) -> None:
        """Wait a little for results, deaths and deadlines, and deal with each."""
        busy = [w for w in self.workers if w.task is not None]
        now = time.monotonic()
        timeout = min([_POLL_S, *(w.started + w.task.deadline_s - now for w in busy if w.task)])
        ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], max(timeout, 0.0)))
        now = time.monotonic()
        for worker in busy:
            task = worker.task
            assert task is not None
            if worker.conn in ready:
                try:
                    result = worker.conn.recv()
                except (EOFError, OSError):
                    self.lost(worker, worker.died())
                    continue
                if result == READY:
                    # the clock runs from here: starting a process is not reading the files
                    worker.ready = self.any_ready = True
                    worker.started = now
                    continue
                worker.task = None
                self.order.add(task.index, task.files, unpack(result), task.position)
            elif worker.process.sentinel in ready:
                self.lost(worker, worker.died())
            elif worker.overdue(now):
                self.lost(worker, f"took longer than its deadline of {task.deadline_s:.0f} s")

    def lost(self, worker: _Worker, why: str) -> None:
        """The worker is gone with its task: retry the files one by one, or report them."""
        task = worker.task
        assert task is not None
        self.workers.remove(worker)
        worker.stop(kill=True)
        if not worker.ready and not self.any_ready:
            raise WorkersCannotStart(why)
        if task.retry:
            errors = [FileError(f.path, f"its reader {why}, also when retried alone") for f in task.files]
            self.order.add(task.index, task.files, (None, errors), task.position)
            return
        for position, item in enumerate(task.files):
            self.queue.appendleft(
                _Task(task.index, [item], self.pool.deadline_s([item]), retry=True, position=task.position + position)
            )
