"""Reports kept in memory, so the next question on the same dumps costs milliseconds.

A report is keyed by the request (what was asked, on which real paths) and by the
fingerprint of the files it reads (names, sizes, modification times), so a changed
set is analyzed again. Requests for the same key while it is being analyzed wait for
that one analysis instead of starting their own; different keys share a bounded number
of analysis slots. Below this, the loader's Parquet cache on disk keeps the tables of an
unchanged set across restarts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from .paths import Refused

T = TypeVar("T")


class Busy(Refused):
    """No analysis slot came free in time."""


class Memo(Generic[T]):
    """An LRU of ``size`` values, each computed once at a time under ``slots`` concurrent computations."""

    def __init__(self, size: int, slots: int, wait_s: float) -> None:
        self.size = max(0, size)
        self.wait_s = wait_s
        self._slots = threading.BoundedSemaphore(max(1, slots))
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, T] = OrderedDict()
        self._running: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], T], what: str) -> tuple[T, bool]:
        """The value for ``key`` and whether it came from memory; ``what`` names it in a refusal."""
        while True:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    self.hits += 1
                    return self._values[key], True
                running = self._running.get(key)
                if running is None:
                    running = self._running[key] = threading.Lock()
                    running.acquire()
                    break
            # Another request is analyzing the same set: wait for it, then read its result.
            if not running.acquire(timeout=self.wait_s):
                raise Busy(f"{what}: busy: the same dumps are still being analyzed; ask again later")
            running.release()  # done: the value is in memory now, or it failed and this request tries itself
        try:
            if not self._slots.acquire(timeout=self.wait_s):
                raise Busy(f"{what}: busy: every analysis slot is taken (limit --max-concurrent); ask again later")
            try:
                value = compute()
            finally:
                self._slots.release()
            with self._lock:
                self.misses += 1
                if self.size:
                    self._values[key] = value
                    while len(self._values) > self.size:
                        self._values.popitem(last=False)
            return value, False
        finally:
            with self._lock:
                self._running.pop(key, None)
            running.release()
