"""NCCL proxy-op waits: who waited on whom, and where the waiting began.

Per communicator (local ranks never mix): edges (:mod:`.proxy_edges`), their classes, and
each waiting edge walked back to its root (:mod:`.proxy_walk`); then the roots of every
communicator in global ranks where they map (:mod:`.proxy_ranks`), merged: a slow GPU
seen in three communicators is one finding. probing's own rules run beside it on the same
rows (:mod:`.probing_rules`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..ingest.proxy_ops import ProxyData
from ..model.groups import GroupIndex
from .probing_rules import SEQ_WINDOW, probing_view
from .proxy_edges import INSTANCE, Thresholds, aggregate, build_edges, classify
from .proxy_ranks import CommMap, map_comms
from .proxy_walk import LINK, RECEIVER, SLOW_GPU, UNRESOLVED, Root, attributed_wait, settle_cycles, walk

FINDINGS = (SLOW_GPU, LINK, RECEIVER)
NONE = "none"


@dataclass(frozen=True, slots=True)
class Finding:
    """One root, merged over the communicators it shows in."""

    kind: str
    ranks: tuple[int, ...]
    """(rank,) for a slow GPU or a congested receiver, (sender, receiver) for a link."""
    comms: tuple[str, ...]
    wait_ns: float
    """The excess receive wait it explains, over the window, summed over its edges."""
    victims: tuple[int, ...]
    edges: int
    ambiguous: bool = False
    is_global: bool = True
    credit_senders: tuple[int, ...] = ()
    """For a congested receiver: the ranks whose sends waited for its credits."""
    only_credits: bool = False
    """...while its receives from them were ordinary: only the credits waited."""

    @property
    def link_fits_too(self) -> bool:
        """One sender alone waited, on credits only: a slow link between the two fits as well
        (the clear-to-send travels on it). Where the receive waited too, the edge's own class
        has already told a congested receiver (credit waits) from a slow link (send waits)."""
        return self.kind == RECEIVER and self.only_credits and len(self.credit_senders) == 1


@dataclass(slots=True)
class ProxyWaits:
    """The verdict of the proxy-op waits, with the edges it rests on."""

    finding: str
    culprit_ranks: list[int]
    victim_ranks: list[int]
    suspect_links: list[tuple[int, int]]
    findings: list[Finding]
    edges: pd.DataFrame
    """Every edge of every communicator, summed over its ops: sums, attributed excess, class,
    root (global ranks where mapped; ``local_sender``/``local_receiver`` as written)."""
    probing: dict[str, Any]
    ranks_are_global: bool
    comms: dict[str, CommMap]
    rows: pd.DataFrame = field(repr=False)
    """The rows analysed (window applied), with ``g_rank``/``g_peer`` columns."""
    inflight: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    files: list[str] = field(default_factory=list)
    seq_window: int = SEQ_WINDOW


def windowed(rows: pd.DataFrame, seq_window: int) -> pd.DataFrame:
    """The last ``seq_window`` sequence numbers of each (communicator, collective); point-to-
    point rows (all seq 0) stay. Rows without a peer, or with themselves as peer, go."""
    if rows.empty:
        return rows
    keys = [rows["comm_hash"].astype(str), rows["coll_func"].astype(str)]
    top = rows.groupby(keys, observed=True)["seq"].transform("max")
    keep = (rows["seq"] >= top - seq_window) & (rows["peer"] >= 0) & (rows["peer"] != rows["rank"])
    return rows.loc[keep.to_numpy()]


def _to_global(df: pd.DataFrame, comms: dict[str, CommMap], cols: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    comm = df["comm"].astype(str).to_numpy()
    for col in cols:
        local = df[col].to_numpy(dtype=np.int64)
        out[col] = np.array([comms[c].rank(int(r)) for c, r in zip(comm, local)], dtype=np.int64)
    return out


def _edges_with_roots(rows: pd.DataFrame, comms: dict[str, CommMap], th: Thresholds) -> pd.DataFrame:
    edges = classify(build_edges(rows), th)
    edges["attributed_ns"] = attributed_wait(edges)
    roots = pd.Series([None] * len(edges), index=edges.index, dtype=object)
    for _, part in edges.groupby(INSTANCE, sort=False):
        roots.loc[part.index] = walk(part)
    edges["root"] = slow_gpus_free_credits_late(edges, settle_cycles(edges, roots), comms)
    return edges


def _place(comms: dict[str, CommMap], comm: str, ranks: tuple[int, ...]) -> tuple:
    """``ranks`` of ``comm`` as they are compared across communicators: ``(global ranks,)``
    where they map, else ``(local ranks, comm)`` (local ranks of two communicators never mix)."""
    cm = comms[comm]
    mapped = tuple(cm.rank(int(r)) for r in ranks)
    return (mapped,) if cm.is_global else (mapped, comm)


def slow_gpus_free_credits_late(edges: pd.DataFrame, roots: pd.Series, comms: dict[str, CommMap]) -> pd.Series:
    """A rank named a slow GPU anywhere (a firm root) frees its receive slots late too: where
    only its senders' credit waits show it (an op where its own sends happened not to wait),
    that is its slow GPU as well, not a congested receive side. Ranks are compared in global
    ranks where they map, else within their communicator."""
    slow = {
        _place(comms, c, r.ranks)
        for c, r in zip(edges["comm"], roots)
        if r is not None and r.kind == SLOW_GPU and not r.ambiguous
    }
    folded = [
        Root(SLOW_GPU, r.ranks) if r is not None and r.kind == RECEIVER and _place(comms, c, r.ranks) in slow else r
        for c, r in zip(edges["comm"], roots)
    ]
    return pd.Series(folded, index=roots.index, dtype=object)


def _readable(edges: pd.DataFrame, comms: dict[str, CommMap]) -> pd.DataFrame:
    """Instance edges summed per (comm, sender, receiver), in global ranks where they map."""
    edges = aggregate(edges)
    mapped = _to_global(edges, comms, ("sender", "receiver"))
    edges["local_sender"], edges["local_receiver"] = edges["sender"], edges["receiver"]
    edges["sender"], edges["receiver"] = mapped["sender"], mapped["receiver"]
    edges["global"] = edges["comm"].map(lambda c: comms[c].is_global)
    edges["root_ranks"] = [
        None if root is None else tuple(comms[c].rank(r) for r in root.ranks)
        for c, root in zip(edges["comm"], edges["root"])
    ]
    return edges


def _merge(edges: pd.DataFrame, comms: dict[str, CommMap], floor_ns: float) -> list[Finding]:
    """Roots of every instance edge, merged (global ranks where mapped). A root must explain
    more than the noise floor per op of some communicator and kind: a rank that roots one
    edge of one op out of twenty is noise, a slow GPU roots edges of every op."""
    # who waited: the receiver, or the sender where only its credits waited
    waited = edges["sender"].where(edges["credit_only"], edges["receiver"]).rename("waited")
    rooted = pd.concat([edges[["comm", "kind", "root"]], waited, edges["attributed_ns"]], axis=1)
    rooted = rooted.loc[edges["root"].notna()]
    ops = edges.groupby(["comm", "kind"])["inst"].nunique()
    acc: dict[tuple, dict] = defaultdict(
        lambda: {"comms": set(), "wait": 0.0, "victims": set(), "edges": 0, "per": defaultdict(float)}
    )
    for comm, kind, root, who, wait in rooted.itertuples(index=False):
        cm = comms[comm]
        a = acc[(root.kind, *_place(comms, comm, root.ranks))]
        a["comms"].add(comm)
        a["wait"] += float(wait)
        a["per"][(comm, kind)] += float(wait)
        a["victims"].add(cm.rank(int(who)))
        a["edges"] += 1
        a["ambiguous"] = a.get("ambiguous", False) or root.ambiguous
        a["global"] = cm.is_global
    senders = _credit_senders(edges, comms)
    found = []
    for key, a in acc.items():
        if max(w / ops[ck] for ck, w in a["per"].items()) < floor_ns:
            continue
        kind, ranks = key[0], key[1]
        victims = tuple(sorted(a["victims"] - ({ranks[0]} if kind != LINK else set())))
        credit, only = senders.get(key[1:], (set(), False)) if kind == RECEIVER else (set(), False)
        found.append(
            Finding(
                kind,
                ranks,
                tuple(sorted(a["comms"])),
                a["wait"],
                victims,
                a["edges"],
                a["ambiguous"],
                a["global"],
                tuple(sorted(credit)),
                only,
            )
        )
    return sorted(found, key=lambda f: -f.wait_ns)


def _credit_senders(edges: pd.DataFrame, comms: dict[str, CommMap]) -> dict[tuple, tuple[set[int], bool]]:
    """Per receiver (its :func:`_place`): the senders whose sends to it waited for its
    credits, and whether its receives from them were all ordinary (only the credits waited)."""
    waited = edges.loc[edges["credit_waits"], ["comm", "sender", "receiver", "credit_only"]]
    out: dict[tuple, tuple[set[int], bool]] = {}
    for comm, s, r, only in waited.itertuples(index=False):
        key = _place(comms, comm, (r,))
        senders, all_only = out.get(key, (set(), True))
        senders.add(comms[comm].rank(int(s)))
        out[key] = (senders, all_only and bool(only))
    return out


def analyze_proxy_waits(
    data: ProxyData,
    groups: GroupIndex | None = None,
    seq_window: int = SEQ_WINDOW,
    thresholds: Thresholds | None = None,
) -> ProxyWaits:
    """The proxy-op waits of ``data``; ``groups`` (from the dumps) map local ranks when ``_rank`` cannot."""
    rows = data.ops
    probing = probing_view(rows, seq_window) if not rows.empty else {"seq_window": seq_window, "rows_in_window": 0}
    rows = windowed(rows, seq_window) if not rows.empty else rows
    if rows.empty:
        return ProxyWaits(NONE, [], [], [], [], pd.DataFrame(), probing, False, {}, rows, data.inflight, data.files)
    rows = rows.assign(comm_hash=rows["comm_hash"].astype(str))
    comms = map_comms(rows, groups)
    th = thresholds or Thresholds()
    instances = _edges_with_roots(rows, comms, th)
    findings = _merge(instances, comms, th.floor_ns)
    edges = _readable(instances, comms)
    named = [f for f in findings if f.kind in FINDINGS and not f.ambiguous]  # a cycle's guess is shown, not named
    by_kind: dict[str, float] = defaultdict(float)
    for f in named:
        by_kind[f.kind] += f.wait_ns
    finding = max(by_kind, key=by_kind.get) if by_kind else NONE
    culprits = sorted({f.ranks[0] for f in named if f.kind in (SLOW_GPU, RECEIVER)})
    links = sorted(
        {(f.ranks[0], f.ranks[1]) for f in named if f.kind == LINK}
        | {(f.credit_senders[0], f.ranks[0]) for f in named if f.link_fits_too}
    )
    victims = sorted({v for f in named for v in f.victims} - set(culprits))
    g = _to_global(rows.rename(columns={"comm_hash": "comm"}), comms, ("rank", "peer"))
    rows = rows.assign(g_rank=g["rank"], g_peer=g["peer"])
    return ProxyWaits(
        finding=finding,
        culprit_ranks=culprits,
        victim_ranks=victims,
        suspect_links=links,
        findings=findings,
        edges=edges,
        probing=probing,
        ranks_are_global=all(c.is_global for c in comms.values()),
        comms=comms,
        rows=rows,
        inflight=data.inflight,
        files=data.files,
        seq_window=seq_window,
    )


__all__ = ["NONE", "UNRESOLVED", "Finding", "ProxyWaits", "Root", "analyze_proxy_waits"]
