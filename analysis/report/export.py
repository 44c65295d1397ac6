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

import pandas as pd

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


def parquet_tables(report: Report) -> Iterator[tuple[str, bytes]]:
    """Each table of the report as (name, bytes of one Parquet file), one table at a time."""
    for name, table in report.tables.items():
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
