"""Turn one rank's raw dump (a dict from pickle or JSON) into Arrow tables.

Columns are pulled out of the entry dicts one field at a time (a list comprehension
per column), so no per-entry Python object outlives this function. Values that repeat
(sizes, dtypes, op names, call stacks) are interned through small caches keyed on the
value, so the work per distinct value is done once per file. Anything malformed
raises :class:`DumpFormatError` with the entry index and field, which the loader turns
into a per-file error.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from . import schema as s


class DumpFormatError(ValueError):
    """The file parsed, but it is not a Flight Recorder dump of a known shape."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one dump may contain; a real dump is far below each."""

    max_file_bytes: int = 1 << 30
    max_entries: int = 1_000_000
    max_frames: int = 4096
    max_tensors: int = 65_536
    max_groups: int = 1_000_000


DEFAULT_LIMITS = Limits()


@dataclass(slots=True)
class FileTables:
    """Everything one file contributes, as Arrow tables ready to concatenate."""

    entries: pa.Table
    stacks: pa.Table
    configs: pa.Table
    status: pa.Table
    meta: pa.Table


_P2P_NAME = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)$")
_SIZES = re.compile(r"^\[(?:\[(?:\d+(?:, )?)*\](?:, )?)*\]$")
_DTYPES = re.compile(r"^\[(?:'[A-Za-z0-9_ ]{1,64}'(?:, )?)*\]$")
_TORCH_INTERNAL = ("/torch/distributed/", "/torch/nn/parallel/", "/torch/utils/", "c10d_logger.py")

_ENTRY_INT_FIELDS = (s.RECORD_ID, s.PG_ID, s.SEQ)
_OPTIONAL_INT_FIELDS = (s.P2P_SEQ, s.OP_ID, s.TIMEOUT_MS)


def _require_int(value: Any, what: str) -> int:
    if type(value) is bool or not isinstance(value, int):
        if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) < 20:
            return int(value)
        raise DumpFormatError(f"{what} is {_describe(value)}, expected an integer")
    if not -(2**63) <= value < 2**63:
        raise DumpFormatError(f"{what} = {value} does not fit in 64 bits")
    return value


def _describe(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, bool, type(None))) else type(value).__name__
    return text[:40]


def _int_column(entries: list, key: str, default: Any = ...) -> pa.Array:
    """One integer field of every entry; on bad data, find and name the offender."""
    try:
        if default is ...:
            values = [e[key] for e in entries]
        else:
            values = [e.get(key, default) for e in entries]
        return pa.array(values, type=pa.int64())
    except (KeyError, TypeError, AttributeError, pa.ArrowException, OverflowError):
        pass
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise DumpFormatError(f"entry {i} is {_describe(e)}, expected a dict")
        if key not in e and default is ...:
            raise DumpFormatError(f"entry {i} has no '{key}'")
        value = e.get(key, default)
        if value is not None:
            _require_int(value, f"entry {i} '{key}'")
    # Only digit strings remain (JSON writers sometimes quote ints): convert them.
    values = [e.get(key, default if default is not ... else None) for e in entries]
    return pa.array([None if v is None else _require_int(v, key) for v in values], type=pa.int64())


def _time_column(entries: list, key: str) -> pa.Array:
    """Timestamps: JSON dumps write a missing time as 0; store missing as null."""
    values = [e.get(key) for e in entries]
    try:
        arr = pa.array(values, type=pa.int64())
    except (pa.ArrowException, OverflowError, TypeError):
        cleaned = []
        for i, v in enumerate(values):
            if v is None:
                cleaned.append(None)
            elif isinstance(v, float) and not math.isfinite(v):
                raise DumpFormatError(f"entry {i} '{key}' is {v}, expected a time in ns")
            else:
                cleaned.append(_require_int(int(v) if isinstance(v, float) else v, f"entry {i} '{key}'"))
        arr = pa.array(cleaned, type=pa.int64())
    if arr.null_count < len(arr):
        import pyarrow.compute as pc

        arr = pc.if_else(pc.less_equal(arr, 0), pa.scalar(None, pa.int64()), arr)
    return arr


