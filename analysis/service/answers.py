"""What the tools answer about one rank and one group, as plain JSON-ready dicts.

Pure functions of a :class:`Report` (and the analysis it keeps): the same views the
dashboard's drill-down draws, without a page.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from ..diagnosis.analysis import Analysis
from ..report.report import Report
from ..views import drilldown, grid
from ..views.stacks import majority_stack, stack_diff, stack_frames

STATE_CHARS = {
    grid.OUTSIDE: ".",
    grid.COMPLETED: "C",
    grid.STARTED: "S",
    grid.SCHEDULED: "Q",
    grid.NOT_ISSUED: "-",
    grid.MISMATCHED: "M",
}
LEGEND = {
    ".": "outside the ring buffer",
    "C": "completed",
    "S": "started, not completed",
    "Q": "scheduled (issued, not started)",
    "-": "not issued",
    "M": "mismatched with the group",
}
MAX_WAITERS = 64
"""Ranks listed per (group, seq) of ``waited_on_by``; the count says how many there are."""


class NotInDumps(LookupError):
    """The rank or group asked for is not in the dumps; the message says what is."""


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays, pandas' missing values and NaN made JSON's own."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def explain(report: Report, rank: int, newest: int = 10) -> dict[str, Any]:
    """Rank ``rank``: its role, newest entries, its stack at the wavefront against the
    majority's, what it waits on and who waits on it."""
    a = _analysis(report)
    loaded = set(a.dumps.ranks)
    if rank not in loaded and rank not in report.missing_dumps:
        shown = ", ".join(map(str, sorted(loaded)[:20])) + (" ..." if len(loaded) > 20 else "")
        raise NotInDumps(f"rank {rank}: not in these dumps (ranks with a dump: {shown or 'none'})")
    wave = report.wavefront
    at = None if wave is None else (wave.pg_key, wave.collective_seq_id)
    stack = drilldown.suspect_stack(a, rank, at) if rank in loaded else None
    entries = drilldown.last_entries(a, rank, newest) if rank in loaded else None
    return {
        "rank": rank,
        "role": _role(report, rank),
        "failure_class": report.suspect_classes[rank].value if rank in report.suspect_classes else None,
        "has_dump": rank in loaded,
        "rank_class": _rank_class(report, rank),
        "wavefront": None if wave is None else wave.to_dict(),
        "newest_entries": [] if entries is None else plain(entries.to_dict("records")),
        "stack": None if stack is None else _stack(stack),
        "stack_vs_majority": _versus_majority(report, stack),
        "waits_on": _waits_on(report, rank),
        "waited_on_by": _waited_on_by(report, rank),
    }


def group_states(report: Report, group: str, max_seqs: int = 64) -> dict[str, Any]:
    """The rank x seq states of one group (by name, key or unique description) as folded rows:
    ranks with the same states share a row, one character per seq (see ``legend``)."""
    a = _analysis(report)
    key = _group_key(report, group)
    g = grid.group_grid(a, key, max_seqs=max_seqs)
    rows: dict[str, list[int]] = defaultdict(list)
    chars = np.array([STATE_CHARS[c] for c in range(len(STATE_CHARS))])
    for r, codes in zip(g.ranks.tolist(), g.codes, strict=True):
        rows["".join(chars[codes])].append(int(r))
    pg = a.groups.groups[key]
    wave = report.wavefront
    return {
        "pg_name": pg.name,
        "pg_desc": pg.desc,
        "ranks": len(pg.ranks),
        "seq_first": int(g.seqs[0]) if len(g.seqs) else None,
        "seq_last": int(g.seqs[-1]) if len(g.seqs) else None,
        "wavefront_seq": wave.collective_seq_id if wave is not None and wave.pg_key == key else None,
        "legend": LEGEND,
        "rows": sorted(({"ranks": ranks, "states": states} for states, ranks in rows.items()), key=_first_rank),
    }


def _first_rank(row: dict[str, Any]) -> int:
    return row["ranks"][0]


