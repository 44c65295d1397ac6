"""The small tables a page shows, built from a report: groups' progress, who waits on whom,
the files not used."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..report.report import Report
from ..report.words import compact_ranks


def progress_table(report: Report, order: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per process group: how far its members got, and who is behind.

    ``order`` lists group keys (two groups may share a name: Megatron creates several
    groups under one description and torch may reuse a name with another rank list).
    """
    groups = list(report.process_groups)
    if order is not None:
        pos = {k: i for i, k in enumerate(order)}
        groups.sort(key=lambda g: pos.get(g["pg_key"], len(pos)))
    rows = []
    for g in groups:
        enq_lo, enq_hi = g.get("enqueued_min"), g.get("enqueued_max")
        done_lo, done_hi = g.get("completed_min"), g.get("completed_max")
        spread = None if enq_hi is None or done_lo is None else int(enq_hi) - int(done_lo)
        rows.append(
            {
                "group": str(g["pg_name"]),
                "description": str(g.get("pg_desc") or ""),
                "ranks": compact_ranks(g.get("ranks") or [], limit=4),
                "size": int(g.get("size") or len(g.get("ranks", []))),
                "enqueued (min..max)": _span(enq_lo, enq_hi),
                "completed (min..max)": _span(done_lo, done_hi),
                "open seqs": spread,
                "lagging ranks": compact_ranks(g.get("lagging_ranks") or []),
                "ranks without dump": compact_ranks(g.get("ranks_without_dump") or []),
            }
        )
    return pd.DataFrame(rows)


def _span(lo: Any, hi: Any) -> str:
    if lo is None and hi is None:
        return "-"
    return str(lo) if lo == hi else f"{lo}..{hi}"


def wait_chain(report: Report, limit: int = 200) -> pd.DataFrame:
    """Who waits on whom, folded: one row per (blocker, group, seq, reason) with its waiters.

    Rows whose blocker is a suspect come first, so the table reads from the root outwards.
    """
    a = report.analysis
    if a is None or not a.graph.edges:
        return pd.DataFrame(columns=["blocker", "suspect", "group", "seq", "op", "reason", "waiters", "num_waiters"])
    names = {k: g.name for k, g in a.groups.groups.items()}
    descs = {k: g.desc for k, g in a.groups.groups.items()}
    folded: dict[tuple, set[int]] = defaultdict(set)
    for e in a.graph.edges:
        folded[(e.blocker, e.pg_key, e.seq, e.op or "", e.reason)].add(e.waiter)
    suspects = set(report.suspect_ranks)
    rows = [
        {
            "blocker": blocker,
            "suspect": blocker in suspects,
            "group": f"{names.get(pg, pg)} ({descs.get(pg) or 'no description'})",
            "seq": seq,
            "op": op,
            "reason": reason.replace("_", " "),
            "waiters": compact_ranks(sorted(waiters)),
            "num_waiters": len(waiters),
        }
        for (blocker, pg, seq, op, reason), waiters in folded.items()
    ]
    df = pd.DataFrame(rows).sort_values(["suspect", "num_waiters", "blocker"], ascending=[False, False, True])
    return df.head(limit).reset_index(drop=True)


def frames_text(frames: Sequence[str]) -> str:
    return "\n".join(frames) if frames else "(no call stack recorded in this dump)"


def file_errors_table(report: Report) -> pd.DataFrame:
    return pd.DataFrame({"file": [e.file for e in report.file_errors], "reason": [e.error for e in report.file_errors]})
