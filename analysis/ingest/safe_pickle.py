"""Load Flight Recorder pickles without ever running code from them.

FR pickles hold only dicts, lists, tuples, strings, numbers, booleans and None.
Every opcode that would import or call something (GLOBAL, STACK_GLOBAL, REDUCE,
BUILD, INST, OBJ, NEWOBJ, EXT*) needs ``find_class`` or a persistent id first, so
refusing those two refuses every code-running path the pickle format has, with one
exception: EXT1/2/4 take a callable from the process-wide ``copyreg`` extension cache
without ``find_class`` once anything registered an extension code and another load
filled the cache. Where a code is registered, a pickle using EXT* is refused outright.

Memory is the other attack: LONG_BINPUT with a huge memo index makes the C unpickler
allocate and zero up to 32 GB before any Python code sees the opcode. Scanning the
opcodes first would cost ten times the load itself, so the load instead runs under an
address-space limit of what the process holds now plus what a dump of that size can
honestly need; past it the allocation fails at once with MemoryError.
"""

from __future__ import annotations

import contextlib
import copyreg
import gc
import io
import os
import pickle
import pickletools
import threading
from collections.abc import Iterator
from typing import IO, Any

from .process_limits import may_set_process_limits

try:
    import resource
except ImportError:  # not on Windows: loads run without the cap
    resource = None  # type: ignore[assignment]

# Plain data unpickles to at most ~20x its pickle size; the floor covers small files.
_BYTES_PER_PICKLE_BYTE = 24
_HEADROOM_FLOOR = 1 << 30
_CAP_LOCK = threading.Lock()  # the limit is process-wide: one capped load at a time


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle asked for a class or callable: it is not a plain FR dump."""


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(f"refused to load {module}.{name}: a dump may hold only plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused a persistent id: a dump may hold only plain data")


class SizeLimitedReader(io.RawIOBase):
    """A read-only stream that raises once more than ``limit`` bytes were read.

    Wrapping a gzip stream in it bounds what a decompression bomb can cost.
    """

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self._left = limit
        self._limit = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        want = min(len(view), self._left + 1)
        data = self._raw.read(want)
        n = len(data)
        if n > self._left:
            raise ValueError(f"content exceeds the size limit of {self._limit} bytes")
        view[:n] = data
        self._left -= n
        return n


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def address_space_cap(extra_bytes: int) -> Iterator[None]:
    """Limit this process's address space to its present size plus ``extra_bytes``.

    Best effort: where the size cannot be read (no /proc) or a tighter limit is already
    set, nothing changes. The previous limit comes back on exit. The limit is per process:
    other threads share it for the milliseconds a load lasts, with ``extra_bytes`` (at
    least 1 GiB) of room, and capped loads take turns. Where other threads share the
    process (a server), nothing changes either (see ``process_limits``): the files are
    read in worker processes there.
    """
    if resource is None or not may_set_process_limits():
        yield
        return
    with _CAP_LOCK:
        current = _address_space()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = None if current is None else current + extra_bytes
        if cap is not None and hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        if cap is None or (soft != resource.RLIM_INFINITY and soft <= cap):
            yield
            return
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def load_plain_pickle(stream: IO[bytes], size_hint: int) -> Any:
    """Unpickle ``stream`` refusing every class; read straight from the file (fast path).

    ``size_hint`` is the pickle's size in bytes (an upper bound will do); it sets the
    memory the load may take (see the module docstring). The cyclic garbage collector
    is paused meanwhile: plain data has no cycles, and collections triggered by the
    millions of new objects would double the cost.
    """
    if copyreg._inverted_registry:  # type: ignore[attr-defined]  # empty unless someone registered
        data = stream.read()
        if any(op.name.startswith("EXT") for op, _, _ in pickletools.genops(data)):
            raise UnsafePickleError("refused an extension code (EXT opcode): a dump may hold only plain data")
        stream = io.BytesIO(data)
    with collector_paused(), address_space_cap(_HEADROOM_FLOOR + _BYTES_PER_PICKLE_BYTE * size_hint):
        return _PlainDataUnpickler(stream).load()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector; plain dump data has no cycles to find.

    A dump is some 100,000 container objects: with the collector running, each young
    collection while they are alive walks them again, which costs as much as the load.
    Where other threads share the process, the collector is left running (see
    ``process_limits``).
    """
    if not may_set_process_limits():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