class _Interner:
    """Per-file caches: each distinct sizes/dtypes/name/stack is checked and converted once."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.sizes: dict[str, tuple[str, int]] = {}
        self.dtypes: dict[str, str] = {}
        self.names: dict[str, tuple[str, int | None, int | None]] = {}
        self.stack_by_obj: dict[int, int | None] = {}
        self.stack_by_text: dict[str, int] = {}
        self.stack_rows: dict[int, tuple[int, str, str]] = {}

    def size(self, value: Any, i: int, key: str) -> tuple[str, int]:
        if type(value) is not list:
            raise DumpFormatError(f"entry {i} '{key}' is {_describe(value)}, expected a list of shapes")
        if len(value) > self.limits.max_tensors:
            raise DumpFormatError(f"entry {i} '{key}' lists {len(value)} tensors")
        try:
            text = repr(value)
        except RecursionError:
            raise DumpFormatError(f"entry {i} '{key}' is nested too deeply") from None
        hit = self.sizes.get(text)
        if hit is None:
            if not _SIZES.match(text):
                raise DumpFormatError(f"entry {i} '{key}' is not a list of integer shapes")
            numel = 0
            for shape in value:
                n = 1
                for d in shape:
                    n *= d
                numel += n
            hit = self.sizes[text] = (text.replace(" ", ""), min(numel, 2**63 - 1))
        return hit

    def dtype(self, value: Any, i: int, key: str) -> str:
        if type(value) is not list:
            raise DumpFormatError(f"entry {i} '{key}' is {_describe(value)}, expected a list of dtype names")
        text = repr(value) if len(value) <= self.limits.max_tensors else ""
        hit = self.dtypes.get(text)
        if hit is None:
            if not _DTYPES.match(text):
                raise DumpFormatError(f"entry {i} '{key}' is not a list of dtype names")
            hit = self.dtypes[text] = ",".join(value)
        return hit

    def name(self, value: Any, i: int) -> tuple[str, int | None, int | None]:
        hit = self.names.get(value) if type(value) is str else None
        if hit is None:
            if type(value) is not str:
                raise DumpFormatError(f"entry {i} 'profiling_name' is {_describe(value)}, expected a string")
            op = value.split(":", 1)[1] if ":" in value else value
            src = dst = None
            m = _P2P_NAME.match(op)
            if m:
                a, b = int(m.group(2)), int(m.group(4))
                op = m.group(1)
                src, dst = (a, b) if m.group(3) == "->" else (b, a)
                if max(a, b) >= 2**31:
                    raise DumpFormatError(f"entry {i} 'profiling_name' has a peer out of range")
            hit = self.names[value] = (op, src, dst)
        return hit

    def stack(self, frames: Any, i: int) -> int | None:
        if frames is None:
            return None
        key = id(frames)
        if key in self.stack_by_obj:
            return self.stack_by_obj[key]
        if type(frames) is not list:
            raise DumpFormatError(f"entry {i} 'frames' is {_describe(frames)}, expected a list")
        if len(frames) > self.limits.max_frames:
            raise DumpFormatError(f"entry {i} has {len(frames)} frames")
        lines = []
        for f in frames:
            if type(f) is not dict:
                raise DumpFormatError(f"entry {i} has a frame that is {_describe(f)}, expected a dict")
            name, filename, line = f.get("name"), f.get("filename"), f.get("line")
            if type(name) is not str or type(filename) is not str:
                raise DumpFormatError(f"entry {i} has a frame without a string name and filename")
            if type(line) is not int and line is not None:
                raise DumpFormatError(f"entry {i} has a frame whose line is {_describe(line)}")
            lines.append(f"{filename}:{line} in {name}")
        text = "\n".join(lines)
        sid = self.stack_by_text.get(text)
        if sid is None:
            sid = int.from_bytes(
                hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "little", signed=True
            )
            self.stack_by_text[text] = sid
            self.stack_rows[sid] = (len(lines), text, call_site(lines))
        self.stack_by_obj[key] = sid
        return sid


def call_site(frame_lines: list[str]) -> str:
    """The innermost frame outside torch's own distributed code: where the user called."""
    for line in frame_lines:
        path = line.replace("\\", "/")
        if not any(marker in path for marker in _TORCH_INTERNAL):
            return line
    return frame_lines[-1] if frame_lines else ""


