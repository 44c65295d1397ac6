"""Build Flight Recorder (FR) dump dicts shaped like PyTorch's versions 2.0-2.10.

Every rule below cites the writer source it comes from; see docs/fr-format.md
for the full table.  Short names used in the comments:

* TU20   pytorch/pytorch torch/csrc/distributed/c10d/TraceUtils.h @009798fd
         (version "2.0", pickle writer ``NCCLTraceBuffer::dump``)
* NU22   annotated copy of c10d/NCCLUtils.hpp, version "2.2" (constants only)
* NU23   copy of c10d/NCCLUtils.hpp, version "2.3" (constants only)
* FR24   pytorch/pytorch c10d/FlightRecorder.hpp + .cpp @00f0e2f6 ("2.4")
* FR27   frost-intel/pytorch c10d/FlightRecorder.hpp @59693e5c ("2.7")
* FR29   sbak5/pytorch c10d/FlightRecorder.hpp + FlightRecorderDetail.hpp
         @1fdd7573 ("2.9")
* FR210  pytorch/pytorch c10d/FlightRecorderDetail.hpp @1189309e and
         tushar00jain/pytorch c10d/FlightRecorder.hpp @2f0b72c5 ("2.10")
* PR151048  pytorch/pytorch#151048 (bumps "2.5" -> "2.6", adds nccl_version)

Versions 2.1, 2.5 and 2.8 were not found in the sources.  The factory gives
them the key set of the previous verified version (2.0, 2.4, 2.7), i.e. a field
only appears from the first version where it was *seen*.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

SUPPORTED_VERSIONS: tuple[str, ...] = tuple(f"2.{i}" for i in range(11))

# First version where a field was seen in the sources (see module docstring).
# FIELD_SINCE: "timeout_ms" from NU22, "pg_status" from NU23, "nccl_version"
# from PR151048, "thread_id"/"thread_name" from FR29.
FIELD_SINCE: dict[str, tuple[int, int]] = {
    "timeout_ms": (2, 2),
    "pg_status": (2, 3),
    "json": (2, 3),  # dump_json / *_str constants first seen in NU23
    "nccl_version": (2, 6),
    "thread_id": (2, 9),
    "thread_name": (2, 9),
    "comm_lib_version": (2, 10),  # FR210 renames nccl_version
}

# Entry keys written by every version (TU20 ``dump``; unchanged in FR210).
BASE_ENTRY_KEYS: tuple[str, ...] = (
    "record_id",
    "pg_id",
    "process_group",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "retired",
    "is_p2p",  # already written by TU20
)


def parse_version(version: str) -> tuple[int, int]:
    """'2.10' -> (2, 10); rejects versions outside SUPPORTED_VERSIONS."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"unsupported FR version {version!r}")
    major, minor = version.split(".")
    return int(major), int(minor)


def has_field(version: str, field: str) -> bool:
    """Whether ``field`` (a key of FIELD_SINCE) exists in ``version``."""
    v = parse_version(version)
    if field == "nccl_version":  # present 2.6..2.9, renamed in 2.10 (FR210)
        return FIELD_SINCE["nccl_version"] <= v < FIELD_SINCE["comm_lib_version"]
    return v >= FIELD_SINCE[field]


def expected_entry_keys(version: str, fmt: str = "pickle", *, with_duration: bool = False) -> set[str]:
    """Key set of one entry as the given version/format writes it."""
    keys = set(BASE_ENTRY_KEYS)
    for field in ("timeout_ms", "thread_id", "thread_name"):
        if has_field(version, field):
            keys.add(field)
    if with_duration:  # duration_ms only when measured (TU20, FR210)
        keys.add("duration_ms")
    if fmt == "pickle":  # dump_json never writes frames (FR24, FR210)
        keys.add("frames")
    return keys


def _default_times(state: str, created: int) -> tuple[int | None, int | None]:
    started = created + 1_000 if state in ("started", "completed") else None
    completed = created + 2_000 if state == "completed" else None
    return started, completed


def _entry(version: str, fmt: str, idx: int, d: dict[str, Any]) -> dict[str, Any]:
    """Render one version-neutral entry description ``d``."""
    is_json = fmt == "json"
    state = d.get("state", "scheduled")
    created = d.get("time_created_ns", 1_000_000 * (idx + 1))
    t_start, t_done = _default_times(state, created)
    t_start = d.get("time_discovered_started_ns", t_start)
    t_done = d.get("time_discovered_completed_ns", t_done)
    pg = (d.get("pg_name", "0"), d.get("pg_desc", "default_pg"))
    op = d.get("op", "all_reduce")
    e: dict[str, Any] = {}
    if not is_json:
        # Pickle inserts frames first when stack traces are on (FR24 / FR210
        # getCollectiveTrace); each frame is {name, filename, line}.
        e["frames"] = list(d.get("frames", []))
    e["record_id"] = d.get("record_id", idx)
    e["pg_id"] = d.get("pg_id", 0)
    # std::tuple<name, desc>: a tuple in pickle (TU20), a JSON array (FR24).
    e["process_group"] = list(pg) if is_json else pg
    if has_field(version, "thread_id"):
        # thread_name, then thread_id as a string via c10::str (FR29).
        e["thread_name"] = d.get("thread_name", "pt_main_thread")
        e["thread_id"] = str(d.get("thread_id", "140000000000000"))
    e["collective_seq_id"] = d.get("collective_seq_id", idx + 1)
    e["p2p_seq_id"] = d.get("p2p_seq_id", 0)
    e["op_id"] = d.get("op_id", idx + 1)
    e["profiling_name"] = d.get("profiling_name", f"nccl:{op}")
    e["time_created_ns"] = created
    if d.get("duration_ms") is not None:  # only if measured (TU20, FR210)
        e["duration_ms"] = float(d["duration_ms"])
    e["input_sizes"] = [list(s) for s in d.get("input_sizes", [[4]])]
    e["input_dtypes"] = list(d.get("input_dtypes", ["Float"]))
    e["output_sizes"] = [list(s) for s in d.get("output_sizes", [[4]])]
    e["output_dtypes"] = list(d.get("output_dtypes", ["Float"]))
    e["state"] = state
    # Missing times: None in pickle (c10::IValue(), TU20); 0 in JSON (FR24).
    e["time_discovered_started_ns"] = (0 if is_json else None) if t_start is None else t_start
    e["time_discovered_completed_ns"] = (0 if is_json else None) if t_done is None else t_done
    e["retired"] = bool(d.get("retired", state == "completed"))
    if has_field(version, "timeout_ms"):
        e["timeout_ms"] = int(d.get("timeout_ms", 600_000))
    e["is_p2p"] = bool(d.get("is_p2p", op.split(" ")[0] in ("send", "recv")))
    return e


