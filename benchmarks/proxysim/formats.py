"""The simulated proxy ops written as users get them.

- probing's ``global.nccl.proxy_ops`` (federated: ``_host``, ``_addr``, ``_rank``,
  ``_role``) and ``nccl.proxy_ops`` (one process's view, no global rank), exported as CSV
  (``comm_hash`` cast to a signed 64-bit integer, as users do with its unsigned columns), a
  JSON array of row objects (``probing query -f json``), JSON lines, or Parquet;
- ``nccl.inflight_ops`` rows for ops that started and never finished;
- NCCL's example profiler plugin traces, ``<prefix>_<commHash>_<rank>.json`` per
  communicator and local rank, in its event layout (``print_event.cc``: a Chrome trace
  array ending in ``{}``, the last 32 steps of each proxy op, microseconds from the
  plugin's own start);
- probing's mock rows (``PROBING_NCCL_MOCK``), rebuilt from its description: 8 ranks x 5
  AllReduce seqs on one communicator, rank 2 with a slow GPU, rank 5 with long receive
  waits, every row's peer ``(rank + 1) % 8`` -- receives included, which point the wrong way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from .job import EPOCH_NS, Job

FORMATS = ("csv", "json", "jsonl", "parquet")
PROBING_COLUMNS = [
    "ts",
    "rank",
    "tp_rank",
    "pp_rank",
    "dp_rank",
    "comm_hash",
    "coll_func",
    "seq",
    "channel_id",
    "peer",
    "is_send",
    "n_steps",
    "trans_bytes",
    "send_gpu_wait_ns",
    "send_peer_wait_ns",
    "send_wait_ns",
    "recv_wait_ns",
    "recv_flush_wait_ns",
]
FEDERATION = ["_host", "_addr", "_rank", "_role"]


def global_view(rows: pd.DataFrame) -> pd.DataFrame:
    out = rows.assign(_addr=rows["_host"] + ":8000", _role="worker")
    return out[PROBING_COLUMNS + FEDERATION]


def _signed(values: pd.Series) -> np.ndarray:
    return values.to_numpy(dtype=np.uint64).view(np.int64)


def write_table(df: pd.DataFrame, path: Path, fmt: str) -> Path:
    """One table in one export format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        out = df.copy()
        if "comm_hash" in out:
            out["comm_hash"] = _signed(out["comm_hash"])
        out.to_csv(path, index=False)
    elif fmt == "json":
        path.write_bytes(orjson.dumps(df.to_dict("records"), option=orjson.OPT_SERIALIZE_NUMPY))
    elif fmt == "jsonl":
        with open(path, "wb") as f:
            f.writelines(orjson.dumps(rec, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n" for rec in df.to_dict("records"))
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return path


def write_global(rows: pd.DataFrame, folder: Path, fmt: str) -> Path:
    return write_table(global_view(rows), folder / f"global.nccl.proxy_ops.{fmt}", fmt)


def write_per_process(rows: pd.DataFrame, folder: Path, fmt: str) -> list[Path]:
    """Each process's own ``nccl.proxy_ops``: its rows, communicator-local ranks only."""
    return [
        write_table(part[PROBING_COLUMNS], folder / f"nccl.proxy_ops.{host}.{fmt}", fmt)
        for host, part in rows.groupby("_host", sort=True)
    ]


def inflight_rows(job: Job, stuck: int, comm: str, func: str, seq: int, age_s: float = 30.0) -> pd.DataFrame:
    """``nccl.inflight_ops`` when ``stuck`` never joins ``func`` seq ``seq`` of ``comm``: every
    other member's collective is in flight, and its ring successor's receive from it."""
    c = job.comms[comm]
    local = c.members.index(stuck)
    now = EPOCH_NS + 10**12
    age = int(age_s * 1e9)
    recs = []
    for i, g in enumerate(c.members):
        if g == stuck:
            continue
        recs.append((now, i, c.hash, func, seq, "coll", -1, -1, -1, now - age, age, g, f"node{g:04d}"))
    succ = (local + 1) % len(c.members)
    g = c.members[succ]
    recs.append((now, succ, c.hash, func, seq, "proxy_op", 0, local, 0, now - age, age, g, f"node{g:04d}"))
    cols = [
        "ts",
        "rank",
        "comm_hash",
        "coll_func",
        "seq",
        "kind",
        "channel_id",
        "peer",
        "is_send",
        "start_ns",
        "age_ns",
    ]
    return pd.DataFrame(recs, columns=[*cols, "_rank", "_host"]).astype({"comm_hash": np.uint64})


def probing_mock_rows(ranks: int = 8, seqs: int = 5) -> pd.DataFrame:
    """probing's mock ``nccl.proxy_ops`` (its ``PROBING_NCCL_MOCK=1`` data, as its source
    describes it): one AllReduce communicator 0xDEADBEEF; rank 2 sends with 8 ms of GPU
    wait and receives on channel 1; rank 5 sends and receives 12 ms; every other rank only
    sends (200 us GPU wait); the peer is ``(rank + 1) % 8`` on every row."""
    recs = []
    base = EPOCH_NS
    for seq in range(seqs):
        ts = base + seq * 10_000_000
        for r in range(ranks):
            roles = (r % 2, (r // 2) % 2, r // 4)
            peer = (r + 1) % ranks

            def row(t, chan, is_send, gpu=0, peerw=0, send=0, recv=0, flush=0, r=r, roles=roles, peer=peer, seq=seq):
                return [
                    t,
                    r,
                    *roles,
                    0xDEADBEEF,
                    "AllReduce",
                    seq,
                    chan,
                    peer,
                    is_send,
                    4,
                    1 << 20,
                    gpu,
                    peerw,
                    send,
                    recv,
                    flush,
                ]

            if r == 2:
                recs.append(row(ts, 0, 1, gpu=8_000_000, send=500_000, recv=200_000))
                recs.append(row(ts + 1000, 1, 0, recv=300_000))
            elif r == 5:
                recs.append(row(ts, 0, 1, gpu=100_000, recv=150_000))
                recs.append(row(ts + 1000, 0, 0, recv=12_000_000, flush=800_000))
            else:
                recs.append(row(ts, 0, 1, gpu=200_000, peerw=50_000, send=300_000, recv=250_000))
    return pd.DataFrame(recs, columns=PROBING_COLUMNS).astype({"comm_hash": np.uint64})


# -- NCCL's example plugin traces ------------------------------------------------------------


class _Trace:
    """One plugin file's events, ids counted per category as the plugin does."""

    def __init__(self, start_us: float) -> None:
        self.start = start_us
        self.events: list[dict] = []
        self.ids: dict[str, int] = defaultdict(int)

    def ev(self, name: str, cat: str, ph: str, t_us: float, ident: int, args: dict | None = None) -> None:
        e = {"name": name, "cat": cat, "ph": ph, "id": ident, "pid": 4242, "tid": 1, "ts": round(t_us - self.start, 3)}
        if args is not None:
            e["args"] = args
        self.events.append(e)


def _proxy_op(tr: _Trace, conn, c: int, m: int, is_send: bool, peer: int, chan: int) -> None:
    side = conn.send if is_send else conn.recv
    first = side["posted"][c, m, 0]
    args = {"Channel": chan, "Peer": peer, "Steps": conn.n_steps, "ChunkSize": 1 << 19, "transSize": 1 << 19}
    name = "Send" if is_send else "Recv"
    pid = tr.ids["proxy"]
    tr.ids["proxy"] += 1
    tr.ev(f"Schedule{name}", "PROXY", "b", first - 1.0, pid, args)
    tr.ev(f"Schedule{name}", "PROXY", "e", first, pid)
    tr.ev(f"Progress{name}", "PROXY", "b", first, pid, args)
    kept = side["posted"].shape[-1]
    order = [(conn.n_steps - kept + k) for k in range(kept)]
    for k in sorted(range(kept), key=lambda k: order[k] % 32):  # the plugin prints its 32-step ring in slot order
        step = order[k]
        sid = tr.ids["step"]
        tr.ids["step"] += 1
        if is_send:
            t = [side[x][c, m, k] for x in ("posted", "gpu_ready", "cleared", "done")]
            for i, state in enumerate(("SendGpuWait", "SendPeerWait", "SendWait")):
                tr.ev(state, "NET", "b", t[i], sid, {"Step": step})
                tr.ev(state, "NET", "e", t[i + 1], sid)
        else:
            t = [side[x][c, m, k] for x in ("posted", "arrived", "flushed", "consumed")]
            for i, state in enumerate(("RecvWait", "RecvFlushWait", "RecvGpuWait")):
                tr.ev(state, "NET", "b", t[i], sid, {"Step": step})
                tr.ev(state, "NET", "e", t[i + 1], sid)
    tr.ev(f"Progress{name}", "PROXY", "e", float(side["done" if is_send else "consumed"][c, m].max()), pid)


def write_plugin_traces(job: Job, steps: list[dict], folder: Path, prefix: str = "nccl_profile") -> list[Path]:
    """``<prefix>_<commHash>_<rank>.json`` for every communicator and local rank."""
    rng = np.random.default_rng(7)
    traces: dict[tuple[int, int], _Trace] = {}
    ops: dict[tuple[int, int, int], list] = defaultdict(list)  # (comm hash, local rank, op) -> proxy ops
    meta: dict[tuple[int, int, int], tuple] = {}
    for rec in steps:
        conn, chans = rec["conn"], rec["chans"]
        n_inst, n_conn = conn.send["posted"].shape[:2]
        for c in range(n_inst):
            comm = rec["comms"][c // chans]
            for m in range(n_conn):
                for is_send, local, peer in ((True, conn.src[m], conn.dst[m]), (False, conn.dst[m], conn.src[m])):
                    key = (comm.hash, int(local), rec["op"])
                    ops[key].append((conn, c, m, is_send, int(peer), c % chans))
                    func = ("Send" if is_send else "Recv") if rec["func"] == "Send" else rec["func"]
                    meta[key] = (func, rec["seq"], rec["func"] == "Send", int(peer))
    for (comm_hash, local, op), items in sorted(ops.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        tr = traces.setdefault((comm_hash, local), _Trace(-rng.uniform(1_000, 50_000)))
        func, seq, p2p, peer = meta[(comm_hash, local, op)]
        start = min(float((it[0].send if it[3] else it[0].recv)["posted"][it[1], it[2], 0]) for it in items) - 5.0
        stop = max(float((it[0].send["done"] if it[3] else it[0].recv["consumed"])[it[1], it[2]].max()) for it in items)
        cat = "P2P" if p2p else "COLL"
        cid = tr.ids[cat]
        tr.ids[cat] += 1
        if p2p:
            args = {
                "CommHash": comm_hash,
                "Rank": local,
                "Peer": peer,
                "Count": 1 << 18,
                "Datatype": "ncclBfloat16",
                "nChannels": 1,
            }
        else:
            args = {
                "SeqNum": seq,
                "CommHash": comm_hash,
                "Rank": local,
                "Count": 1 << 20,
                "Datatype": "ncclFloat32",
                "Algorithm": "RING",
                "Protocol": "SIMPLE",
                "nChannels": 2,
            }
        tr.ev(func, cat, "b", start, cid, args)
        for conn, c, m, is_send, peer_, chan in items:
            _proxy_op(tr, conn, c, m, is_send, peer_, chan)
        tr.ev(func, cat, "e", stop, cid)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for (comm_hash, local), tr in traces.items():
        path = folder / f"{prefix}_{comm_hash}_{local}.json"
        with open(path, "w") as f:  # the plugin's layout: one event per line, then {}
            f.write("[\n")
            f.writelines(json.dumps(e) + ",\n" for e in tr.events)
            f.write("{}]\n")
        written.append(path)
    return written
