"""One file's entries table: every field of every entry, checked and encoded."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import schema as s
from ..opnames import parse_op
from ..types import DumpFormatError, Limits
from .fields import EntryFields
from .stacks import Stacks
from .values import (
    describe,
    dict_array,
    dtype_codes,
    flag_array,
    int32_array,
    merge_codes,
    shape_codes,
    string_codes,
    tuple_if_list,
)

REQUIRED_KEYS = (s.SEQ, s.PG_ID, "process_group", "profiling_name", "state")


def entries_table(rank: int, fields: EntryFields, limits: Limits, stacks: Stacks) -> pa.Table:
    n = fields.n
    if n > limits.max_entries:
        raise DumpFormatError(f"{n} entries, more than the limit of {limits.max_entries}")
    fields.require(REQUIRED_KEYS)

    pg_codes, pg_distinct = merge_codes(*fields.groups("process_group"), "process_group", tuple_if_list)
    for v in pg_distinct:
        if type(v) is not tuple or len(v) != 2 or not all(type(x) is str and len(x) <= 4096 for x in v):
            raise DumpFormatError(f"'process_group' holds {describe(v)}, expected (name, desc)")

    name_codes, names = string_codes(*fields.groups("profiling_name"), "profiling_name")
    if None in names:
        raise DumpFormatError("an entry's 'profiling_name' is None")
    parsed = [parse_op(x) for x in names]
    src = np.array([-1 if p[1] is None else p[1] for p in parsed] or [0], dtype=np.int64)[name_codes]

    state_codes, states = string_codes(*fields.groups("state"), "state")
    for st in states:
        if st not in s.STATES:
            raise DumpFormatError(f"'state' holds {describe(st)}, expected one of {s.STATES}")

    retired = flag_array(*fields.groups("retired", False), "retired", nullable=False)
    is_p2p = flag_array(*fields.groups("is_p2p"), "is_p2p", nullable=True) | (src >= 0)

    in_codes, in_texts = shape_codes(*fields.groups("input_sizes", []), "input_sizes", limits)
    out_codes, out_texts = shape_codes(*fields.groups("output_sizes", []), "output_sizes", limits)
    dt_codes, dt_texts = dtype_codes(*fields.groups("input_dtypes", []), "input_dtypes")
    stack_ids, sites = stacks.encode(*fields.stacks())

    columns = {
        s.RANK: pa.array(np.full(n, rank, dtype=np.int32)),
        s.ENTRY_INDEX: pa.array(np.arange(n, dtype=np.int32)),
        s.RECORD_ID: fields.ints("record_id", nullable=True),
        s.PG_ID: int32_array(fields.ints(s.PG_ID, nullable=False), s.PG_ID),
        s.PG_NAME: dict_array(pg_codes, [v[0] for v in pg_distinct]),
        s.PG_DESC: dict_array(pg_codes, [v[1] for v in pg_distinct]),
        s.SEQ: fields.ints(s.SEQ, nullable=False),
        s.P2P_SEQ: fields.ints(s.P2P_SEQ, nullable=True),
        s.IS_P2P: pa.array(is_p2p),
        s.PROFILING_NAME: dict_array(name_codes, names),
        s.OP: dict_array(name_codes, [p[0] for p in parsed]),
        s.INPUT_SIZES: dict_array(in_codes, in_texts),
        s.OUTPUT_SIZES: dict_array(out_codes, out_texts),
        s.INPUT_DTYPES: dict_array(dt_codes, dt_texts),
        s.STATE: dict_array(state_codes, states),
        s.RETIRED: pa.array(retired),
        s.T_CREATED: fields.times("time_created_ns"),
        s.STACK_ID: stack_ids,
        s.CALL_SITE: sites,
    }
    return pa.table(columns, schema=s.ENTRY_SCHEMA)
