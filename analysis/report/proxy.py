"""The proxy-op waits in the report: their JSON object, and attaching them to a Report."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from ..diagnosis.proxy_agree import Agreement, compare, inflight_summary
from ..diagnosis.proxy_waits import Finding, ProxyWaits, analyze_proxy_waits
from ..ingest.proxy_ops import ProxyData
from .proxy_words import proxy_sentences
from .report import Report

MAX_EDGES = 500
"""Edges in the JSON: the waiting ones, largest first (the dashboard has them all)."""


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "ranks": list(f.ranks),
        "communicators": list(f.comms),
        "wait_ns": round(f.wait_ns),
        "victims": list(f.victims),
        "edges": f.edges,
        "ambiguous": f.ambiguous,
        "ranks_are_global": f.is_global,
        "credit_senders": list(f.credit_senders),
        "link_fits_too": f.link_fits_too,
    }


def edge_records(edges: pd.DataFrame, limit: int = MAX_EDGES) -> list[dict[str, Any]]:
    if edges.empty:
        return []
    e = edges.loc[edges["waiting"]].sort_values("attributed_ns", ascending=False, kind="stable").head(limit)
    out = []
    for row in e.itertuples(index=False):
        root = row.root
        out.append(
            {
                "comm_hash": row.comm,
                "sender": int(row.sender),
                "receiver": int(row.receiver),
                "local_sender": int(row.local_sender),
                "local_receiver": int(row.local_receiver),
                "ops": row.kinds,
                "recv_ops": int(row.receiver_ops),
                "send_ops": int(row.sender_ops),
                "recv_wait_ns": round(row.recv),
                "recv_flush_wait_ns": round(row.flush),
                "send_gpu_wait_ns": round(row.gpu),
                "send_peer_wait_ns": round(row.peerw),
                "send_wait_ns": round(row.sendw),
                "excess_wait_ns": round(row.attributed_ns),
                "class": row.cls,
                "root": None
                if root is None
                else {"kind": root.kind, "ranks": list(row.root_ranks), "local_ranks": list(root.ranks)},
            }
        )
    return out


def proxy_record(pw: ProxyWaits, inflight: pd.DataFrame, agreement: Agreement | None) -> dict[str, Any]:
    """``proxy_waits`` in the report's JSON."""
    inf_cols = ["comm_hash", "rank", "g_rank", "coll_func", "seq", "kind", "peer", "is_send", "age_ns"]
    return {
        "finding": pw.finding,
        "culprit_ranks": list(pw.culprit_ranks),
        "victim_ranks": list(pw.victim_ranks),
        "suspect_links": [list(link) for link in pw.suspect_links],
        "ranks_are_global": pw.ranks_are_global,
        "edges": edge_records(pw.edges),
        "edges_total": len(pw.edges),
        "findings": [_finding(f) for f in pw.findings],
        "communicators": [
            {"comm_hash": c.comm, "size": c.size, "ranks": c.source, "process_group": c.group, "note": c.note}
            for c in pw.comms.values()
        ],
        "inflight": [
            {k: _plain(v) for k, v in zip(inf_cols, rec)}
            for rec in (inflight[inf_cols].itertuples(index=False) if not inflight.empty else [])
        ],
        "agreement_with_dumps": None if agreement is None else agreement.kind,
        "probing": pw.probing,
        "rows": len(pw.rows),
        "files": list(pw.files),
        "seq_window": pw.seq_window,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class ProxyEvidence:
    """What the report keeps of the proxy-op waits."""

    waits: ProxyWaits
    inflight: pd.DataFrame
    agreement: Agreement | None

    def to_dict(self) -> dict[str, Any]:
        return proxy_record(self.waits, self.inflight, self.agreement)


def with_proxy_waits(report: Report, data: ProxyData) -> Report:
    """``report`` with the proxy-op waits of ``data`` analysed (mapped through the dumps'
    groups when there are dumps), their sentences in the evidence and their files' errors."""
    groups = report.analysis.groups if report.analysis is not None and report.ranks_loaded else None
    pw = analyze_proxy_waits(data, groups)
    agreement = compare(report.verdict, report.suspect_ranks, pw) if report.ranks_loaded else None
    inflight = inflight_summary(pw)
    evidence = ProxyEvidence(pw, inflight, agreement)
    return dataclasses.replace(
        report,
        evidence=[*report.evidence, *proxy_sentences(pw, inflight, agreement)],
        file_errors=[*report.file_errors, *data.errors],
        proxy_waits=evidence,
    )
