"""The postmortem artifact: the report and its tables as Parquet files in one folder."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .report import Report


def _parquet_ready(df: pd.DataFrame) -> pd.DataFrame:
    """Lists of ints (group ranks) are fine for Parquet; arbitrary objects are not."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object and not out[col].map(lambda v: isinstance(v, (list, str, type(None)))).all():
            out[col] = out[col].astype(str)
    return out


def write_parquet(report: Report, out_dir: str | Path) -> list[Path]:
    """Write ``report.json`` and one ``<table>.parquet`` per table; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in report.tables.items():
        path = out / f"{name}.parquet"
        _parquet_ready(table).to_parquet(path, index=False)
        written.append(path)
    path = out / "report.json"
    path.write_text(json.dumps(report.to_dict(), indent=2))
    written.append(path)
    return written
