"""Read NCCL proxy-op waits from a file or a folder, in every format they are exported in.

- probing's ``nccl.proxy_ops`` / ``global.nccl.proxy_ops`` (and ``nccl.inflight_ops``)
  exported as CSV, a JSON array of row objects, JSON lines, or Parquet;
- NCCL's example profiler plugin traces (``*_<commHash>_<rank>.json``, see
  :mod:`.nccl_trace`).

Which table a file holds is read from its columns, not its name. A file that cannot be
read becomes a per-file error naming the file and the reason, as a bad dump does; the
others are still used.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..types import DumpFormatError, DumpReadError, FileError
from .nccl_trace import looks_like_trace, trace_rows
from .proxy_columns import (
    INFLIGHT_COLUMNS,
    INFLIGHT_REQUIRED,
    PROXY_COLUMNS,
    PROXY_REQUIRED,
    check_proxy_rows,
    is_inflight,
    normalize,
)
from .read import _open_regular

SUFFIXES = (".csv", ".json", ".jsonl", ".ndjson", ".parquet", ".pq")
MAX_FILE_BYTES = 1 << 30
MAX_ROWS = 20_000_000
MAX_FILES = 100_000
SOURCE = "source"


@dataclass
class ProxyData:
    """Every proxy-op row and in-flight op read, with the files that could not be used."""

    ops: pd.DataFrame
    inflight: pd.DataFrame
    errors: list[FileError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.ops.empty and self.inflight.empty


def _stem(name: str) -> str:
    return name.removesuffix(".gz")


def find_files(path: str | os.PathLike) -> tuple[list[str], list[FileError]]:
    """``path`` itself, or every file under the folder with a known suffix (optionally .gz)."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path], []
    if not os.path.isdir(path):
        return [], [FileError(path, "no such file or folder")]
    found = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            if _stem(name).lower().endswith(SUFFIXES) and not name.startswith("."):
                found.append(os.path.join(root, name))
                if len(found) > MAX_FILES:
                    return found[:MAX_FILES], [FileError(path, f"more than {MAX_FILES} files: the rest are not read")]
    if not found:
        return [], [FileError(path, f"no proxy-op files found (expected {', '.join(SUFFIXES)})")]
    return found, []


def _read_bytes(path: str) -> bytes:
    try:
        f, size = _open_regular(path)
    except OSError as exc:
        raise DumpReadError(f"cannot read: {exc.strerror or exc}") from None
    with f:
        if size > MAX_FILE_BYTES:
            raise DumpReadError(f"{size} bytes is larger than the size limit of {MAX_FILE_BYTES} bytes")
        data = f.read(MAX_FILE_BYTES + 1)
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                data = gz.read(MAX_FILE_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise DumpReadError(f"corrupt gzip: {exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise DumpReadError(f"larger than the size limit of {MAX_FILE_BYTES} bytes")
    if not data.strip():
        raise DumpReadError("the file is empty")
    return data


def _json_rows(data: bytes, name: str) -> tuple[pa.Table | None, list[dict] | None]:
    """A JSON array or JSON lines of row objects -> a table; a plugin trace -> its rows."""
    text = data.lstrip()
    try:
        if text[:1] == b"[":
            doc = orjson.loads(data)
            if looks_like_trace(doc):
                return None, trace_rows(doc, name, MAX_ROWS)
            rows = doc
        else:
            rows = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    except orjson.JSONDecodeError as exc:
        raise DumpReadError(f"invalid JSON: {exc}") from None
    if type(rows) is not list:
        raise DumpFormatError("expected a JSON array of row objects or JSON lines")
    if len(rows) > MAX_ROWS:
        raise DumpFormatError(f"{len(rows)} rows, more than the limit of {MAX_ROWS}")
    bad = next((i for i, r in enumerate(rows) if type(r) is not dict), None)
    if bad is not None:
        raise DumpFormatError(f"row {bad} is not an object")
    if not rows:
        return pa.table({}), None
    for r in rows:  # an unsigned 64-bit hash does not fit Arrow's int64: keep it as text
        v = r.get("comm_hash")
        if type(v) is int:
            r["comm_hash"] = str(v)
    try:
        return pa.Table.from_pylist(rows), None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise DumpFormatError(f"rows of mixed or unusable types: {str(exc)[:200]}") from None


def _table(path: str) -> tuple[pa.Table | None, list[dict] | None]:
    data = _read_bytes(path)
    name = _stem(os.path.basename(path)).lower()
    if name.endswith((".parquet", ".pq")) or data[:4] == b"PAR1":
        try:
            return pq.read_table(pa.BufferReader(data)), None
        except (pa.ArrowException, OSError) as exc:
            raise DumpReadError(f"not a readable Parquet file: {str(exc)[:200]}") from None
    if data.lstrip()[:1] in (b"[", b"{"):
        return _json_rows(data, os.path.basename(path))
    try:
        return pacsv.read_csv(pa.BufferReader(data)), None
    except (pa.ArrowException, OSError) as exc:
        raise DumpReadError(f"not a readable CSV file: {str(exc)[:200]}") from None


def read_file(path: str) -> tuple[str, pd.DataFrame]:
    """("ops" or "inflight", the checked rows) of one file; raises DumpReadError/DumpFormatError."""
    table, rows = _table(path)
    if rows is not None:
        table = pa.Table.from_pylist(rows) if rows else pa.table({c: pa.array([], pa.int64()) for c in PROXY_REQUIRED})
    assert table is not None
    if table.num_rows > MAX_ROWS:
        raise DumpFormatError(f"{table.num_rows} rows, more than the limit of {MAX_ROWS}")
    if table.num_columns and is_inflight(table.column_names):
        return "inflight", normalize(table, INFLIGHT_COLUMNS, INFLIGHT_REQUIRED)
    return "ops", check_proxy_rows(normalize(table, PROXY_COLUMNS, PROXY_REQUIRED))


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].astype("category")
    return out


def read_proxy_ops(path: str | os.PathLike) -> ProxyData:
    """Every proxy-op and in-flight row under ``path`` (a file or a folder)."""
    files, errors = find_files(path)
    ops, inflight, used = [], [], []
    for f in files:
        try:
            kind, df = read_file(f)
        except (DumpReadError, DumpFormatError) as exc:
            errors.append(FileError(f, str(exc)))
            continue
        except RecursionError:
            errors.append(FileError(f, "nested too deeply"))
            continue
        except MemoryError:
            errors.append(FileError(f, "ran out of memory while reading"))
            continue
        df[SOURCE] = pd.Categorical([os.path.relpath(f, path) if os.path.isdir(path) else Path(f).name] * len(df))
        (ops if kind == "ops" else inflight).append(df)
        used.append(f)
    return ProxyData(_concat(ops), _concat(inflight), errors, used)
