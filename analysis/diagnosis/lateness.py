"""Who the others waited on between two snapshots, from when each rank entered each collective.

Flight Recorder stamps every entry with the time its rank issued it (``time_created_ns``).
For each collective of the window (a group's seq that some member had not yet issued in
the earlier snapshot: completed since, or still pending in the later one), the last rank
into it kept its peers waiting from the moment the one before it came in: its *lead*
(counted from the earlier snapshot's newest entry at the soonest, so that a rank without a
dump in the earlier snapshot is not charged with its waits before the interval). A
member that has not issued a pending collective yet is counted as coming in at the later
snapshot's newest entry (a lower bound). Per rank, over the window: in how many of its
collectives it was the last in by a lead, and how long its peers waited on it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from .analysis import Analysis

WAIT_SHARE = 0.25
"""A rank is slow when its peers spent at least a quarter of the time between the two
snapshots waiting on it alone, summed over the collectives in between: the job then runs
markedly slower for that one rank, a slowdown worth a word, and well above what a healthy
job's ranks cost each other by scheduling alone (docs/live.md, "The word").

*On it alone*: of the time from the moment the one before it came in to its own coming in,
only the part it took longer than that rank since each of them left its previous collective
(a rank late only because it waited on a slow one itself is not counted). *Recurring*: its
longest single wait counts only up to its second longest, so the wait must come back
collective after collective (a slow rank holds its peers back step after step), and one
pause the machine imposed once on a rank otherwise on time is not called slow."""


@dataclass(frozen=True, slots=True)
class Lateness:
    """Per rank, over the collectives of the window."""

    table: pd.DataFrame
    """rank, collectives (of the window, it took part in), last (into how many), lead_ns (its
    peers' wait from the one before it came in, summed), wait_ns (the part of it that was its
    own doing), longest_ns (the longest such wait), recurring_ns (wait_ns with the longest
    counted only up to the second longest), wait_share (recurring_ns over the interval)."""
    interval_ns: int | None
    slow: tuple[int, ...]
    """The ranks whose wait_share is at least WAIT_SHARE."""


def _issued(a: Analysis) -> pd.DataFrame:
    """One row per (group key, seq, rank) collective entry: when it was issued."""
    e = a.dumps.entries
    e = e[~e[s.IS_P2P].to_numpy(dtype=bool)]
    names = e[s.PG_NAME].astype(str).to_numpy()
    ranks = e[s.RANK].to_numpy(dtype=np.int64)
    keys = [a.groups.key_of.get((int(r), n)) for r, n in zip(ranks, names, strict=True)]
    out = pd.DataFrame(
        {
            s.PG_KEY: keys,
            s.SEQ: e[s.SEQ].to_numpy(dtype=np.int64),
            s.RANK: ranks,
            s.T_CREATED: e[s.T_CREATED].to_numpy(dtype=np.int64, na_value=-1),
        }
    )
    out = out[out[s.PG_KEY].notna() & (out[s.T_CREATED] > 0)]
    return out.drop_duplicates([s.PG_KEY, s.SEQ, s.RANK], keep="last")


_Collective = tuple[str, int]
"""A collective of the window: (group key, seq)."""


@dataclass(frozen=True, slots=True)
class _Window:
    """The collectives of the later snapshot, when each rank came into each, and what the
    earlier snapshot had already seen of them."""

    at: dict[_Collective, dict[int, int]]
    """Per collective, each rank's time of issue."""
    members: dict[str, list[int]]
    """Per group key, its members with a dump in the later snapshot."""
    had: dict[tuple[str, int], int]
    """Per (group key, rank), the highest seq issued in the earlier snapshot."""
    newest: int
    """The later snapshot's newest entry: when a member that has not issued yet is counted in."""
    start: int
    """The earlier snapshot's newest entry: where the interval begins."""
    mine: dict[int, list[tuple[int, _Collective]]]
    """Per rank, its collectives in the order it issued them, with their times."""
    issued_at: dict[int, list[int]]
    """Per rank, the times of ``mine`` alone (for bisecting)."""

    def last_in(self, c: _Collective) -> int:
        """When the last member came into ``c``: the collective could not end before."""
        got = self.at[c]
        return self.newest if any(r not in got for r in self.members.get(c[0], ())) else max(got.values())

    def own(self, r: int, c: _Collective) -> int | None:
        """How long ``r`` took from leaving its previous collective to coming into ``c``."""
        t = self.at[c].get(r, self.newest)
        i = bisect.bisect_left(self.issued_at.get(r, ()), t)  # its collectives issued before t (c itself is at t)
        if i == 0:
            return None
        return max(0, t - self.last_in(self.mine[r][i - 1][1]))


