"""What the dashboard shows of the proxy-op waits and the health checks: the rank x peer
matrix, one edge's rows, the culprit -> victims chain, the rankings, and a mark per rank."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..diagnosis.proxy_waits import Finding, ProxyWaits
from ..diagnosis.proxy_walk import LINK, RECEIVER, UNRESOLVED
from ..model.health import DEVICE_WORDS, RankHealth

METRICS = {
    "receive wait": "recv_op",
    "send GPU wait": "gpu_op",
    "send credit wait": "peerw_op",
}
"""Matrix cell values: per-op means (ns) of the edge, summed over its communicators."""

ROW_COLUMNS = [
    "comm_hash",
    "coll_func",
    "seq",
    "channel_id",
    "is_send",
    "rank",
    "peer",
    "g_rank",
    "g_peer",
    "send_gpu_wait_ns",
    "send_peer_wait_ns",
    "send_wait_ns",
    "recv_wait_ns",
    "recv_flush_wait_ns",
    "ts",
    "source",
]


@dataclass(frozen=True, slots=True)
class Matrix:
    """Receivers down, senders across; ``cells`` (edge positions) are what can be clicked."""

    receivers: np.ndarray
    senders: np.ndarray
    z: np.ndarray
    """ms per op; NaN where no edge."""
    cells: pd.DataFrame
    """One row per edge: receiver, sender, row, col, value (ms), class."""


def default_metric(pw: ProxyWaits) -> str:
    """The matrix to show first: the credit waits where a receiver is named on them alone
    (its receive waits are ordinary, so the receive-wait matrix shows nothing), else the
    receive waits."""
    if any(f.kind == RECEIVER and f.only_credits for f in pw.findings):
        return "send credit wait"
    return "receive wait"


def wait_matrix(pw: ProxyWaits, metric: str = "receive wait", max_ranks: int = 512) -> Matrix | None:
    """The ``metric`` of every (receiver, sender) edge; None without edges. Past ``max_ranks``
    only the ranks of waiting edges (and their peers) are kept."""
    e = pw.edges
    if e.empty:
        return None
    col = METRICS[metric]
    agg = e.groupby(["receiver", "sender"], as_index=False).agg(
        value=(col, "sum"), waiting=("waiting", "any"), cls=("cls", lambda s: ",".join(sorted(set(s) - {"normal"})))
    )
    ranks = np.union1d(agg["receiver"], agg["sender"])
    if len(ranks) > max_ranks:
        hot = agg.loc[agg["waiting"]]
        ranks = np.union1d(hot["receiver"], hot["sender"])[:max_ranks]
        agg = agg.loc[agg["receiver"].isin(ranks) & agg["sender"].isin(ranks)]
    pos = {int(r): i for i, r in enumerate(ranks)}
    z = np.full((len(ranks), len(ranks)), np.nan)
    rows = agg["receiver"].map(pos).to_numpy()
    cols = agg["sender"].map(pos).to_numpy()
    z[rows, cols] = agg["value"].to_numpy() / 1e6
    cells = agg.assign(row=rows, col=cols, value=agg["value"] / 1e6).reset_index(drop=True)
    return Matrix(ranks, ranks, z, cells)


def edge_rows(pw: ProxyWaits, sender: int, receiver: int, limit: int = 2000) -> pd.DataFrame:
    """The proxy-op rows behind one edge: the sender's sends to the receiver and the
    receiver's receives from it, every communicator."""
    r = pw.rows
    if r.empty:
        return pd.DataFrame(columns=ROW_COLUMNS)
    sends = (r["g_rank"] == sender) & (r["g_peer"] == receiver) & (r["is_send"] == 1)
    recvs = (r["g_rank"] == receiver) & (r["g_peer"] == sender) & (r["is_send"] == 0)
    out = r.loc[(sends | recvs).to_numpy(), [c for c in ROW_COLUMNS if c in r.columns]]
    return out.sort_values(["comm_hash", "seq", "is_send"], kind="stable").head(limit).reset_index(drop=True)