def _pg_key_of(value: Any, i: int) -> tuple[str, str]:
    if type(value) in (tuple, list) and len(value) == 2 and all(type(v) is str for v in value):
        return value[0], value[1]
    if type(value) is str:
        return value, ""
    raise DumpFormatError(f"entry {i} 'process_group' is {_describe(value)}, expected (name, desc)")


def _entries_table(rank: int, entries: list, limits: Limits, interner: _Interner) -> pa.Table:
    n = len(entries)
    if n > limits.max_entries:
        raise DumpFormatError(f"{n} entries, more than the limit of {limits.max_entries}")
    for i, e in enumerate(entries):
        if type(e) is not dict:
            raise DumpFormatError(f"entry {i} is {_describe(e)}, expected a dict")
    cols: dict[str, Any] = {}
    for key in _ENTRY_INT_FIELDS:
        cols[key] = _int_column(entries, key)
    cols[s.P2P_SEQ] = _int_column(entries, s.P2P_SEQ, None)
    cols[s.OP_ID] = _int_column(entries, s.OP_ID, None)
    cols[s.TIMEOUT_MS] = _int_column(entries, s.TIMEOUT_MS, None)
    cols[s.T_CREATED] = _time_column(entries, "time_created_ns")
    cols[s.T_STARTED] = _time_column(entries, "time_discovered_started_ns")
    cols[s.T_COMPLETED] = _time_column(entries, "time_discovered_completed_ns")

    pg_names, pg_descs = [], []
    seen_pg: dict[Any, tuple[str, str]] = {}
    for i, e in enumerate(entries):
        value = e.get("process_group")
        try:
            hit = seen_pg.get(value)
        except TypeError:
            hit = None
        if hit is None:
            hit = _pg_key_of(value, i)
            if type(value) is tuple:
                seen_pg[value] = hit
        pg_names.append(hit[0])
        pg_descs.append(hit[1])

    ops, srcs, dsts, pnames = [], [], [], []
    for i, e in enumerate(entries):
        value = e.get("profiling_name")
        op, src, dst = interner.name(value, i)
        ops.append(op)
        srcs.append(src)
        dsts.append(dst)
        pnames.append(value)

    in_sizes, out_sizes, numels, in_dt, out_dt = [], [], [], [], []
    for i, e in enumerate(entries):
        text, numel = interner.size(e.get("input_sizes", []), i, "input_sizes")
        in_sizes.append(text)
        numels.append(numel)
        out_sizes.append(interner.size(e.get("output_sizes", []), i, "output_sizes")[0])
        in_dt.append(interner.dtype(e.get("input_dtypes", []), i, "input_dtypes"))
        out_dt.append(interner.dtype(e.get("output_dtypes", []), i, "output_dtypes"))

    states, retired, is_p2p, durations, tids, tnames, stacks = [], [], [], [], [], [], []
    for i, e in enumerate(entries):
        state = e.get("state")
        if state not in s.STATES:
            raise DumpFormatError(f"entry {i} 'state' is {_describe(state)}, expected one of {s.STATES}")
        states.append(state)
        r = e.get("retired", False)
        if type(r) is not bool:
            raise DumpFormatError(f"entry {i} 'retired' is {_describe(r)}, expected a bool")
        retired.append(r)
        p = e.get("is_p2p")
        if p is not None and type(p) is not bool:
            raise DumpFormatError(f"entry {i} 'is_p2p' is {_describe(p)}, expected a bool")
        is_p2p.append(p if p is not None else srcs[i] is not None)
        d = e.get("duration_ms")
        if d is not None and (type(d) not in (int, float) or not math.isfinite(d)):
            d = None
        durations.append(d)
        tid, tname = e.get("thread_id"), e.get("thread_name")
        tids.append(None if tid is None else str(tid)[:64] if type(tid) in (str, int) else None)
        tnames.append(tname[:128] if type(tname) is str else None)
        stacks.append(interner.stack(e.get("frames"), i))

    call_sites = [interner.stack_rows[sid][2] if sid is not None else None for sid in stacks]

    def dict_arr(values: list) -> pa.Array:
        return pa.array(values, type=pa.string()).dictionary_encode()

    columns = {
        s.RANK: pa.array([rank] * n, type=pa.int32()),
        s.ENTRY_INDEX: pa.array(range(n), type=pa.int32()),
        s.RECORD_ID: cols[s.RECORD_ID],
        s.PG_ID: cols[s.PG_ID],
        s.PG_NAME: dict_arr(pg_names),
        s.PG_DESC: dict_arr(pg_descs),
        s.SEQ: cols[s.SEQ],
        s.P2P_SEQ: cols[s.P2P_SEQ],
        s.OP_ID: cols[s.OP_ID],
        s.IS_P2P: pa.array(is_p2p, type=pa.bool_()),
        s.PROFILING_NAME: dict_arr(pnames),
        s.OP: dict_arr(ops),
        s.PEER_SRC: pa.array(srcs, type=pa.int32()),
        s.PEER_DST: pa.array(dsts, type=pa.int32()),
        s.INPUT_SIZES: dict_arr(in_sizes),
        s.OUTPUT_SIZES: dict_arr(out_sizes),
        s.INPUT_DTYPES: dict_arr(in_dt),
        s.OUTPUT_DTYPES: dict_arr(out_dt),
        s.NUMEL: pa.array(numels, type=pa.int64()),
        s.STATE: dict_arr(states),
        s.RETIRED: pa.array(retired, type=pa.bool_()),
        s.T_CREATED: cols[s.T_CREATED],
        s.T_STARTED: cols[s.T_STARTED],
        s.T_COMPLETED: cols[s.T_COMPLETED],
        s.DURATION_MS: pa.array(durations, type=pa.float64()),
        s.TIMEOUT_MS: cols[s.TIMEOUT_MS],
        s.THREAD_ID: dict_arr(tids),
        s.THREAD_NAME: dict_arr(tnames),
        s.STACK_ID: pa.array(stacks, type=pa.int64()),
        s.CALL_SITE: dict_arr(call_sites),
    }
    return pa.table(columns, schema=s.ENTRY_SCHEMA)


