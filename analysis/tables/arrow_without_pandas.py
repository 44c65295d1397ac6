"""Imported first by the fork server: its workers' pyarrow runs without pandas.

pyarrow imports pandas at a process's first conversion (its pandas shim asks whether the
value is a pandas object), although the reader never hands it one: in the fork server
that was 0.3 s of a 0.5 s start, paid before the first worker could read. This module
makes that first conversion while pandas cannot be found, so pyarrow in the server, and
in every worker forked from it, takes pandas for absent and converts as it would
without it. pandas stays importable: whatever does need it (pyarrow's own pandas
conversions ask again) imports it then. A pyarrow that asked every time would import it
at the reader's first conversion, as before: slower, never different.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import pyarrow as pa


class _NoPandas:
    """A module finder that finds pandas nowhere."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"no {name} in a map-step worker", name=name)
        return None


def _convert_once_without_pandas() -> None:
    if "pandas" in sys.modules:
        return  # too late: this process has it already
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


_convert_once_without_pandas()
