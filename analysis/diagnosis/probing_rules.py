"""probing's ``nccl_culprit_victim`` skill, exactly as its SQL computes it, so its users
recognise the numbers (DeepLink-org/probing,
``python/probing/bundled_skills/nccl_culprit_victim/steps.yaml``).

What it does, and what Flight Deck does differently (see :mod:`.proxy_waits`):

- window: rows with ``seq >= max(seq) - seq_window`` over the whole table (every
  communicator and collective type at once; point-to-point rows carry seq 0) and
  ``peer >= 0``;
- edges: send rows summed per (rank, peer, coll_func, tp_rank, pp_rank, dp_rank), receive
  rows likewise, joined on sender/receiver *and* coll_func and the three role columns,
  which are each row's own rank's roles; no communicator key, so the local ranks of
  different communicators are summed together;
- a receive edge with ``recv_wait > 0`` is ``propagated_victim`` (root: the sender) when the
  matching send GPU wait ``G >= 0.5 * recv_wait``, else ``local_victim_or_network`` (root:
  the receiver) when ``recv_wait > 2 * G``, else ``ambiguous`` -- which cannot happen: for
  ``recv_wait > 0``, ``G < 0.5 * recv_wait`` already means ``recv_wait > 2 * G``;
- the root-culprit summary joins on (sender, receiver) only and sums the receive wait per
  attributed root; an interpretation rule calls a column "dominant" when max/min > 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SEQ_WINDOW = 20
ROLES = ["tp_rank", "pp_rank", "dp_rank"]
TOP = {"rank_wait_summary": 32, "topology_attribution": 15, "culprit_ranking": 10, "victim_ranking": 10}


def window(rows: pd.DataFrame, seq_window: int = SEQ_WINDOW) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows.loc[rows["seq"].to_numpy() >= rows["seq"].max() - seq_window]


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict("records"):
        out.append({k: (v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()})
    return out


def _edges(w: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    send = (
        w.loc[w["is_send"] == 1]
        .groupby(["rank", "peer", *keys], observed=True)
        .agg(
            send_gpu_wait_ns=("send_gpu_wait_ns", "sum"),
            send_peer_wait_ns=("send_peer_wait_ns", "sum"),
            send_wait_ns=("send_wait_ns", "sum"),
            send_ops=("rank", "size"),
        )
        .reset_index()
        .rename(columns={"rank": "sender_rank", "peer": "receiver_rank"})
    )
    recv = (
        w.loc[w["is_send"] == 0]
        .groupby(["rank", "peer", *keys], observed=True)
        .agg(
            recv_wait_ns=("recv_wait_ns", "sum"),
            recv_flush_wait_ns=("recv_flush_wait_ns", "sum"),
            recv_ops=("rank", "size"),
        )
        .reset_index()
        .rename(columns={"rank": "receiver_rank", "peer": "sender_rank"})
    )
    return send, recv


def _attribute(send: pd.DataFrame, recv: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    j = recv.merge(send, on=["sender_rank", "receiver_rank", *keys], how="left")
    j = j.loc[j["recv_wait_ns"] > 0].copy()
    g = j["send_gpu_wait_ns"].fillna(0)
    r = j["recv_wait_ns"]
    prop = g >= r * 0.5
    j["peer_send_gpu_wait_ns"] = g.astype(np.int64)
    j["peer_send_peer_wait_ns"] = j["send_peer_wait_ns"].fillna(0).astype(np.int64)
    j["attributed_root_rank"] = np.where(prop, j["sender_rank"], j["receiver_rank"])
    j["attribution_class"] = np.where(
        prop, "propagated_victim", np.where(r > g * 2, "local_victim_or_network", "ambiguous")
    )
    return j.sort_values("recv_wait_ns", ascending=False, kind="stable")


def _dominant(values: pd.Series) -> bool:
    v = values.to_numpy(dtype=float)
    v = v[v > 0]
    return bool(v.size and v.max() / v.min() > 2)


def probing_view(rows: pd.DataFrame, seq_window: int = SEQ_WINDOW) -> dict[str, Any]:
    """Every step of the skill, and its interpretation rules, on these rows."""
    w_all = window(rows, seq_window)
    w = w_all.loc[w_all["peer"].to_numpy() >= 0] if not w_all.empty else w_all
    if w.empty:
        return {"seq_window": seq_window, "rows_in_window": 0}
    summary = _rank_wait_summary(w_all)
    keys = ["coll_func", *ROLES]
    send, recv = _edges(w, keys)
    topo = _attribute(send, recv, keys)
    topology = _topology(topo)
    culprits = _culprits(send, keys)
    send2, recv2 = _edges(w, [])
    pairs = _attribute(send2, recv2, [])
    root_summary = _root_summary(pairs)
    top_topology = topology.head(TOP["topology_attribution"])
    top_culprits = culprits.head(TOP["culprit_ranking"])
    return {
        "seq_window": seq_window,
        "rows_in_window": len(w_all),
        "rank_wait_summary": _records(summary.head(TOP["rank_wait_summary"])),
        "topology_attribution": _records(top_topology),
        "culprit_ranking": _records(top_culprits),
        "victim_ranking": _records(topology.head(TOP["victim_ranking"])),
        "root_culprit_summary": _records(root_summary),
        "interpretation": {
            "culprit_dominates": _dominant(root_summary["total_attributed_recv_wait_ns"]),
            "victim_dominates": _dominant(top_topology["victim_wait_ns"]),
            "propagated_victim_chain": bool((top_topology["attribution_class"] == "propagated_victim").any()),
            "culprit_not_victim": bool(len(top_culprits) and top_culprits["culprit_wait_ns"].max() > 1_000_000),
        },
        "root_rank": int(root_summary["rank"].iloc[0]) if len(root_summary) else None,
    }


def _rank_wait_summary(w_all: pd.DataFrame) -> pd.DataFrame:
    summary = (
        w_all.groupby("rank", observed=True)
        .agg(
            proxy_ops=("rank", "size"),
            total_gpu_wait_ns=("send_gpu_wait_ns", "sum"),
            total_recv_wait_ns=("recv_wait_ns", "sum"),
            total_send_wait_ns=("send_wait_ns", "sum"),
            total_peer_wait_ns=("send_peer_wait_ns", "sum"),
        )
        .reset_index()
        .sort_values("total_recv_wait_ns", ascending=False, kind="stable")
    )
    return summary


def _topology(topo: pd.DataFrame) -> pd.DataFrame:
    topo_cols = [
        "receiver_rank",
        "sender_rank",
        "coll_func",
        *ROLES,
        "recv_wait_ns",
        "peer_send_gpu_wait_ns",
        "peer_send_peer_wait_ns",
        "attributed_root_rank",
        "attribution_class",
        "recv_ops",
    ]
    topology = topo[topo_cols].rename(columns={"receiver_rank": "rank", "sender_rank": "peer"})
    topology = topology.rename(columns={"recv_wait_ns": "victim_wait_ns", "recv_ops": "ops"})
    return topology


def _culprits(send: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    culprits = send.loc[send["send_gpu_wait_ns"] > 0].sort_values("send_gpu_wait_ns", ascending=False, kind="stable")
    culprits = culprits.rename(
        columns={
            "sender_rank": "rank",
            "receiver_rank": "peer",
            "send_gpu_wait_ns": "culprit_wait_ns",
            "send_peer_wait_ns": "peer_congestion_ns",
            "send_ops": "ops",
        }
    )[["rank", "peer", *keys, "culprit_wait_ns", "peer_congestion_ns", "ops"]]
    return culprits


def _root_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    root_summary = (
        pairs.groupby("attributed_root_rank")
        .agg(
            total_attributed_recv_wait_ns=("recv_wait_ns", "sum"),
            total_peer_send_gpu_wait_ns=("peer_send_gpu_wait_ns", "sum"),
            edges=("recv_wait_ns", "size"),
        )
        .reset_index()
        .rename(columns={"attributed_root_rank": "rank"})
        .sort_values("total_attributed_recv_wait_ns", ascending=False, kind="stable")
        .head(10)
    )
    return root_summary
