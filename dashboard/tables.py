"""Small tables and texts the pages show, built from the report. No Streamlit here."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pandas as pd

from analysis.report.report import Report
from analysis.report.words import compact_ranks


def progress_table(report: Report, order: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per process group: how far its members got, and who is behind."""
    rows = []
    for g in report.process_groups:
        enq_lo, enq_hi = g.get("enqueued_min"), g.get("enqueued_max")
        done_lo, done_hi = g.get("completed_min"), g.get("completed_max")
        spread = None if enq_hi is None or done_lo is None else int(enq_hi) - int(done_lo)
        rows.append(
            {
                "group": str(g["pg_name"]),
                "description": str(g.get("pg_desc") or ""),
                "size": int(g.get("size") or len(g.get("ranks", []))),
                "enqueued (min..max)": _span(enq_lo, enq_hi),
                "completed (min..max)": _span(done_lo, done_hi),
                "open seqs": spread,
                "lagging ranks": compact_ranks(g.get("lagging_ranks") or []),
                "ranks without dump": compact_ranks(g.get("ranks_without_dump") or []),
            }
        )
    df = pd.DataFrame(rows)
    if order is not None and not df.empty:
        keys = _keys_by_name(report)
        pos = {k: i for i, k in enumerate(order)}
        df["_order"] = [pos.get(keys.get(n, n), len(pos)) for n in df["group"]]
        df = df.sort_values(["_order", "group"]).drop(columns="_order").reset_index(drop=True)
    return df


def _keys_by_name(report: Report) -> dict[str, str]:
    a = report.analysis
    if a is None:
        return {}
    return {g.name: k for k, g in a.groups.groups.items()}


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


def entry_table(entry: dict[str, Any]) -> pd.DataFrame:
    """All fields of one entry as (field, value) text rows."""
    return pd.DataFrame({"field": list(entry), "value": ["" if v is None else str(v) for v in entry.values()]})


def diff_text(diff: Sequence[tuple[str, str]]) -> str:
    """``views.stack_diff`` output as unified-diff style text (+ this rank, - the majority)."""
    mark = {"same": "  ", "mine": "+ ", "majority": "- "}
    return "\n".join(mark.get(tag, "  ") + line for tag, line in diff)


def frames_text(frames: Sequence[str]) -> str:
    return "\n".join(frames) if frames else "(no call stack recorded in this dump)"


def file_errors_table(report: Report) -> pd.DataFrame:
    return pd.DataFrame({"file": [e.file for e in report.file_errors], "reason": [e.error for e in report.file_errors]})


def suspect_stack(report: Report, rank: int) -> tuple[str, list[str]]:
    """Where a suspect rank was and its call stack: at the wavefront if it got there,
    else its newest entry that recorded a stack."""
    from analysis import schema as s
    from analysis.views import drilldown as views

    a = report.analysis
    w = report.wavefront
    if a is None:
        return "no analysis", []
    if w is not None and w.collective_seq_id is not None and rank in w.pg_ranks:
        entry = views.entry_at(a, w.pg_key, rank, int(w.collective_seq_id))
        if entry and entry.get(s.STACK_ID) is not None:
            where = f"at the wavefront: group {w.pg_name} seq {w.collective_seq_id} ({entry.get(s.OP)})"
            return where, views.stack_frames(a, int(entry[s.STACK_ID]))
    mine = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
    mine = mine.loc[mine[s.STACK_ID].notna().to_numpy()]
    if mine.empty:
        return "no entry of this rank recorded a call stack", []
    last = mine.sort_values(s.RECORD_ID).iloc[-1]
    where = f"newest entry with a stack: group {last[s.PG_NAME]} seq {last[s.SEQ]} ({last[s.OP]}, {last[s.STATE]})"
    return where, views.stack_frames(a, int(last[s.STACK_ID]))


def cell_stack(report: Report, pg_key: str, rank: int, seq: int) -> tuple[dict[str, Any] | None, bool, list[str]]:
    """The entry the drill-down shows for (rank, seq) of a group, and its call stack.

    Returns ``(entry, exact, frames)``: the rank's entry at ``seq`` when it has one
    (``exact`` True); otherwise its newest entry in that group (the collective it is
    waiting in or last got to), or None when it recorded nothing there.
    """
    from analysis import schema as s
    from analysis.views import drilldown as views

    a = report.analysis
    entry = views.entry_at(a, pg_key, rank, seq)
    exact = entry is not None
    if entry is None:
        name = a.groups.groups[pg_key].name
        mine = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
        mine = mine.loc[(mine[s.PG_NAME].astype(str) == name).to_numpy()]
        if not mine.empty:
            row = mine.sort_values(s.RECORD_ID).iloc[-1]
            entry = {k: (None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)) for k, v in row.items()}
    sid = None if entry is None else entry.get(s.STACK_ID)
    return entry, exact, views.stack_frames(a, None if sid is None else int(sid))


def states_at(grid, seq: int) -> dict[int, int]:
    """Each member's grid state code at ``seq`` (empty when ``seq`` is outside the grid)."""
    if not len(grid.seqs) or not (grid.seqs[0] <= seq <= grid.seqs[-1]):
        return {}
    col = grid.codes[:, int(seq - grid.seqs[0])]
    return {int(r): int(c) for r, c in zip(grid.ranks, col, strict=True)}
