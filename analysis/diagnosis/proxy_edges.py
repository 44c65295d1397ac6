"""Proxy-op waits as edges: per communicator and op kind, sender -> receiver, both sides joined.

An edge joins the sender's send rows (``rank`` = sender, ``peer`` = receiver) with the
receiver's receive rows (``rank`` = receiver, ``peer`` = sender) of the same communicator
only; ranks are communicator-local, so two communicators never mix. Waits are compared
per op, as the excess over a baseline (a low quantile of comparable edges, see
:func:`_baseline_keys`: a bandwidth-bound ring waits a lot everywhere, a pipeline's
backward edge more than its forward one), and an edge waits when the excess of its receive
wait, or of its sender's credit wait, clears an absolute noise floor and a share of the
baseline.

An edge that waits only on credits (its sender waited for the receiver's clear-to-send,
while the receive, once posted, got its data as usual) is ``receiver_congestion``: the
receiver posted its receives late. An edge whose receive waited is classed by what its
sender did meanwhile, per op (probing's rule, ``G >= 0.5 R``, and the like for credits;
the baseline is not subtracted here: a sender's GPU wait caused by waiting on its own
inputs is as large as the wait it causes, healthy or not):

- ``propagated``: the sender's sends waited on its GPU as long: the sender was late itself;
- ``receiver_congestion``: the sender waited for the receiver's clear-to-send instead
  (peer-credit wait) longer than its sends then took: the receiver is congested;
- ``slow_link``: the sender was ready, yet the data came late (its sends took long, or it
  shows no wait at all): the link or a NIC on it is slow;
- ``unmatched``: the sender reported no send to this receiver: nothing to compare.

A send edge whose receiver wrote no receive rows (``send_only``) still counts when its
GPU wait clears the floor: the walk starts from it as from a propagated edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

FLOOR_NS = 2_000_000
"""Absolute noise floor of an edge's excess wait, per op (2 ms)."""
RELATIVE_FLOOR = 0.25
"""...and at least this share of the baseline wait (of a communicator's own edges)..."""
POOLED_RELATIVE_FLOOR = 0.5
"""...or of the same position in its sibling communicators: two of them slow at one
position pull the median down, and their healthy siblings must not look late for it."""
BASELINE_QUANTILE = 0.1
MIN_POOL = 3
"""Communicators of one shape needed to compare them position by position (a median of two is no majority)."""
PROPAGATED_SHARE = 0.5  # probing: send_gpu_wait >= 0.5 * recv_wait

SEND_SUMS = {"send_gpu_wait_ns": "gpu", "send_peer_wait_ns": "peerw", "send_wait_ns": "sendw"}
RECV_SUMS = {"recv_wait_ns": "recv", "recv_flush_wait_ns": "flush"}

NORMAL, PROPAGATED, CONGESTION, SLOW_LINK, UNMATCHED, SEND_ONLY = (
    "normal",
    "propagated",
    "receiver_congestion",
    "slow_link",
    "unmatched",
    "send_only",
)


@dataclass(frozen=True, slots=True)
class Thresholds:
    floor_ns: float = FLOOR_NS
    relative: float = RELATIVE_FLOOR
    pooled_relative: float = POOLED_RELATIVE_FLOOR


P2P_FUNCS = ("Send", "Recv")


def op_kind(coll_func: pd.Series) -> np.ndarray:
    """The op an edge's rows belong to: the collective, or ``p2p`` for Send/Recv (the
    sender's rows say Send, the receiver's Recv)."""
    funcs = coll_func.astype(str).to_numpy()
    return np.where(np.isin(funcs, P2P_FUNCS), "p2p", funcs)


def _side(rows: pd.DataFrame, is_send: int, sums: dict[str, str], me: str, other: str) -> pd.DataFrame:
    side = rows.loc[rows["is_send"].to_numpy() == is_send]
    kind = op_kind(side["coll_func"])
    inst = np.where(kind == "p2p", -1, side["seq"].to_numpy())
    side = side.assign(comm=side["comm_hash"].astype(str), kind=kind, inst=inst)
    g = side.groupby(["comm", "kind", "inst", "rank", "peer"], observed=True, sort=False)
    out = g[list(sums)].sum().rename(columns=sums)
    out[f"{me}_ops"] = g.size()
    out[f"{me}_ts"] = g["ts"].median()
    return out.reset_index().rename(columns={"rank": me, "peer": other})


