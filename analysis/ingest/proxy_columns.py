"""The columns of NCCL proxy-op tables, and turning any export of them into one checked shape.

probing's ``nccl.proxy_ops`` (``probing/extensions/nccl-profiler/src/tables.rs``), one row
per finished proxy op; its federated view ``global.nccl.proxy_ops`` adds ``_host``,
``_addr``, ``_rank`` (the torch global rank) and ``_role``. ``rank`` and ``peer`` are the
communicator-local ranks (NCCL's ``comm->rank``). ``nccl.inflight_ops`` lists ops started
and not finished. Unsigned columns may arrive as negative 64-bit integers (users cast them
out of the export), so ``comm_hash`` is kept as an opaque id: ``0x`` and 16 hex digits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..types import DumpFormatError

WAIT_COLUMNS = ("send_gpu_wait_ns", "send_peer_wait_ns", "send_wait_ns", "recv_wait_ns", "recv_flush_wait_ns")
ROLE_COLUMNS = ("tp_rank", "pp_rank", "dp_rank")

# column -> (kind, default when absent); kind: int (64-bit), text
PROXY_COLUMNS: dict[str, tuple[str, Any]] = {
    "ts": ("int", None),
    "rank": ("int", None),
    **{c: ("int", -1) for c in ROLE_COLUMNS},
    "comm_hash": ("comm", "0x0"),
    "coll_func": ("text", "unknown"),
    "seq": ("int", 0),
    "channel_id": ("int", 0),
    "peer": ("int", None),
    "is_send": ("int", None),
    "n_steps": ("int", 0),
    "trans_bytes": ("int", 0),
    **{c: ("int", 0) for c in WAIT_COLUMNS},
    "_rank": ("int", -1),
    "_host": ("text", ""),
}
PROXY_REQUIRED = ("rank", "peer", "is_send")

INFLIGHT_COLUMNS: dict[str, tuple[str, Any]] = {
    "ts": ("int", None),
    "rank": ("int", None),
    "comm_hash": ("comm", "0x0"),
    "coll_func": ("text", "unknown"),
    "seq": ("int", 0),
    "kind": ("text", "coll"),
    "channel_id": ("int", -1),
    "peer": ("int", -1),
    "is_send": ("int", -1),
    "start_ns": ("int", None),
    "age_ns": ("int", None),
    "_rank": ("int", -1),
    "_host": ("text", ""),
}
INFLIGHT_REQUIRED = ("rank", "age_ns")
INFLIGHT_MARKERS = ("age_ns", "start_ns", "kind")
"""Columns only ``nccl.inflight_ops`` has: a table with them and no wait column is one."""

MAX_TEXT = 64
_U64 = 1 << 64


def comm_id(value: Any) -> str:
    """A communicator hash as an opaque id, whatever the export made of it (unsigned,
    cast to signed, decimal or hex text)."""
    if isinstance(value, bool):
        raise ValueError("a boolean")  # noqa: TRY004 - the callers catch ValueError for every bad value
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
        v = int(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        v = int(text, 16) if text.startswith(("0x", "-0x")) else int(text, 10)
    else:
        raise ValueError(f"a {type(value).__name__}")
    if not -(1 << 63) <= v < _U64:
        raise ValueError("does not fit in 64 bits")
    return f"0x{v % _U64:016x}"


def is_inflight(columns: list[str]) -> bool:
    names = set(columns)
    return bool(names & set(INFLIGHT_MARKERS)) and not names & set(WAIT_COLUMNS) and "age_ns" in names


def _ints(col: pa.ChunkedArray, name: str, default: Any, required: bool) -> np.ndarray:
    """An int64 column; nulls take ``default`` (a required column must have none)."""
    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.cast(t.value_type), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            col = pc.cast(pc.utf8_trim_whitespace(col), pa.int64())
        except pa.ArrowInvalid:
            raise DumpFormatError(f"column '{name}' holds text that is not an integer") from None
    elif pa.types.is_floating(t):
        values = col.to_numpy(zero_copy_only=False)
        finite = values[~np.isnan(values)]
        if finite.size and (not np.all(np.mod(finite, 1) == 0) or np.abs(finite).max() >= 2**63):
            raise DumpFormatError(f"column '{name}' holds numbers that are not integers")
        col = pa.array(values, mask=np.isnan(values)).cast(pa.int64(), safe=False)
    elif pa.types.is_boolean(t):
        col = col.cast(pa.int64())
    elif pa.types.is_unsigned_integer(t):
        if pc.max(col).as_py() is not None and pc.max(col).as_py() >= 2**63:
            raise DumpFormatError(f"column '{name}' holds values beyond 64-bit signed")
        col = col.cast(pa.int64())
    elif pa.types.is_integer(t):
        col = col.cast(pa.int64())
    elif pa.types.is_null(t):
        col = pa.nulls(len(col), pa.int64())
    else:
        raise DumpFormatError(f"column '{name}' is {t}, expected integers")
    arr = pa.chunked_array(col.chunks if isinstance(col, pa.ChunkedArray) else [col], pa.int64())
    nulls = arr.null_count
    if nulls and (required or default is None):
        if required:
            row = int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))
            raise DumpFormatError(f"row {row}: '{name}' is empty")
        return arr.to_numpy(zero_copy_only=False)  # stays float with NaN for an optional time
    return arr.fill_null(default if default is not None else 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _texts(col: pa.ChunkedArray, name: str, default: str) -> pd.Categorical:
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.string()) if not pa.types.is_null(col.type) else pa.nulls(len(col), pa.string())
    values = pc.utf8_slice_codeunits(col.fill_null(default), 0, MAX_TEXT)
    return pd.Categorical(values.to_numpy(zero_copy_only=False))


def _comms(col: pa.ChunkedArray) -> pd.Categorical:
    distinct = pc.unique(col)
    ids = {}
    for v in distinct.to_pylist():
        if v is None:
            ids[None] = "0x0"
            continue
        try:
            ids[v] = comm_id(v)
        except ValueError as exc:
            raise DumpFormatError(f"column 'comm_hash' holds {str(v)[:40]!r}: {exc}") from None
    return pd.Categorical([ids[v] for v in col.to_pylist()])


def normalize(table: pa.Table, spec: dict[str, tuple[str, Any]], required: tuple[str, ...]) -> pd.DataFrame:
    """Every column of ``spec``, checked and converted; absent optional columns take defaults."""
    names = {n.strip(): n for n in table.column_names}
    missing = [c for c in required if c not in names]
    if missing:
        raise DumpFormatError(f"no column {', '.join(repr(m) for m in missing)}")
    n = table.num_rows
    out: dict[str, Any] = {}
    for col, (kind, default) in spec.items():
        if col not in names:
            if default is None:
                out[col] = np.full(n, np.nan)
            elif kind == "int":
                out[col] = np.full(n, default, dtype=np.int64)
            else:
                out[col] = pd.Categorical([default] * n)
            continue
        data = table.column(names[col])
        if kind == "int":
            out[col] = _ints(data, col, default, col in required)
        elif kind == "comm":
            out[col] = _comms(data)
        else:
            out[col] = _texts(data, col, default)
    return pd.DataFrame(out)


def check_proxy_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Values a proxy op can have: a direction, ranks and peers in range, waits not negative."""
    bad_dir = ~df["is_send"].isin([0, 1])
    if bad_dir.any():
        row = int(np.argmax(bad_dir.to_numpy()))
        raise DumpFormatError(f"row {row}: 'is_send' is {df['is_send'].iloc[row]}, expected 0 or 1")
    for col in ("rank", "peer"):
        v = df[col].to_numpy()
        bad = (v < -1) | (v >= 1 << 22)
        if col == "rank":
            bad |= v < 0
        if bad.any():
            row = int(np.argmax(bad))
            raise DumpFormatError(f"row {row}: '{col}' is {int(v[row])}, outside 0..{(1 << 22) - 1}")
    for col in WAIT_COLUMNS:
        v = df[col].to_numpy()
        if (v < 0).any():
            row = int(np.argmax(v < 0))
            raise DumpFormatError(f"row {row}: '{col}' is negative ({int(v[row])})")
    return df
