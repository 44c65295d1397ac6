"""The job in one picture: rank classes as rows, and the wait-for graph folded by class.

Works on the report's ``rank_classes`` objects (plain dicts), so the dashboard, the HTML
export and a reader of the JSON see the same thing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..report.report import Report
from .tables import compact_ranks

_SITUATION = {
    "blocked": "blocked in",
    "idle": "waits in nothing; last",
    "no_dump": "no dump",
    "unreadable": "dump unreadable",
}


def where_text(c: dict[str, Any]) -> str:
    """Where a class is, in a few words: ``blocked in all_reduce seq 699 of DATA_PARALLEL_GROUP (64 groups), scheduled``."""
    at = c.get("blocked_at") or c.get("last_entry")
    if at is None:
        return _SITUATION.get(c["situation"], c["situation"])
    groups = at["pg_name"] if at.get("pg_name") is not None else f"{at['num_groups']} groups"
    kind = "p2p seq" if at.get("p2p") else "seq"
    desc = at.get("pg_desc") or "no description"
    return f"{_SITUATION[c['situation']]} {at.get('op') or 'op'} {kind} {at['seq']} of {desc} ({groups}), {at['state']}"


def edge_text(waiter: dict[str, Any], reason: str) -> str:
    """An arrow's label: where the waiting class waits, and why."""
    at = waiter.get("blocked_at")
    if at is None:
        return reason.replace("_", " ")
    return f"{at.get('pg_desc') or at.get('pg_name')} {at.get('op') or ''} {at['seq']} · {reason.replace('_', ' ')}"


def class_table(report: Report) -> pd.DataFrame:
    """One row per class, largest first: what the Job view lists."""
    rows = []
    for c in report.rank_classes:
        waits = sorted({w["class"] for w in c["waits_on"]})
        rows.append(
            {
                "class": c["id"],
                "size": c["size"],
                "suspect": c["suspect"],
                "where": where_text(c),
                "waits on classes": ", ".join(map(str, waits)),
                "ranks": compact_ranks(c["ranks"], limit=6),
            }
        )
    return pd.DataFrame(rows, columns=["class", "size", "suspect", "where", "waits on classes", "ranks"])


@dataclass(frozen=True, slots=True)
class FoldedGraph:
    """Classes placed in layers: roots (waited on, waiting on nobody) at depth 0."""

    nodes: dict[int, tuple[float, int]]
    """class id -> (x in 0..1, depth)."""
    edges: list[tuple[int, int, str]]
    """(blocker class, waiting class, reason)."""
    left_out: list[int]
    """Classes not drawn: in no wait, or beyond ``max_nodes``."""
    self_waiting: set[int]
    """Classes whose ranks (also) wait on each other."""


def fold(classes: list[dict[str, Any]], max_nodes: int = 40) -> FoldedGraph:
    """The wait-for graph between classes, laid out top-down from the roots."""
    every = {(w["class"], c["id"], w["reason"]) for c in classes for w in c["waits_on"]}
    self_waiting = {b for b, w, _ in every if b == w}
    edges = sorted(e for e in every if e[0] != e[1])
    involved = {b for b, _, _ in every} | {w for _, w, _ in every} | {c["id"] for c in classes if c["suspect"]}
    by_id = {c["id"]: c for c in classes}
    keep = sorted(involved, key=lambda i: (not by_id[i]["suspect"], -by_id[i]["size"], i))[:max_nodes]
    kept = set(keep)
    edges = [e for e in edges if e[0] in kept and e[1] in kept]
    depth = _depths(kept, edges)
    layers: dict[int, list[int]] = defaultdict(list)
    for i in sorted(kept, key=lambda i: (depth[i], -by_id[i]["size"], i)):
        layers[depth[i]].append(i)
    nodes = {}
    for d, ids in layers.items():
        for k, i in enumerate(ids):
            nodes[i] = ((k + 1) / (len(ids) + 1), d)
    left_out = sorted(c["id"] for c in classes if c["id"] not in kept)
    return FoldedGraph(nodes, edges, left_out, self_waiting & kept)


def _depths(nodes: set[int], edges: list[tuple[int, int, str]]) -> dict[int, int]:
    """Longest path from a root; a cycle stops growing after one pass per node."""
    blockers: dict[int, set[int]] = defaultdict(set)
    for b, w, _ in edges:
        if b != w:
            blockers[w].add(b)
    depth = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes)):
        changed = False
        for w, bs in blockers.items():
            want = 1 + max(depth[b] for b in bs)
            if want > depth[w] and want <= len(nodes):
                depth[w] = want
                changed = True
        if not changed:
            break
    return depth


def rank_place(report: Report, class_id: int, rank: int) -> tuple[str, int] | None:
    """Where a member of a class is, as the heatmap's (group key, seq); None if no group shows it.

    A class spans sibling groups: the member's own group is the one of them it belongs to.
    A send/recv is shown at the member's newest collective of that group.
    """
    a = report.analysis
    if a is None or not 0 <= class_id < len(report.classes):
        return None
    c = report.classes[class_id]
    if c.place is None:
        w = report.wavefront
        if w is not None and w.collective_seq_id is not None and rank in w.pg_ranks:
            return w.pg_key, int(w.collective_seq_id)
        return None
    key = next((k for k in c.pg_keys if rank in a.groups.groups[k].ranks), None)
    if key is None:
        return None
    if not c.place.is_p2p:
        return key, c.place.seq
    p = a.progress.get((key, rank))
    return (key, p.enqueued) if p is not None and p.enqueued is not None and p.enqueued >= 0 else None
