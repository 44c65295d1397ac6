"""Load Flight Recorder pickles without ever running code from them.

FR pickles hold only dicts, lists, tuples, strings, numbers, booleans and None.
Every opcode that would import or call something (GLOBAL, STACK_GLOBAL, REDUCE,
BUILD, INST, OBJ, NEWOBJ, EXT*) needs ``find_class`` or a persistent id first, so
refusing those two refuses every code-running path the pickle format has, with one
exception: EXT1/2/4 take a callable from the process-wide ``copyreg`` extension cache
without ``find_class`` once anything registered an extension code and another load
filled the cache. Where a code is registered, a pickle using EXT* is refused outright.
"""

from __future__ import annotations

import copyreg
import gc
import io
import pickle
import pickletools
from typing import IO, Any


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


def load_plain_pickle(stream: IO[bytes]) -> Any:
    """Unpickle ``stream`` refusing every class; read straight from the file (fast path).

    The cyclic garbage collector is paused meanwhile: plain data has no cycles, and
    collections triggered by the millions of new objects would double the cost.
    """
    if copyreg._inverted_registry:  # type: ignore[attr-defined]  # empty unless someone registered
        data = stream.read()
        if any(op.name.startswith("EXT") for op, _, _ in pickletools.genops(data)):
            raise UnsafePickleError("refused an extension code (EXT opcode): a dump may hold only plain data")
        stream = io.BytesIO(data)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _PlainDataUnpickler(stream).load()
    finally:
        if was_enabled:
            gc.enable()