def _analysis(report: Report) -> Analysis:
    """The report's analysis, or NotInDumps when nothing could be read."""
    if report.analysis is None or report.ranks_loaded == 0:
        why = report.file_errors[0].error if report.file_errors else "no dump could be read"
        raise NotInDumps(f"no Flight Recorder dump could be read there ({why})")
    return report.analysis


def _role(report: Report, rank: int) -> str:
    if rank in report.suspect_ranks:
        return "suspect"
    if any(p.get("rank") == rank for p in report.possible_ranks):
        return "possible"
    if rank in report.victim_ranks:
        return "victim"
    return "missing_dump" if rank in report.missing_dumps else "other"


def _rank_class(report: Report, rank: int) -> dict[str, Any] | None:
    for c in report.rank_classes:
        if rank in c["ranks"]:
            return plain({k: v for k, v in c.items() if k != "ranks"})
    return None


def _stack(st: drilldown.SuspectStack) -> dict[str, Any]:
    return {
        "pg_name": st.pg_name,
        "seq": plain(st.seq),
        "op": st.op,
        "state": st.state,
        "at_wavefront": st.at_wavefront,
        "frames": list(st.frames),
    }


def _versus_majority(report: Report, st: drilldown.SuspectStack | None) -> dict[str, Any] | None:
    """The rank's stack at the wavefront line by line against the stack most ranks had there."""
    wave = report.wavefront
    if st is None or not st.at_wavefront or wave is None or wave.collective_seq_id is None:
        return None
    major = majority_stack(report.analysis, wave.pg_key, int(wave.collective_seq_id))
    if major is None:
        return None
    theirs = stack_frames(report.analysis, major.stack_id)
    return {
        "majority_ranks": major.num_ranks,
        "same": theirs == list(st.frames),
        "lines": [{"side": side, "frame": line} for side, line in stack_diff(list(st.frames), theirs)],
    }


def _where(report: Report, pg_key: str) -> dict[str, Any]:
    g = report.analysis.groups.groups.get(pg_key)
    return {"pg_name": None if g is None else g.name, "pg_desc": None if g is None else g.desc}


def _waits_on(report: Report, rank: int) -> list[dict[str, Any]]:
    edges = [e for e in report.analysis.graph.edges if e.waiter == rank]
    return [
        {"rank": e.blocker, **_where(report, e.pg_key), "seq": e.seq, "op": e.op, "reason": str(e.reason)}
        for e in sorted(edges, key=lambda e: (e.blocker, e.pg_key, e.seq))
    ]


def _waited_on_by(report: Report, rank: int) -> list[dict[str, Any]]:
    folded: dict[tuple[str, int, str, str], list[int]] = defaultdict(list)
    for e in report.analysis.graph.edges:
        if e.blocker == rank:
            folded[(e.pg_key, e.seq, e.op or "", str(e.reason))].append(e.waiter)
    out = []
    for (key, seq, op, reason), waiters in sorted(folded.items(), key=lambda kv: -len(kv[1])):
        ranks = sorted(set(waiters))
        out.append(
            {**_where(report, key), "seq": seq, "op": op or None, "reason": reason, "count": len(ranks)}
            | {"ranks": ranks[:MAX_WAITERS]}
        )
    return out


def _group_key(report: Report, group: str) -> str:
    groups = report.analysis.groups.groups
    for field in ("name", "key"):
        for key, g in groups.items():
            if str(getattr(g, field)) == group:
                return key
    by_desc = [key for key, g in groups.items() if g.desc == group]
    if len(by_desc) == 1:
        return by_desc[0]
    names = sorted({f"{g.name} ({g.desc})" for g in groups.values()})
    if by_desc:
        named = ", ".join(groups[k].name for k in by_desc[:20])
        raise NotInDumps(f"group {group!r}: {len(by_desc)} groups have this description; name one: {named}")
    listed = ", ".join(names[:40]) + (" ..." if len(names) > 40 else "")
    raise NotInDumps(f"group {group!r}: no such process group in these dumps (groups: {listed})")