def edge_summary(pw: ProxyWaits, sender: int, receiver: int) -> pd.DataFrame:
    """The edge per communicator: sums, class and root."""
    e = pw.edges
    hit = e.loc[(e["sender"] == sender) & (e["receiver"] == receiver)]
    return pd.DataFrame(
        {
            "communicator": hit["comm"],
            "ops": hit["kinds"],
            "receive wait (ms/op)": hit["recv_op"] / 1e6,
            "send GPU wait (ms/op)": hit["gpu_op"] / 1e6,
            "credit wait (ms/op)": hit["peerw_op"] / 1e6,
            "send wait (ms/op)": hit["sendw_op"] / 1e6,
            "class": hit["cls"],
            "root": [_root_text(k, r) for k, r in zip(hit["root"], hit["root_ranks"])],
        }
    ).reset_index(drop=True)


def _root_text(root, ranks) -> str:
    if root is None:
        return ""
    return f"{root.kind} {'->'.join(map(str, ranks))}"


def chain(pw: ProxyWaits, finding: Finding) -> pd.DataFrame:
    """The waiting edges whose wait began at ``finding``: sender -> receiver, with the wait."""
    e = pw.edges
    if e.empty:
        return pd.DataFrame(columns=["sender", "receiver", "wait_ms", "cls"])
    mine = e["root_ranks"].map(lambda r: r == finding.ranks) & e["root"].map(
        lambda r: r is not None and r.kind == finding.kind
    )
    hit = e.loc[mine & e["comm"].isin(finding.comms)]
    out = hit.groupby(["sender", "receiver"], as_index=False).agg(
        wait_ms=("attributed_ns", "sum"), cls=("cls", "first")
    )
    out["wait_ms"] = out["wait_ms"] / 1e6
    return out.sort_values("wait_ms", ascending=False, kind="stable").reset_index(drop=True)


def findings_table(pw: ProxyWaits) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "finding": [f.kind + (" (cycle: a guess)" if f.ambiguous else "") for f in pw.findings],
            "ranks": [("->" if f.kind == LINK else ", ").join(map(str, f.ranks)) for f in pw.findings],
            "explains (ms)": [f.wait_ns / 1e6 for f in pw.findings],
            "victims": [len(f.victims) for f in pw.findings],
            "communicators": [len(f.comms) for f in pw.findings],
            "global ranks": [f.is_global for f in pw.findings],
        }
    )


def rankings(pw: ProxyWaits, top: int = 10) -> dict[str, pd.DataFrame]:
    """Ranks by send GPU wait (culprits' signal), by receive wait (victims'), and receivers by
    the credit waits of their senders (a congested receive side's signal)."""
    e = pw.edges
    if e.empty:
        return {}
    gpu = e.groupby("sender", as_index=False)["gpu"].sum().sort_values("gpu", ascending=False).head(top)
    recv = e.groupby("receiver", as_index=False)["recv"].sum().sort_values("recv", ascending=False).head(top)
    credit = e.groupby("receiver", as_index=False)["peerw"].sum().sort_values("peerw", ascending=False).head(top)
    return {
        "send GPU wait (culprit signal)": gpu.rename(columns={"sender": "rank", "gpu": "total ns"}),
        "receive wait (victim signal)": recv.rename(columns={"receiver": "rank", "recv": "total ns"}),
        "credit wait of its senders (congested receiver signal)": credit.rename(
            columns={"receiver": "rank", "peerw": "total ns"}
        ),
        "probing's root-culprit summary (local ranks, all communicators)": pd.DataFrame(
            pw.probing.get("root_culprit_summary", [])
        ),
    }


def rank_marks(health: dict[int, RankHealth], pw: ProxyWaits | None) -> dict[int, str]:
    """A short mark per rank for heatmap rows: a failed health check, a proxy-wait culprit."""
    marks: dict[int, list[str]] = {}
    for r, h in health.items():
        bad = [DEVICE_WORDS[d] for d in h.failed_devices()]
        if bad:
            marks.setdefault(r, []).append(f"{'+'.join(bad)} check failed")
    if pw is not None and pw.ranks_are_global:
        for f in pw.findings:
            if f.kind == UNRESOLVED or f.ambiguous:
                continue
            for r in f.ranks:
                marks.setdefault(r, []).append("waits: slow link" if f.kind == LINK else f"waits: {f.kind}")
    return {r: " · ".join(m) for r, m in marks.items()}
