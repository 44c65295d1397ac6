"""The native scanner's side of reading a dump: a pickle file to columns, or None.

``analysis.ingest._frscan`` (C, built by ``scripts/setup.sh``) reads a Flight Recorder pickle
without making a Python object per entry: integer fields come back as int64 arrays and
other fields grouped, one object per distinct value. It accepts only well-formed plain
dumps and returns None for anything else (or is not built at all), and the caller then
takes the full path, which gives the same tables or the exact error. So this module
only ever makes good dumps faster; it never judges one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .. import schema as s
from ..types import DumpFormatError, Limits
from .fields import DictFields, EntryFields
from .values import positive_times

try:
    from . import _frscan
except ImportError:  # not built: every file takes the full path
    _frscan = None

_INT_FIELDS = ("record_id", s.PG_ID, s.SEQ, s.P2P_SEQ, "time_created_ns")
_GROUP_FIELDS = (
    "process_group",
    "profiling_name",
    "state",
    "retired",
    "is_p2p",
    "input_sizes",
    "output_sizes",
    "input_dtypes",
)
_SPEC = (
    *((key, "int") for key in _INT_FIELDS),
    *((key, "group") for key in _GROUP_FIELDS),
    ("frames", "stack"),
)
_ABSENT, _INT, _NONE = 0, 1, 2


def available() -> bool:
    """Whether the native scanner was built for this interpreter."""
    return _frscan is not None


class ScannedFields:
    """EntryFields over the scanner's columns (see ``parse.EntryFields``)."""

    def __init__(self, n: int, columns: dict[str, tuple[bytes, Any]]) -> None:
        self.n = n
        self._columns = columns

    def require(self, keys: tuple[str, ...]) -> None:
        for key in keys:  # in order, as the full path checks them
            absent = self._state(key) == _ABSENT if key in _INT_FIELDS else self._codes(key) < 0
            if absent.any():
                raise DumpFormatError(f"entry {int(np.argmax(absent))} has no '{key}'")

    def _state(self, key: str) -> np.ndarray:
        return np.frombuffer(self._columns[key][1], np.uint8)

    def _codes(self, key: str) -> np.ndarray:
        return np.frombuffer(self._columns[key][0], np.int32)

    def ints(self, key: str, nullable: bool) -> pa.Array:
        missing = self._state(key) != _INT
        if missing.any() and not nullable:
            raise DumpFormatError(f"entry {int(np.argmax(missing))} '{key}' is missing or None, expected an integer")
        return pa.array(
            np.frombuffer(self._columns[key][0], np.int64), mask=missing if missing.any() else None, type=pa.int64()
        )

    def times(self, key: str) -> pa.Array:
        return positive_times(self.ints(key, nullable=True))

    def groups(self, key: str, default: Any = None) -> tuple[np.ndarray, list]:
        codes, distinct = self._codes(key), self._columns[key][1]
        absent = codes < 0
        if absent.any():
            codes = np.where(absent, len(distinct), codes).astype(np.int32)
            distinct = [*distinct, default]
        return codes, distinct

    def stacks(self) -> tuple[np.ndarray, list]:
        return self.groups("frames")


def scan(data: bytes, limits: Limits) -> tuple[dict, EntryFields] | None:
    """(top-level dict with an empty placeholder for "entries", the entries' fields) of
    a pickle's bytes, or None: not built, or anything the scanner is unsure of."""
    if _frscan is None or data[:1] != b"\x80":
        return None
    scanned = _frscan.scan(data, _SPEC, limits.max_entries)
    if scanned is None:
        return None
    top, has_entries, n, columns = scanned
    if not has_entries:
        return top, DictFields([])
    top["entries"] = []
    return top, ScannedFields(n, columns)
