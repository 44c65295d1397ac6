"""Drill-down queries behind the dashboard: one rank's entry, its newest entries, who was where."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import schema as s
from ..diagnosis.analysis import Analysis
from ..ingest.read import read_raw
from ..model.cells import created_ns, int_values
from ..report.times import before, readable, utc
from ..tables.rowindex import entry_positions
from ..types import DumpReadError
from .grid import shown_state
from .stacks import stack_frames


def row_dict(row: pd.Series) -> dict[str, Any]:
    """A table row as plain Python values (numpy scalars unwrapped, missing as None)."""
    return {k: (None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)) for k, v in row.items()}


def entry_at(a: Analysis, pg_key: str, rank: int, seq: int) -> dict[str, Any] | None:
    """All fields of ``rank``'s collective entry at ``seq`` of ``pg_key`` (None if not in its buffer).

    The table keeps what the analysis needs; the entry as the rank wrote it (output
    sizes, timings, thread, frames) is read back from its dump file, one file per click.
    """
    mine = a.cells.iloc[a.rank_rows("cells", rank)]
    hit = mine.loc[((mine[s.PG_KEY] == pg_key) & (mine[s.SEQ] == seq)).to_numpy()]
    if hit.empty:
        return None
    row = int(hit.iloc[0]["row"])
    fields = _with_entry_index(row_dict(a.dumps.entries.loc[row]), int(entry_positions(a.dumps.files, [row])[0]))
    raw = _raw_entry(a, rank, fields[s.ENTRY_INDEX])
    if raw is not None:
        fields.update({k: v for k, v in raw.items() if k != "frames"})
    return fields


def _with_entry_index(fields: dict[str, Any], index: int) -> dict[str, Any]:
    """``fields`` with the entry's place in its file after its rank, where the table had it."""
    out = {}
    for name, value in fields.items():
        out[name] = value
        if name == s.RANK:
            out[s.ENTRY_INDEX] = index
    return out


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


def newest_entry(a: Analysis, rank: int, pg_name: str | None = None, with_stack: bool = False) -> dict[str, Any] | None:
    """The rank's newest entry (by record id), in the group named ``pg_name`` if given,
    among those that recorded a call stack if ``with_stack``; None when there is none."""
    mine = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
    if pg_name is not None:
        mine = mine.loc[(mine[s.PG_NAME].astype(str) == pg_name).to_numpy()]
    if with_stack:
        mine = mine.loc[mine[s.STACK_ID].notna().to_numpy()]
    if mine.empty:
        return None
    return row_dict(mine.sort_values(s.RECORD_ID).iloc[-1])


@dataclass(frozen=True, slots=True)
class CellEntry:
    """What the drill-down shows for one (rank, seq) of a group."""

    entry: dict[str, Any] | None
    """The rank's entry at the seq, else its newest entry in the group, else None."""
    exact: bool
    """True when ``entry`` is the entry at the seq itself."""
    stack_id: int | None = None
    frames: list[str] = field(default_factory=list)


def cell_entry(a: Analysis, pg_key: str, rank: int, seq: int) -> CellEntry:
    """The rank's entry at ``seq`` when it has one; otherwise its newest entry in that
    group (the collective it is waiting in or last got to), and the entry's call stack."""
    entry = entry_at(a, pg_key, rank, seq)
    exact = entry is not None
    if entry is None:
        entry = newest_entry(a, rank, pg_name=a.groups.groups[pg_key].name)
    sid = None if entry is None or entry.get(s.STACK_ID) is None else int(entry[s.STACK_ID])
    return CellEntry(entry, exact, sid, stack_frames(a, sid))


@dataclass(frozen=True, slots=True)
class SuspectStack:
    """Where a suspect rank was, and its call stack there."""

    pg_name: str | None
    seq: int | None
    op: str | None
    state: str | None
    """As the heatmap shows it (finished gloo work is 'completed')."""
    at_wavefront: bool
    """True at the wavefront collective, False at the rank's newest entry with a stack."""
    frames: list[str] = field(default_factory=list)
    created_ns: int | None = None