def _configs_table(rank: int, pg_config: Any, limits: Limits) -> pa.Table:
    if pg_config is None:
        pg_config = {}
    if type(pg_config) is not dict:
        raise DumpFormatError(f"'pg_config' is {_describe(pg_config)}, expected a dict")
    if len(pg_config) > limits.max_groups:
        raise DumpFormatError(f"'pg_config' lists {len(pg_config)} groups")
    names, descs, ranks = [], [], []
    for key, cfg in pg_config.items():
        if type(cfg) is not dict:
            raise DumpFormatError(f"pg_config[{str(key)[:40]!r}] is {_describe(cfg)}, expected a dict")
        name = cfg.get("name", key)
        ranks_value = cfg.get("ranks", "")
        if type(ranks_value) is list:
            ranks_value = repr(ranks_value)
        if type(name) is not str or type(ranks_value) is not str:
            raise DumpFormatError(f"pg_config[{str(key)[:40]!r}] has a non-string name or ranks")
        if name == "" and ranks_value in ("", "[]"):
            continue  # gloo writes one empty placeholder group
        desc = cfg.get("desc", "")
        names.append(name)
        descs.append(desc if type(desc) is str else "")
        ranks.append(ranks_value)
    return pa.table(
        {s.RANK: pa.array([rank] * len(names), pa.int32()), s.PG_NAME: names, s.PG_DESC: descs, s.RANKS: ranks},
        schema=s.CONFIG_SCHEMA,
    )


