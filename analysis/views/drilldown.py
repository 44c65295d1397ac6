"""Drill-down queries behind the dashboard: one rank's entry, its stack, who was where."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from .. import schema as s
from ..diagnosis.analysis import Analysis
from ..ingest.read import read_raw
from ..model.cells import created_ns
from ..types import DumpReadError


def entry_at(a: Analysis, pg_key: str, rank: int, seq: int) -> dict[str, Any] | None:
    """All fields of ``rank``'s collective entry at ``seq`` of ``pg_key`` (None if not in its buffer).

    The table keeps what the analysis needs; the entry as the rank wrote it (output
    sizes, timings, thread, frames) is read back from its dump file, one file per click.
    """
    mine = a.cells.iloc[a.rank_rows("cells", rank)]
    hit = mine.loc[((mine[s.PG_KEY] == pg_key) & (mine[s.SEQ] == seq)).to_numpy()]
    if hit.empty:
        return None
    row = a.dumps.entries.loc[int(hit.iloc[0]["row"])]
    fields = {k: (None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)) for k, v in row.items()}
    raw = _raw_entry(a, rank, int(row[s.ENTRY_INDEX]))
    if raw is not None:
        fields.update({k: v for k, v in raw.items() if k != "frames"})
    return fields


def _raw_entry(a: Analysis, rank: int, index: int) -> dict[str, Any] | None:
    files = a.dumps.files
    path = files.loc[files[s.RANK] == rank, s.FILE]
    if path.empty:
        return None
    try:
        raw, _ = read_raw(str(path.iloc[0]))
        entry = raw["entries"][index]
    except (DumpReadError, KeyError, IndexError, TypeError):
        return None  # the file changed or went away since it was analyzed
    return entry if isinstance(entry, dict) else None


def stack_frames(a: Analysis, stack_id: int | None) -> list[str]:
    """The frames of a stack, innermost first, as ``file:line in function`` lines."""
    if stack_id is None:
        return []
    st = a.dumps.stacks
    hit = st.loc[st[s.STACK_ID] == stack_id, s.FRAMES]
    return hit.iloc[0].split("\n") if not hit.empty and hit.iloc[0] else []


def stacks_at(a: Analysis, pg_key: str, seq: int) -> list[tuple[int | None, list[int]]]:
    """Ranks grouped by identical stack at (group, seq), the largest group first."""
    c = a.cells
    hit = c.loc[(c[s.PG_KEY] == pg_key) & (c[s.SEQ] == seq), [s.RANK, s.STACK_ID]]
    groups: dict[int | None, list[int]] = {}
    for rank, sid in hit.itertuples(index=False):
        groups.setdefault(None if pd.isna(sid) else int(sid), []).append(int(rank))
    return sorted(((sid, sorted(r)) for sid, r in groups.items()), key=lambda kv: -len(kv[1]))


def stack_diff(mine: list[str], majority: list[str]) -> list[tuple[str, str]]:
    """Line-by-line comparison, outermost frame first: ('same'|'mine'|'majority', line)."""
    import difflib

    a, b = list(reversed(majority)), list(reversed(mine))
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            out += [("same", x) for x in a[i1:i2]]
        else:
            out += [("majority", x) for x in a[i1:i2]]
            out += [("mine", x) for x in b[j1:j2]]
    return out


def last_entries(a: Analysis, rank: int, n: int = 20) -> pd.DataFrame:
    """The rank's newest entries across all groups, newest first."""
    mine = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
    cols = [
        s.RECORD_ID,
        s.PG_NAME,
        s.PG_DESC,
        s.SEQ,
        s.P2P_SEQ,
        s.OP,
        s.INPUT_SIZES,
        s.INPUT_DTYPES,
        s.STATE,
        s.RETIRED,
        s.T_CREATED,
        s.CALL_SITE,
    ]
    return mine.sort_values(s.RECORD_ID, ascending=False).head(n)[cols].reset_index(drop=True)


def arrivals(a: Analysis, pg_key: str, seq: int) -> pd.DataFrame:
    """When each member issued (group, seq): who came late and who never came.

    ``issued`` comes from the rank's progress (entries and pg_status), so a rank whose
    entry already left its ring buffer still counts as having issued it.
    """
    group = a.groups.groups[pg_key]
    c = a.cells
    hit = c.loc[(c[s.PG_KEY] == pg_key) & (c[s.SEQ] == seq)]
    times = created_ns(a.dumps.entries, hit)
    created = {int(r): (None if pd.isna(t) else int(t)) for r, t in zip(hit[s.RANK], times)}
    times = [t for t in created.values() if t is not None]
    first = min(times) if times else None
    rows = []
    for r in group.ranks:
        p = a.progress.get((pg_key, r))
        t = created.get(r)
        rows.append(
            {
                s.RANK: r,
                "issued": r in created or (p is not None and p.enqueued is not None and p.enqueued >= seq),
                "in_buffer": r in created,
                "time_created_ns": t,
                "delay_ms": None if t is None or first is None else (t - first) / 1e6,
            }
        )
    return pd.DataFrame(rows)


def relevance_order(a: Analysis, report_wave_key: str | None) -> list[str]:
    """Group keys: the wavefront group first, then groups with problems, then the rest."""
    trouble: Counter = Counter()
    for e in a.graph.edges:
        trouble[e.pg_key] += 1
    for m in a.mismatches:
        trouble[m.pg_key] += 100
    for b in a.graph.stragglers.values():
        trouble[b.pg_key] += 10
    keys = list(a.groups.groups)
    return sorted(keys, key=lambda k: (k != report_wave_key, -trouble[k], -len(a.groups.groups[k].ranks), k))
