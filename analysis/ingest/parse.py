"""Turn one rank's raw dump (a dict from pickle or JSON) into Arrow tables.

Columns are pulled out of the entry dicts one field at a time (see :mod:`.fields`), so no
per-entry Python object outlives this function. Text columns are dictionary-encoded as
they are pulled out, and all checking and converting happens once per distinct value
(:mod:`.values`). Anything malformed raises :class:`DumpFormatError` with the entry index
and field, which the loader turns into a per-file error.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .. import schema as s
from ..types import DEFAULT_LIMITS, DumpFormatError, FileTables, Limits
from .entries import entries_table
from .fields import DictFields, EntryFields
from .health import health_fields
from .pg_tables import configs_table, status_table
from .stacks import Stacks
from .values import describe, text_label


def parse_dump(
    raw: Any, rank: int, file: str, fmt: str, limits: Limits = DEFAULT_LIMITS, fields: EntryFields | None = None
) -> FileTables:
    """Validate one decoded dump and convert it to tables; raise DumpFormatError if malformed.

    ``fields``, when given, are the entries' columns, read without decoding the entries
    (``raw["entries"]`` is then only a placeholder).
    """
    if type(raw) is not dict:
        raise DumpFormatError(f"top level is {describe(raw)}, expected a dict")
    entries = raw.get("entries", [])
    if type(entries) is not list:
        raise DumpFormatError(f"'entries' is {describe(entries)}, expected a list")
    if "version" not in raw and "pg_config" not in raw and "entries" not in raw:
        raise DumpFormatError("no 'version', 'pg_config' or 'entries': not a Flight Recorder dump")
    if not 0 <= rank <= limits.max_rank:
        raise DumpFormatError(f"rank {rank} is above the limit of {limits.max_rank}")
    version = raw.get("version", "")
    comm = raw.get("comm_lib_version", raw.get("nccl_version", ""))
    stack_index = Stacks(limits)
    fields = DictFields(entries) if fields is None else fields
    table = entries_table(rank, fields, limits, stack_index)
    rows = stack_index.rows
    stacks = pa.table(
        {
            s.STACK_ID: pa.array(list(rows), pa.int64()),
            s.NUM_FRAMES: pa.array([r[0] for r in rows.values()], pa.int32()),
            s.FRAMES: [r[1] for r in rows.values()],
            s.CALL_SITE: [r[2] for r in rows.values()],
        },
        schema=s.STACK_SCHEMA,
    )
    meta = pa.table(
        {
            s.RANK: pa.array([rank], pa.int32()),
            s.FILE: [file],
            s.FORMAT: [fmt],
            s.VERSION: [text_label(version, 16)],
            s.COMM_LIB_VERSION: [text_label(comm, 64)],
            s.NUM_ENTRIES: pa.array([fields.n], pa.int64()),
            **{name: pa.array([text], pa.string()) for name, text in health_fields(raw).items()},
        },
        schema=s.RANK_SCHEMA,
    )
    return FileTables(
        entries=table,
        stacks=stacks,
        configs=configs_table(rank, raw.get("pg_config"), limits),
        status=status_table(rank, raw.get("pg_status"), limits),
        meta=meta,
    )