def suspect_stack(a: Analysis, rank: int, wave: tuple[str, int | None] | None) -> SuspectStack | None:
    """A suspect's call stack at the wavefront ``(group key, seq)`` if it got there, else at
    its newest entry that recorded a stack; None when no entry of it recorded one."""
    if wave is not None and wave[1] is not None and rank in a.groups.groups[wave[0]].ranks:
        entry = entry_at(a, wave[0], rank, int(wave[1]))
        if entry and entry.get(s.STACK_ID) is not None:
            frames = stack_frames(a, int(entry[s.STACK_ID]))
            name = a.groups.groups[wave[0]].name
            state = shown_state(entry.get(s.STATE), entry.get(s.RETIRED))
            return SuspectStack(name, int(wave[1]), entry.get(s.OP), state, True, frames, entry.get(s.T_CREATED))
    last = newest_entry(a, rank, with_stack=True)
    if last is None:
        return None
    frames = stack_frames(a, int(last[s.STACK_ID]))
    state = shown_state(last[s.STATE], last.get(s.RETIRED))
    return SuspectStack(str(last[s.PG_NAME]), last[s.SEQ], last[s.OP], state, False, frames, last.get(s.T_CREATED))


def dump_ns(a: Analysis) -> int | None:
    """The dump's moment as far as the dumps tell: their newest entry's creation time (ns).

    Flight Recorder writes no dump time; "N s before the dump" counts back from this.
    """
    times = int_values(a.dumps.entries[s.T_CREATED], -1)
    top = int(times.max()) if len(times) else -1
    return top if top > 0 else None


def last_entries(a: Analysis, rank: int, n: int = 20) -> pd.DataFrame:
    """The rank's newest entries across all groups, newest first: states as the heatmap shows
    them (the recorded one beside), creation times in UTC and before the dump beside the ns."""
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
    out = mine.sort_values(s.RECORD_ID, ascending=False).head(n)[cols].reset_index(drop=True)
    recorded = out[s.STATE].astype(str)
    shown = [shown_state(st, ret) for st, ret in zip(recorded, out[s.RETIRED], strict=True)]
    out.insert(out.columns.get_loc(s.STATE), "recorded state", recorded)
    out[s.STATE] = shown
    at = dump_ns(a)
    created = [None if pd.isna(v) else int(v) for v in out[s.T_CREATED]]
    where = out.columns.get_loc(s.T_CREATED) + 1
    out.insert(where, "created (UTC)", [utc(v) for v in created])
    out.insert(where + 1, "before the dump", [before(v, at) for v in created])
    return out


def readable_entry(entry: dict[str, Any], dump_at: int | None) -> dict[str, Any]:
    """An entry for people: its state as the heatmap shows it (the recorded one beside), and
    every ``*_ns`` time with its UTC wall time and how long before the dump."""
    out = dict(entry)
    if s.STATE in out:
        recorded, retired = out[s.STATE], out.get(s.RETIRED)
        shown = shown_state(recorded, retired)
        if shown != recorded:
            out[s.STATE] = f"{shown} (recorded as {recorded}{', retired' if retired else ''})"
    for key, value in entry.items():
        if key.endswith("_ns") and isinstance(value, int) and value > 0:
            out[key] = readable(value, dump_at)
    return out


def group_cells(a: Analysis, pg_key: str) -> pd.DataFrame:
    """The group's cells with what a hover label shows: rank, seq, op, input sizes and dtypes."""
    c = a.cells
    cols = [s.RANK, s.SEQ, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES]
    return c.loc[(c[s.PG_KEY] == pg_key).to_numpy(), cols].reset_index(drop=True)


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
    at = dump_ns(a)
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
                "created (UTC)": utc(t),
                "before the dump": before(t, at),
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