def _status_table(rank: int, pg_status: Any, limits: Limits) -> pa.Table:
    if pg_status is None:
        pg_status = {}
    if type(pg_status) is not dict:
        raise DumpFormatError(f"'pg_status' is {_describe(pg_status)}, expected a dict")
    if len(pg_status) > limits.max_groups:
        raise DumpFormatError(f"'pg_status' lists {len(pg_status)} groups")
    rows: dict[str, list] = {s.PG_ID: [], s.LAST_ENQUEUED: [], s.LAST_STARTED: [], s.LAST_COMPLETED: []}
    for key, st in pg_status.items():
        if type(st) is not dict:
            raise DumpFormatError(f"pg_status[{str(key)[:40]!r}] is {_describe(st)}, expected a dict")
        rows[s.PG_ID].append(str(key)[:64])
        for col, raw in (
            (s.LAST_ENQUEUED, "last_enqueued_collective"),
            (s.LAST_STARTED, "last_started_collective"),
            (s.LAST_COMPLETED, "last_completed_collective"),
        ):
            v = st.get(raw)
            rows[col].append(None if v is None else _require_int(v, f"pg_status[{str(key)[:40]!r}] '{raw}'"))
    rows[s.RANK] = [rank] * len(rows[s.PG_ID])
    return pa.table(rows, schema=s.STATUS_SCHEMA)


def parse_dump(raw: Any, rank: int, file: str, fmt: str, limits: Limits = DEFAULT_LIMITS) -> FileTables:
    """Validate one decoded dump and convert it to tables; raise DumpFormatError if malformed."""
    if type(raw) is not dict:
        raise DumpFormatError(f"top level is {_describe(raw)}, expected a dict")
    entries = raw.get("entries", [])
    if type(entries) is not list:
        raise DumpFormatError(f"'entries' is {_describe(entries)}, expected a list")
    if "version" not in raw and "pg_config" not in raw and "entries" not in raw:
        raise DumpFormatError("no 'version', 'pg_config' or 'entries': not a Flight Recorder dump")
    version = raw.get("version", "")
    comm = raw.get("comm_lib_version", raw.get("nccl_version", ""))
    interner = _Interner(limits)
    table = _entries_table(rank, entries, limits, interner)
    stacks = pa.table(
        {
            s.STACK_ID: pa.array(list(interner.stack_rows), pa.int64()),
            s.NUM_FRAMES: pa.array([r[0] for r in interner.stack_rows.values()], pa.int32()),
            s.FRAMES: [r[1] for r in interner.stack_rows.values()],
            s.CALL_SITE: [r[2] for r in interner.stack_rows.values()],
        },
        schema=s.STACK_SCHEMA,
    )
    meta = pa.table(
        {
            s.RANK: pa.array([rank], pa.int32()),
            s.FILE: [file],
            s.FORMAT: [fmt],
            s.VERSION: [str(version)[:16]],
            s.COMM_LIB_VERSION: [str(comm)[:64]],
            s.NUM_ENTRIES: pa.array([len(entries)], pa.int64()),
        },
        schema=s.RANK_SCHEMA,
    )
    return FileTables(
        entries=table,
        stacks=stacks,
        configs=_configs_table(rank, raw.get("pg_config"), limits),
        status=_status_table(rank, raw.get("pg_status"), limits),
        meta=meta,
    )
