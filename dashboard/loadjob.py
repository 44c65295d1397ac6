"""A dump set's load and analysis in a thread of its own, watched by the page.

Streamlit runs the page script once per click, in a thread per browser session, and a
thousand-rank folder takes a minute to read. So the work runs in a :class:`LoadJob`:
a background thread that counts the files read, keeps its result or its error, and
stops when its cancel event is set. The page only polls the job (a progress bar and a
Cancel button). A :class:`JobRegistry` hands every rerun, and every session, the job
already under way for the same dump set instead of starting another.

No Streamlit here, so the job is tested without a server.
"""

from __future__ import annotations

import atexit
import enum
import logging
import multiprocessing.util  # noqa: F401  (its exit hook is registered first, so ours runs before it)
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from analysis.types import LoadCancelled

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long interpreter exit waits for cancelled jobs to stop their worker processes.
EXIT_JOIN_S = 5.0


class JobState(enum.Enum):
    RUNNING = "running"
    CANCELLING = "cancelling"
    """Cancel was asked; the thread stops at its next check (the map step polls every 0.2 s)."""
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


ENDED = (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True, slots=True)
class Progress:
    """What the job is doing: its stage, and how many files of the current read are done."""

    stage: str
    done: int
    total: int

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        return f"{self.stage} · files read {self.done} / {self.total}" if self.total else f"{self.stage}…"


class LoadJob(Generic[T]):
    """``work(job)`` in a daemon thread; ``work`` reports through :meth:`stage` and
    :meth:`files` and passes :attr:`cancel_event` to the library's load."""

    def __init__(self, key: str, work: Callable[[LoadJob[T]], T]) -> None:
        self.key = key
        self.cancel_event = threading.Event()
        self._work = work
        self._lock = threading.Lock()
        self._progress = Progress("Starting", 0, 0)
        self._ended = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._cancelled = False
        self._started = 0.0
        self._finished: float | None = None
        self._thread = threading.Thread(target=self._run, name=f"flightdeck-load {key[:60]}", daemon=True)

    # --------------------------------------------------------------- for the work

    def stage(self, name: str, reading: bool = False) -> None:
        """A new step begins: a ``reading`` one counts its files from zero, another keeps
        the last count. Raises LoadCancelled when cancelled."""
        self.check()
        with self._lock:
            done, total = (0, 0) if reading else (self._progress.done, self._progress.total)
            self._progress = Progress(name, done, total)

    def files(self, done: int, total: int) -> None:
        """``on_progress`` for the library's load: ``done`` of ``total`` files read."""
        with self._lock:
            self._progress = Progress(self._progress.stage, done, total)

    def check(self) -> None:
        """Raise LoadCancelled when cancel was asked (a checkpoint between steps)."""
        if self.cancel_event.is_set():
            raise LoadCancelled("the load was cancelled")

    # --------------------------------------------------------------- for the page

    def start(self) -> LoadJob[T]:
        self._started = time.monotonic()
        _LIVE.add(self)
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the work to stop (a button's callback: returns at once)."""
        self.cancel_event.set()

    @property
    def state(self) -> JobState:
        if not self._ended.is_set():
            return JobState.CANCELLING if self.cancel_event.is_set() else JobState.RUNNING
        if self._cancelled:
            return JobState.CANCELLED
        return JobState.FAILED if self._error is not None else JobState.DONE

    def progress(self) -> Progress:
        with self._lock:
            return self._progress

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the job ended (at most ``timeout`` seconds); True when it has."""
        return self._ended.wait(timeout)

    @property
    def error(self) -> BaseException | None:
        """What the work raised (None while running, when done or cancelled)."""
        return self._error

    @property
    def seconds(self) -> float:
        """Seconds from start to end (so far, while running)."""
        end = self._finished if self._finished is not None else time.monotonic()
        return end - self._started if self._started else 0.0

    def result(self) -> T:
        """The work's value; raises its error, LoadCancelled, or RuntimeError while it runs."""
        state = self.state
        if state is JobState.DONE:
            return self._result  # type: ignore[return-value]
        if state is JobState.FAILED:
            assert self._error is not None
            raise self._error
        if state is JobState.CANCELLED:
            raise LoadCancelled("the load was cancelled")
        raise RuntimeError(f"the load of {self.key} is still {state.value}")

    def _run(self) -> None:
        try:
            value = self._work(self)
            if self.cancel_event.is_set():  # asked while the last step ran: the caller no longer wants it
                self._cancelled = True
            else:
                self._result = value
        except LoadCancelled:
            self._cancelled = True
        except BaseException as exc:  # kept for the page, which shows it
            log.exception("loading %s failed", self.key)
            self._error = exc
        finally:
            self._finished = time.monotonic()
            log.debug("load of %s ended (%s) after %.2fs", self.key, self.state.value, self.seconds)
            self._ended.set()


class JobRegistry(Generic[T]):
    """One job per key: a running or finished job is handed back, not started again.

    At most ``keep`` ended jobs are kept (the least recently asked for go first);
    running jobs are always kept."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = max(1, keep)
        self._jobs: OrderedDict[str, LoadJob[T]] = OrderedDict()
        self._lock = threading.Lock()

    def job(self, key: str, work: Callable[[LoadJob[T]], T]) -> LoadJob[T]:
        """The job for ``key``, started with ``work`` when there is none."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = self._jobs[key] = LoadJob(key, work).start()
            self._jobs.move_to_end(key)
            ended = [k for k, j in self._jobs.items() if j.wait(0)]
            for stale in ended[: max(0, len(ended) - self.keep)]:
                del self._jobs[stale]
            return job

    def forget(self, key: str) -> None:
        """Drop ``key``'s job (cancelling it if it runs): the next :meth:`job` starts afresh."""
        with self._lock:
            job = self._jobs.pop(key, None)
        if job is not None:
            job.cancel()

    def __len__(self) -> int:
        return len(self._jobs)


_LIVE: weakref.WeakSet[LoadJob] = weakref.WeakSet()


@atexit.register
def _stop_at_exit() -> None:
    """At interpreter exit (the server stopping), cancel running loads so that their
    worker processes are stopped by their own pool, not left to the exit hooks."""
    running = [job for job in list(_LIVE) if not job.wait(0)]
    for job in running:
        job.cancel()
    deadline = time.monotonic() + EXIT_JOIN_S
    for job in running:
        job.wait(max(0.0, deadline - time.monotonic()))
