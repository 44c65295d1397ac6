"""NCCL's example profiler plugin traces (``plugins/profiler/example``) as proxy-op rows.

The plugin writes ``${NCCL_PROFILE_DUMP_FILE}_<commHash>_<rank>.json`` per communicator at
finalize: a Chrome trace array of async events ending in ``{}``, in nesting order
(``print_event.cc``). A ``COLL`` begin carries ``SeqNum``, ``CommHash`` and ``Rank`` (a
``P2P`` one ``Peer`` instead of ``SeqNum``); inside, per proxy op a ``ScheduleSend``/
``ScheduleRecv`` pair with ``Channel``, ``Peer``, ``Steps``, ``transSize``, then
``ProgressSend``/``ProgressRecv`` enclosing its steps' ``NET`` events, one id per step:
``SendGpuWait``, ``SendPeerWait``, ``SendWait`` and ``RecvWait``, ``RecvFlushWait``,
``RecvGpuWait``. Each state lasts from its begin to the next state's begin (probing's
``wait_deltas_ns`` reads NCCL's states the same way); a state never entered is written
with time 0. ``ts`` is microseconds from the plugin's start, comparable only within one
file; only the last 32 steps of an op are kept.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..types import DumpFormatError
from .proxy_columns import comm_id

NAME = re.compile(r"_(\d+)_(\d+)\.json$")
SEND_CHAIN = ("SendGpuWait", "SendPeerWait", "SendWait")
RECV_CHAIN = ("RecvWait", "RecvFlushWait", "RecvGpuWait")
COLUMN_OF = {
    "SendGpuWait": "send_gpu_wait_ns",
    "SendPeerWait": "send_peer_wait_ns",
    "SendWait": "send_wait_ns",
    "RecvWait": "recv_wait_ns",
    "RecvFlushWait": "recv_flush_wait_ns",
}


def looks_like_trace(data: Any) -> bool:
    """A JSON array whose first event has Chrome trace keys."""
    if type(data) is not list:
        return False
    first = next((e for e in data[:8] if type(e) is dict and e), None)
    return first is not None and "ph" in first and "name" in first


def name_ids(file_name: str) -> tuple[str | None, int | None]:
    """(comm id, local rank) from ``..._<commHash>_<rank>.json``, or (None, None)."""
    m = NAME.search(file_name)
    if not m:
        return None, None
    return comm_id(int(m.group(1))), int(m.group(2))


def _finite(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _num(value: Any, what: str) -> float:
    if _finite(value):
        return float(value)
    raise DumpFormatError(f"{what} is not a number")


def _int_arg(args: dict, key: str, default: int) -> int:
    v = args.get(key, default)
    return int(v) if _finite(v) and abs(v) < 2**63 else default


def _dwell(entries: dict[str, float], stop: float, chain: tuple[str, ...]) -> dict[str, int]:
    """ns spent in each state of ``chain``: its entry to the next entered state's, or to ``stop``."""
    out = {}
    for i, state in enumerate(chain):
        start = entries.get(state, 0.0)
        if state not in COLUMN_OF or start <= 0:
            continue
        nxt = next((entries[s] for s in chain[i + 1 :] if entries.get(s, 0.0) > 0), stop)
        out[COLUMN_OF[state]] = max(0, round((nxt - start) * 1000))
    return out


class _Op:
    def __init__(self, args: dict, is_send: bool, coll: dict) -> None:
        self.is_send = is_send
        self.coll = coll
        self.channel = _int_arg(args, "Channel", 0)
        self.peer = _int_arg(args, "Peer", -1)
        self.n_steps = _int_arg(args, "Steps", 0)
        self.bytes = _int_arg(args, "transSize", 0)
        self.steps: dict[Any, dict[str, float]] = {}
        self.stops: dict[Any, float] = {}

    def row(self, stop: float, file_comm: str | None, file_rank: int | None) -> dict[str, Any]:
        sums = dict.fromkeys(COLUMN_OF.values(), 0)
        chain = SEND_CHAIN if self.is_send else RECV_CHAIN
        for step, entries in self.steps.items():
            for col, ns in _dwell(entries, self.stops.get(step, stop), chain).items():
                sums[col] += ns
        rank = self.coll.get("rank", file_rank)
        comm = self.coll.get("comm", file_comm)
        if rank is None or comm is None:
            raise DumpFormatError("a proxy op with no rank or communicator (neither in its COLL event nor the name)")
        return {
            "ts": round(stop * 1000),
            "rank": rank,
            "comm_hash": comm,
            "coll_func": self.coll.get("func", "unknown"),
            "seq": self.coll.get("seq", 0),
            "channel_id": self.channel,
            "peer": self.peer,
            "is_send": int(self.is_send),
            "n_steps": self.n_steps,
            "trans_bytes": self.bytes,
            **sums,
        }


def trace_rows(events: list, file_name: str, max_rows: int) -> list[dict[str, Any]]:
    """One row per proxy op of a plugin trace (in probing's ``nccl.proxy_ops`` columns)."""
    file_comm, file_rank = name_ids(file_name)
    rows: list[dict[str, Any]] = []
    coll: dict[str, Any] = {}
    pending: dict[str, Any] = {}
    op: _Op | None = None
    for i, e in enumerate(events):
        if type(e) is not dict or not e:
            continue
        cat, name, ph, args = e.get("cat"), e.get("name"), e.get("ph"), e.get("args") or {}
        if type(args) is not dict:
            args = {}
        try:
            if cat in ("COLL", "P2P") and ph == "b":
                coll = {"func": str(name)[:64], "seq": _int_arg(args, "SeqNum", 0) if cat == "COLL" else 0}
                if "CommHash" in args:
                    coll["comm"] = comm_id(args["CommHash"])
                if "Rank" in args:
                    coll["rank"] = _int_arg(args, "Rank", file_rank if file_rank is not None else -1)
            elif cat in ("COLL", "P2P") and ph == "e":
                coll = {}
            elif cat == "PROXY" and name in ("ScheduleSend", "ScheduleRecv") and ph == "b":
                pending = args
            elif cat == "PROXY" and name in ("ProgressSend", "ProgressRecv"):
                if ph == "b":
                    op = _Op(args or pending, name == "ProgressSend", coll)
                elif ph == "e" and op is not None:
                    rows.append(op.row(_num(e.get("ts"), f"event {i} 'ts'"), file_comm, file_rank))
                    op = None
                    if len(rows) > max_rows:
                        raise DumpFormatError(f"more than {max_rows} proxy ops")
            elif cat == "NET" and op is not None and name in (*SEND_CHAIN, *RECV_CHAIN):
                ts = _num(e.get("ts"), f"event {i} 'ts'")
                step = e.get("id")
                if ph == "b":
                    op.steps.setdefault(step, {})[name] = ts
                elif ph == "e":
                    op.stops[step] = max(op.stops.get(step, 0.0), ts)
        except (ValueError, TypeError) as exc:
            raise DumpFormatError(f"event {i} ({str(name)[:40]}): {exc}") from None
    return rows