def _window(later: Analysis, earlier: Analysis) -> _Window:
    """The collectives of ``later`` with their times of issue, and how far ``earlier`` had got."""
    now = _issued(later)
    before = _issued(earlier)
    dumped = set(later.dumps.ranks)
    at: dict[_Collective, dict[int, int]] = {}
    for key, seq, rank, t in now[[s.PG_KEY, s.SEQ, s.RANK, s.T_CREATED]].itertuples(index=False):
        at.setdefault((key, int(seq)), {})[int(rank)] = int(t)
    mine: dict[int, list[tuple[int, _Collective]]] = {}
    for c, got in at.items():
        for r, t in got.items():
            mine.setdefault(r, []).append((t, c))
    for entries in mine.values():
        entries.sort()
    return _Window(
        at=at,
        members={k: [r for r in g.ranks if r in dumped] for k, g in later.groups.groups.items()},
        had=before.groupby([s.PG_KEY, s.RANK])[s.SEQ].max().to_dict(),
        newest=int(now[s.T_CREATED].max()) if len(now) else 0,
        start=int(before[s.T_CREATED].max()) if len(before) else 0,
        mine=mine,
        issued_at={r: [t for t, _ in entries] for r, entries in mine.items()},
    )


def _tally(w: _Window) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per rank ``[collectives, last, lead_ns]``, and its own waits, one per collective it was last into."""
    counts: dict[int, list[int]] = {}
    waits: dict[int, list[int]] = {}
    for c, got in w.at.items():
        key, seq = c
        ms = w.members.get(key, [])
        if len(ms) < 2 or all(w.had.get((key, r), -1) >= seq for r in ms):
            continue  # not a collective of several ranks, or every member had issued it before the window
        times = sorted((got.get(r, w.newest), r) for r in ms)
        (t2, second), (t1, last) = times[-2], times[-1]
        if t1 <= w.start:
            continue  # all of it before the interval (a rank without a dump in the earlier snapshot)
        for r in ms:
            counts.setdefault(r, [0, 0, 0])[0] += 1
        if t1 <= t2:
            continue
        lead = t1 - max(t2, w.start)  # the wait inside the interval only
        counts[last][1] += 1
        counts[last][2] += lead
        o1, o2 = w.own(last, c), w.own(second, c)
        if o1 is not None:
            waits.setdefault(last, []).append(max(0, min(lead, o1 - (o2 or 0))))
    return counts, waits


def _table(counts: dict[int, list[int]], waits: dict[int, list[int]], interval_ns: int | None) -> pd.DataFrame:
    """``Lateness.table`` from the tallies: the waits summed, the longest, the recurring part, its share."""
    rows = []
    for r, v in sorted(counts.items()):
        w = sorted(waits.get(r, ()))
        recurring = sum(w[:-1]) + w[-2] if len(w) >= 2 else 0
        rows.append((r, *v, sum(w), w[-1] if w else 0, recurring))
    columns = [s.RANK, "collectives", "last", "lead_ns", "wait_ns", "longest_ns", "recurring_ns"]
    table = pd.DataFrame(rows, columns=columns)
    table["wait_share"] = table["recurring_ns"] / interval_ns if interval_ns else np.nan
    return table


def lateness(later: Analysis, earlier: Analysis, interval_ns: int | None) -> Lateness:
    """Who the others waited on over the collectives between ``earlier`` and ``later``."""
    counts, waits = _tally(_window(later, earlier))
    table = _table(counts, waits, interval_ns)
    slow = table[table["wait_share"].fillna(0) >= WAIT_SHARE]
    return Lateness(table, interval_ns, tuple(int(r) for r in slow[s.RANK]))