def _pg_status(entries: list[dict[str, Any]], is_json: bool) -> dict[str, Any]:
    """pg_status keyed by str(pg_id); values are ints in pickle and strings
    (std::to_string) in JSON (FR24 getPgStatus / getPgStatusJson)."""
    out: dict[str, Any] = {}
    for d in entries:
        seq, state = d.get("collective_seq_id", 0), d.get("state", "scheduled")
        st = out.setdefault(
            str(d.get("pg_id", 0)),
            {
                k: -1
                for k in (
                    "last_enqueued_collective",
                    "last_started_collective",
                    "last_completed_collective",
                )
            },
        )
        st["last_enqueued_collective"] = max(st["last_enqueued_collective"], seq)
        if state in ("started", "completed"):
            st["last_started_collective"] = max(st["last_started_collective"], seq)
        if state == "completed":
            st["last_completed_collective"] = max(st["last_completed_collective"], seq)
    if is_json:
        return {pg: {k: str(v) for k, v in st.items()} for pg, st in out.items()}
    return out


def make_dump(
    version: str,
    *,
    fmt: str = "pickle",
    entries: list[dict[str, Any]] | None = None,
    world_size: int = 2,
    comm_lib_version: str = "2.21.5",
) -> dict[str, Any]:
    """Build one rank's dump dict of ``version`` shape.

    ``entries`` are version-neutral descriptions: pg_name, pg_desc, pg_id,
    ranks, collective_seq_id, p2p_seq_id, op (or profiling_name), input_sizes,
    output_sizes, input_dtypes, output_dtypes, state, time_created_ns,
    time_discovered_{started,completed}_ns, duration_ms, timeout_ms, retired,
    is_p2p, thread_id, thread_name, frames.  Missing values get defaults.
    """
    if fmt not in ("pickle", "json"):
        raise ValueError(f"fmt must be 'pickle' or 'json', not {fmt!r}")
    if fmt == "json" and not has_field(version, "json"):
        raise ValueError(f"FR {version} has no JSON dump (dump_json first seen in 2.3)")
    is_json = fmt == "json"
    descs = list(entries or [])
    rendered = [_entry(version, fmt, i, d) for i, d in enumerate(descs)]
    # pg_config keyed by pg name; "ranks" is a string "[0, 1]" (ranks_str, TU20).
    pg_config: dict[str, dict[str, str]] = {}
    for d in descs or [{}]:
        name = d.get("pg_name", "0")
        ranks = d.get("ranks", list(range(world_size)))
        pg_config[name] = {
            "name": name,
            "desc": d.get("pg_desc", "default_pg"),
            "ranks": "[" + ", ".join(str(r) for r in ranks) + "]",
        }
    dump: dict[str, Any] = {"version": version}
    if is_json and has_field(version, "comm_lib_version"):
        dump["comm_lib_version"] = comm_lib_version  # dump_json order (FR210)
    elif is_json and has_field(version, "nccl_version"):
        dump["nccl_version"] = comm_lib_version  # dump_json order (FR29)
    dump["pg_config"] = pg_config
    if not is_json and has_field(version, "comm_lib_version"):
        dump["comm_lib_version"] = comm_lib_version  # dump_dict (FR210)
    elif not is_json and has_field(version, "nccl_version"):
        dump["nccl_version"] = comm_lib_version  # dump (FR29, PR151048)
    if has_field(version, "pg_status"):
        dump["pg_status"] = _pg_status(rendered, is_json)
    # dump_json omits "entries" when empty (FR24); pickle always writes it.
    if rendered or not is_json:
        dump["entries"] = rendered
    return dump


def write_dump(path: str | Path, dump: dict[str, Any], fmt: str = "pickle") -> Path:
    """Write ``dump`` as pickle (protocol 2, like torch::jit::Pickler) or JSON."""
    path = Path(path)
    if fmt == "pickle":
        path.write_bytes(pickle.dumps(dump, protocol=2))
    elif fmt == "json":
        path.write_text(json.dumps(dump))
    else:
        raise ValueError(f"fmt must be 'pickle' or 'json', not {fmt!r}")
    return path
