"""One file's tables stored as Parquet: the output of a map step run on a cluster, which a
worker writes to a scratch folder every node sees and the driver reads back (see
:mod:`.dask_engine`)."""

from __future__ import annotations

from pathlib import Path

from .. import schema as s
from ..types import FileTables
from .combine import with_columns_of

_PART_TABLES = ("entries", "stacks", "configs", "status", "meta")


def write_file_tables(part: FileTables, folder: str | Path) -> Path:
    """Store one file's tables as Parquet: the output of a map step run on a cluster."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in _PART_TABLES:
        pq.write_table(getattr(part, name), folder / f"{name}.parquet")
    return folder


def read_file_tables(folder: str | Path) -> FileTables:
    """The tables :func:`write_file_tables` stored, ready for :func:`.load.combine`.

    Parts stored before the files table held the health checks get them as nulls."""
    import pyarrow.parquet as pq

    tables = {name: pq.read_table(Path(folder) / f"{name}.parquet") for name in _PART_TABLES}
    tables["meta"] = with_columns_of(tables["meta"], s.RANK_SCHEMA)
    return FileTables(**tables)
