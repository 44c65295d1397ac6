"""Where the entries' columns come from: decoded entry dicts, or the native scanner."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from ..types import DumpFormatError
from .stacks import stack_codes
from .values import by_identity, column, describe, first_bad, int_array, required_column, time_array


class EntryFields(Protocol):
    """Where the entries' columns come from: the decoded entry dicts (:class:`DictFields`)
    or the native scanner (``analysis.native``). Object-valued fields come grouped:
    ``(codes, distinct)``, each entry's value being ``distinct[code]``, equal values
    possibly in several groups; every check then runs once per group."""

    n: int

    def require(self, keys: tuple[str, ...]) -> None:
        """Raise DumpFormatError naming the first entry that lacks one of ``keys``."""

    def ints(self, key: str, nullable: bool) -> pa.Array:
        """An integer field as int64; missing is None (an error unless ``nullable``)."""

    def times(self, key: str) -> pa.Array:
        """A time in ns as int64, null where missing or not positive."""

    def groups(self, key: str, default: Any = None) -> tuple[np.ndarray, list]:
        """An object field, grouped; ``default`` where an entry lacks it."""

    def stacks(self) -> tuple[np.ndarray, list]:
        """The ``frames`` field grouped by stack (missing: None)."""


class DictFields:
    """Fields of the entry dicts a full decode returns."""

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.n = len(entries)

    def require(self, keys: tuple[str, ...]) -> None:
        entries = self.entries
        if set(map(type, entries)) - {dict}:
            i = first_bad(entries, lambda e: type(e) is dict)
            raise DumpFormatError(f"entry {i} is {describe(entries[i])}, expected a dict")
        for key in keys:
            required_column(self.entries, key)

    def ints(self, key: str, nullable: bool) -> pa.Array:
        return int_array(column(self.entries, key), key, nullable)

    def times(self, key: str) -> pa.Array:
        return time_array(column(self.entries, key), key)

    def groups(self, key: str, default: Any = None) -> tuple[np.ndarray, list]:
        return by_identity(column(self.entries, key, default))

    def stacks(self) -> tuple[np.ndarray, list]:
        return stack_codes(column(self.entries, "frames"))