EDGE_KEY = ["comm", "kind", "inst", "sender", "receiver"]
INSTANCE = ["comm", "kind", "inst"]


def build_edges(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per op instance and (sender, receiver): sums, op counts (channels) and
    median stop times of both sides. An instance is one collective (communicator, kind,
    seq), or all point-to-point traffic of a communicator (its rows all carry seq 0). A
    rank's sends in one collective depend on its receives in that collective only, and
    one collective runs one algorithm (a ring, a tree), so the walk stays in an instance."""
    send = _side(rows, 1, SEND_SUMS, "sender", "receiver")
    recv = _side(rows, 0, RECV_SUMS, "receiver", "sender")
    edges = send.merge(recv, on=EDGE_KEY, how="outer")
    for c in ("gpu", "peerw", "sendw", "recv", "flush", "sender_ops", "receiver_ops"):
        edges[c] = edges[c].fillna(0)
    return edges.sort_values(EDGE_KEY, ignore_index=True)


def _per_op(total: pd.Series, ops: pd.Series) -> np.ndarray:
    ops = ops.to_numpy(dtype=float)
    return np.divide(total.to_numpy(dtype=float), ops, out=np.zeros(len(ops)), where=ops > 0)


def _baseline_keys(edges: pd.DataFrame) -> pd.Series:
    """What an edge's wait is compared with.

    Communicators of the same shape (size and op kinds: the data-parallel groups of every
    stage, the pipelines of every replica) are each other's reference, op by op and edge
    position by position, against their median (most communicators are healthy): a pipeline's
    backward edge waits more than its forward one by design, a tree's edges away from the
    root more than those toward it. A communicator of its own shape (the world) is its own
    reference, every edge of an op against a low quantile of the others (a slow rank in a
    ring makes nearly every edge wait).
    """
    ends = pd.DataFrame(
        {
            "comm": np.concatenate([edges["comm"].to_numpy(), edges["comm"].to_numpy()]),
            "rank": np.concatenate([edges["sender"].to_numpy(), edges["receiver"].to_numpy()]),
        }
    )
    kinds = edges.groupby("comm")["kind"].agg(lambda s: ",".join(sorted(set(s))))
    shape = edges["comm"].map(ends.groupby("comm")["rank"].nunique()).astype(str) + ":" + edges["comm"].map(kinds)
    comms_per_shape = edges.groupby(shape)["comm"].nunique()
    pooled = shape.map(comms_per_shape) >= MIN_POOL
    op = edges["kind"] + ":" + edges["inst"].astype(str)
    position = shape + ":" + op + ":" + edges["sender"].astype(str) + ">" + edges["receiver"].astype(str)
    return pd.Series(np.where(pooled, "pos:" + position, "comm:" + _own_op(edges)), index=edges.index)


def _own_op(edges: pd.DataFrame) -> pd.Series:
    """Each edge's op in its own communicator: ``comm:kind:instance``."""
    return edges["comm"] + ":" + edges["kind"] + ":" + edges["inst"].astype(str)


def classify(edges: pd.DataFrame, th: Thresholds = Thresholds()) -> pd.DataFrame:
    """Adds per-op means, excesses over the baseline (``x_*``), ``waiting`` and ``cls``."""
    e = edges.copy()
    for col, ops in (("recv", "receiver_ops"), ("flush", "receiver_ops")):
        e[f"{col}_op"] = _per_op(e[col], e[ops])
    for col in ("gpu", "peerw", "sendw"):
        e[f"{col}_op"] = _per_op(e[col], e["sender_ops"])
    key = _baseline_keys(e)
    share = np.where(key.str.startswith("pos:").to_numpy(), th.pooled_relative, th.relative)
    for col in ("gpu", "peerw", "sendw"):
        _excess(e, col, key, e["sender_ops"] > 0)
    # Credits are also compared with what the op's receives wait in the communicator itself
    # (a low quantile, like a communicator of its own shape is compared): in a
    # bandwidth-bound ring whose receives wait 90 ms an op, a sender whose receiver is a
    # moment behind waits several ms for credits, while a sibling at the same position did
    # not; where receives take 60 us, 4 ms of credit waits stand out.
    scale = np.maximum(share * e["base_peerw"], th.relative * _own_recv_scale(e))
    credit_waits = (e["sender_ops"] > 0) & (e["x_peerw"] >= np.maximum(th.floor_ns, scale))
    # A receive posted late (its sender waited for the credits) gets its data at once: its
    # short wait says nothing of how long receives wait here, and would lower the baseline.
    _excess(e, "recv", key, (e["receiver_ops"] > 0) & ~credit_waits)
    recv_waits = (e["receiver_ops"] > 0) & (e["x_recv"] >= np.maximum(th.floor_ns, share * e["base_recv"]))
    e["credit_waits"] = credit_waits
    e["credit_only"] = credit_waits & ~recv_waits
    e["waiting"] = recv_waits | credit_waits
    # the sender's GPU was late with the data (beyond the noise of its peers)
    e["sender_late"] = (e["sender_ops"] > 0) & (e["x_gpu"] >= np.maximum(th.floor_ns, share * e["base_gpu"]))
    # a send whose receiver wrote no rows (lost, or its rows name another peer): only its GPU wait speaks
    e["send_only"] = (e["receiver_ops"] == 0) & e["sender_late"]
    matched = e["sender_ops"].to_numpy() > 0
    r, g, p, s = (e[c].to_numpy() for c in ("recv_op", "gpu_op", "peerw_op", "sendw_op"))
    propagated = g >= PROPAGATED_SHARE * r
    congested = p > s  # the sender waited for credits longer than its sends took
    by_sender = np.where(propagated, PROPAGATED, np.where(congested, CONGESTION, SLOW_LINK))
    mode = np.where(~matched, UNMATCHED, np.where(e["credit_only"].to_numpy(), CONGESTION, by_sender))
    e["mode"] = mode  # what the edge's wait is, whether or not it clears the floor
    e["cls"] = np.where(e["waiting"].to_numpy(), mode, np.where(e["send_only"].to_numpy(), SEND_ONLY, NORMAL))
    return e


def _own_recv_scale(e: pd.DataFrame) -> np.ndarray:
    """Per edge: a low quantile of the per-op receive waits of its communicator's op."""
    own = _own_op(e)
    present = e["receiver_ops"] > 0
    low = e.loc[present, "recv_op"].groupby(own[present]).quantile(BASELINE_QUANTILE)
    return own.map(low).fillna(0.0).to_numpy()


def _excess(e: pd.DataFrame, col: str, key: pd.Series, sample: pd.Series) -> None:
    """``base_<col>``: the baseline of each edge's per-op wait, from the edges in ``sample``
    with its key (their median where communicators are compared position by position, else a
    low quantile); ``x_<col>``: the excess over it."""
    values = e.loc[sample, f"{col}_op"].groupby(key[sample])
    base = pd.concat([values.median(), values.quantile(BASELINE_QUANTILE)], axis=1)
    base = pd.Series(np.where(base.index.str.startswith("pos:"), base.iloc[:, 0], base.iloc[:, 1]), base.index)
    e[f"base_{col}"] = key.map(base).fillna(0.0).to_numpy()
    e[f"x_{col}"] = np.maximum(0.0, e[f"{col}_op"] - e[f"base_{col}"])


def aggregate(edges: pd.DataFrame) -> pd.DataFrame:
    """Instance edges summed per (comm, sender, receiver), for reading: sums, ops, the
    excess it explains, whether any instance waited, and the class and root that account
    for most of its attributed wait."""
    e = edges.assign(weight=edges["attributed_ns"].where(edges["waiting"] | edges["send_only"], 0.0))
    keys = ["comm", "sender", "receiver"]
    sums = ["gpu", "peerw", "sendw", "recv", "flush", "sender_ops", "receiver_ops", "attributed_ns"]
    out = e.groupby(keys, sort=True)[sums].sum()
    out["waiting"] = e.groupby(keys)["waiting"].any() | e.groupby(keys)["send_only"].any()
    out["kinds"] = e.groupby(keys)["kind"].agg(lambda s: ",".join(sorted(set(s))))
    heaviest = e.sort_values("weight", ascending=False, kind="stable").drop_duplicates(keys).set_index(keys)
    out["cls"] = heaviest["cls"].where(out["waiting"], NORMAL)
    out["root"] = heaviest["root"].where(out["waiting"], None)
    for col, ops in (("recv", "receiver_ops"), ("flush", "receiver_ops"), ("gpu", "sender_ops")):
        out[f"{col}_op"] = _per_op(out[col], out[ops])
    for col in ("peerw", "sendw"):
        out[f"{col}_op"] = _per_op(out[col], out["sender_ops"])
    out["x_recv"] = _per_op(out["attributed_ns"], out["receiver_ops"])
    return out.reset_index()
