"""The postmortem artifact: the report and its tables as Parquet, in a folder or one zip.

The command line's ``--parquet DIR`` and the dashboard's download write the same bytes
for each table: both go through :func:`parquet_tables`.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowindex import entry_positions
from .report import Report


def parquet_ready(df: pd.DataFrame) -> pd.DataFrame:
    """The table with every column Parquet can store as it is: lists of ints (group ranks)
    and text stay; a column holding other Python objects becomes text. Columns that need
    no change are shared with ``df``, not copied."""
    changed = {}
    for col in df.columns:
        values = df[col]
        if values.dtype == object and not values.map(lambda v: isinstance(v, (list, str, type(None)))).all():
            changed[col] = values.map(lambda v: None if v is None else str(v))
    return df.assign(**changed) if changed else df


def with_entry_index(entries: pd.DataFrame, files: pd.DataFrame) -> pd.DataFrame:
    """The entries with each one's place in its file after the rank, as loading once kept it
    (int16 where every place fits): the analysis derives it where needed (see
    ``rowindex.entry_positions``), the export still holds it. ``entries`` is not changed."""
    if s.ENTRY_INDEX in entries.columns or s.RANK not in entries.columns:
        return entries
    places = entry_positions(files)
    narrow = not len(places) or places.max() <= np.iinfo(np.int16).max
    out = entries.copy(deep=False)
    out.insert(
        out.columns.get_loc(s.RANK) + 1,
        s.ENTRY_INDEX,
        pd.array(
            places.astype(np.int16 if narrow else np.int32), dtype="int16[pyarrow]" if narrow else "int32[pyarrow]"
        ),
    )
    return out


def parquet_tables(report: Report) -> Iterator[tuple[str, bytes]]:
    """Each table of the report as (name, bytes of one Parquet file), one table at a time."""
    for name, table in report.tables.items():
        if name == "entries" and "files" in report.tables:
            table = with_entry_index(table, report.tables["files"])
        buf = io.BytesIO()
        parquet_ready(table).to_parquet(buf, index=False)
        yield name, buf.getvalue()


def report_json(report: Report) -> bytes:
    return json.dumps(report.to_dict(), indent=2).encode()


def write_parquet(report: Report, out_dir: str | Path) -> list[Path]:
    """Write ``report.json`` and one ``<table>.parquet`` per table; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in parquet_tables(report):
        path = out / f"{name}.parquet"
        path.write_bytes(data)
        written.append(path)
    path = out / "report.json"
    path.write_bytes(report_json(report))
    written.append(path)
    return written


def tables_zip(report: Report) -> bytes:
    """The same files as :func:`write_parquet`, as one zip (the dashboard's download)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in parquet_tables(report):
            zf.writestr(f"{name}.parquet", data)
        zf.writestr("report.json", report_json(report))
    return buf.getvalue()
