"""How far to trust a verdict: what in these dumps weakens it, found from the data.

Each :class:`Caveat` is a fact with the ranks it concerns; :func:`confidence` grades the
verdict from them. The sentences are written in the report layer
(:mod:`analysis.report.confidence`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import COLLECTIVE, DONE, ROW, created_ns, int_values
from ..tables.rowindex import rank_blocks
from ..tables.rowkeys import counts_of, equals, flag, group_ids
from ..types import FailureClass
from .analysis import Analysis
from .unreadable import unreadable_files
from .verdict import Diagnosis


class CaveatKind(enum.StrEnum):
    UNREADABLE = "unreadable_dumps"
    """A rank's dump file is there but could not be read."""
    SHORT_BUFFER = "buffer_after_divergence"
    """A rank's ring buffer starts after the divergence."""
    MIXED_VERSIONS = "mixed_fr_versions"
    NO_STARTED = "no_started_state"
    """No entry records 'started': stuck in flight and never started look alike."""
    NO_STACKS = "json_without_stacks"
    ONLY_ACTIVE = "only_active_dumps"
    CLOCKS = "clocks_disagree"


class Confidence(enum.StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


@dataclass(frozen=True, slots=True)
class Caveat:
    """One thing that weakens the verdict, and the ranks it concerns."""

    kind: CaveatKind
    ranks: tuple[int, ...]
    severe: bool
    """It touches a suspect or the wavefront group: the verdict itself may be wrong."""
    detail: dict[str, Any] = field(default_factory=dict)


def confidence(caveats: list[Caveat]) -> Confidence:
    """High with no caveat, low when one touches a suspect or the wavefront group, else medium."""
    if any(c.severe for c in caveats):
        return Confidence.LOW
    return Confidence.MEDIUM if caveats else Confidence.HIGH


def find_caveats(a: Analysis, d: Diagnosis) -> list[Caveat]:
    """Every caveat of this verdict, most serious kinds first."""
    focus = set(d.suspect_classes)
    if d.wave is not None and d.wave[0] in a.groups.groups:
        focus |= set(a.groups.groups[d.wave[0]].ranks)
    only_active = _only_active(a)
    clocks = _clocks(a)
    skew = clocks.detail["offsets"] if clocks is not None else {}
    found = [
        _unreadable(a, focus),
        _short_buffers(a, d, focus, set(only_active.ranks) if only_active else set(), skew),
        _no_started(a, d),
        clocks,
        _mixed_versions(a),
        only_active,
        _no_stacks(a),
    ]
    return [c for c in found if c is not None]


# -- the files -------------------------------------------------------------------------


def _unreadable(a: Analysis, focus: set[int]) -> Caveat | None:
    files = unreadable_files(a)
    if not files:
        return None
    ranks = tuple(sorted(files))
    detail = {"files": {r: (files[r].file, files[r].error) for r in ranks}}
    return Caveat(CaveatKind.UNREADABLE, ranks, bool(focus & set(ranks)), detail)


def _mixed_versions(a: Analysis) -> Caveat | None:
    files = a.dumps.files
    versions = files[s.VERSION].astype(str)
    by_version = {v: sorted(int(r) for r in files.loc[(versions == v).to_numpy(), s.RANK]) for v in versions.unique()}
    if len(by_version) < 2:
        return None
    return Caveat(CaveatKind.MIXED_VERSIONS, tuple(sorted(a.dumps.ranks)), False, {"versions": by_version})


def _no_stacks(a: Analysis) -> Caveat | None:
    """Ranks whose JSON dumps carry no call stacks (torch's JSON writer never writes them)."""
    files = a.dumps.files
    json_ranks = {int(r) for r in files.loc[(files[s.FORMAT].astype(str) == "json").to_numpy(), s.RANK]}
    if not json_ranks:
        return None
    e = a.dumps.entries
    with_stack = _ranks_where(e, e[s.STACK_ID].notna().to_numpy())
    ranks = tuple(sorted(json_ranks - with_stack))
    return Caveat(CaveatKind.NO_STACKS, ranks, False) if ranks else None


def _only_active(a: Analysis) -> Caveat | None:
    """Ranks whose entries hold no finished work while pg_status says they finished some:
    dumped with onlyActive, their completed history is not in the file."""
    st = a.dumps.status
    done_any = st[s.LAST_COMPLETED].to_numpy(dtype=np.int64, na_value=-1) >= 0
    finished = set(st.loc[done_any, s.RANK].astype(int))
    if not finished:
        return None
    e = a.dumps.entries
    done = equals(e[s.STATE], "completed") | flag(e[s.RETIRED])
    with_done = _ranks_where(e, done)
    ranks = tuple(sorted(finished - with_done))
    return Caveat(CaveatKind.ONLY_ACTIVE, ranks, False) if ranks else None


def _ranks_where(table: pd.DataFrame, rows: np.ndarray) -> set[int]:
    """The ranks of ``table``'s rows (entries or cells) where ``rows`` is True: counted, not
    sorted (a rank is a small number, never negative: see ``parse``)."""
    ranks = int_values(table[s.RANK], -1)  # the column itself, in its own width (int16 or int32)
    if not len(ranks):
        return set()
    return set(np.flatnonzero(counts_of(ranks, int(ranks.max()) + 1, rows)).tolist())  # a slice at a time


# -- what the dumps can tell -------------------------------------------------------------


def _oldest_created(entries: pd.DataFrame) -> dict[int, int]:
    """Each rank's oldest entry creation time (ns), where it has one."""
    times = int_values(entries[s.T_CREATED], np.iinfo(np.int64).max)
    block_ranks, starts, _ = rank_blocks(int_values(entries[s.RANK], -1))
    if not len(starts):
        return {}
    oldest: dict[int, int] = {}
    for rank, t in zip(block_ranks.tolist(), np.minimum.reduceat(times, starts).tolist()):
        if t < np.iinfo(np.int64).max:
            oldest[rank] = min(t, oldest.get(rank, t))
    return oldest


def divergence_ns(a: Analysis, d: Diagnosis, skew: dict[int, float] | None = None) -> int | None:
    """When the wavefront collective was first issued (ns), if any rank recorded it; times of
    ranks whose clock is off by ``skew`` (ns) are corrected first."""
    if d.wave is None or d.wave[1] is None:
        return None
    c = a.cells
    hit = c.loc[((c[s.PG_KEY] == d.wave[0]) & (c[s.SEQ] == d.wave[1])).to_numpy()]
    times = created_ns(a.dumps.entries, hit)
    fixed = [t - (skew or {}).get(int(r), 0) for r, t in zip(hit[s.RANK], times, strict=True) if not pd.isna(t)]
    return int(min(fixed)) if fixed else None


def _short_buffers(
    a: Analysis, d: Diagnosis, focus: set[int], only_active: set[int], skew: dict[int, float]
) -> Caveat | None:
    """Ranks whose oldest entry is newer than the divergence, or whose entries of the
    wavefront group start after its seq: their state at the divergence is lost. Ranks
    that dumped only active entries are left to that caveat: their ring buffer may reach
    back, the dump leaves the finished entries out. Clocks found off are corrected first."""
    if d.wave is None:
        return None
    t0 = divergence_ns(a, d, skew)
    oldest = _oldest_created(a.dumps.entries)
    late = {r for r, t in oldest.items() if t0 is not None and t - skew.get(r, 0) > t0}
    key, seq = d.wave[0], d.wave[1]
    if seq is not None and key in a.groups.groups:
        for r in a.groups.groups[key].ranks:
            p = a.progress.get((key, r))
            if p is not None and p.window_start is not None and p.window_start > seq:
                late.add(r)
    late -= only_active
    if not late:
        return None
    return Caveat(CaveatKind.SHORT_BUFFER, tuple(sorted(late)), bool(focus & late), {"divergence_ns": t0})


def _no_started(a: Analysis, d: Diagnosis) -> Caveat | None:
    """A verdict of 'stuck in flight' rests on the started state; without it, a collective
    stuck on the GPU and one that never started there look the same."""
    stalled = sorted(r for r, c in d.suspect_classes.items() if c == FailureClass.STALLED_IN_FLIGHT)
    if not stalled and not d.suspect_classes:
        stalled = sorted({r for ranks in a.graph.stalled.values() for r in ranks})
    if not stalled:
        return None
    pending = a.cells.loc[~a.cells[DONE].to_numpy(), s.STATE].astype(str)
    if (pending == "started").any():
        return None
    return Caveat(CaveatKind.NO_STARTED, tuple(stalled), True)


# -- clocks ------------------------------------------------------------------------------

_CLOCK_SAMPLE_CELLS = 200_000
"""The clock check reads at most about this many cells (whole collectives)..."""
_CLOCK_CELLS_PER_RANK = 256
"""...and no more than this many per rank where fewer suffice: a median of 256 offsets is
as good as one of 2,000."""


def _clocks(a: Analysis) -> Caveat | None:
    """Ranks whose clock is off from the others' by more than the job's step time.

    A rank's offset is the median, over the finished collectives it shared, of how much
    later than the collective's median member it created its entry. In a job that runs in
    lockstep no rank can be a whole step ahead or behind, so an offset above the step time
    (the longest typical gap between consecutive collectives of one group) is the clock.
    """
    done = a.cells[DONE].to_numpy()
    finished = int(np.count_nonzero(done))
    if not finished:
        return None
    per_rank = finished // len(_ranks_where(a.cells, done))
    every = max(1, finished // _CLOCK_SAMPLE_CELLS, per_rank // _CLOCK_CELLS_PER_RANK)
    if every > 1:  # whole collectives: every member of a kept seq stays
        done = done & ((a.cells[s.SEQ].to_numpy() % every) == 0)
    c = a.cells.loc[done, [s.PG_KEY, s.SEQ, s.RANK, ROW, COLLECTIVE]]
    t = created_ns(a.dumps.entries, c).to_numpy(dtype=np.float64, na_value=np.nan)
    keep = ~np.isnan(t)
    c, t = c.loc[keep], t[keep]
    if len(c) < 4:
        return None
    step = _step_ns(c, t)
    offsets = _offsets(c, t)
    if step is None or not offsets:
        return None
    off = {r: o for r, o in offsets.items() if abs(o) > step}
    if not off:
        return None
    worst = max(abs(o) for o in off.values())
    return Caveat(CaveatKind.CLOCKS, tuple(sorted(off)), False, {"offset_ns": worst, "step_ns": step, "offsets": off})


def _offsets(c: pd.DataFrame, t: np.ndarray) -> dict[int, float]:
    coll = c[COLLECTIVE].to_numpy()
    order = np.lexsort((t, coll))
    coll_sorted, t_sorted = coll[order], t[order]
    starts = np.flatnonzero(np.concatenate(([True], coll_sorted[1:] != coll_sorted[:-1])))
    sizes = np.diff(np.append(starts, len(coll_sorted)))
    medians = t_sorted[starts + (sizes - 1) // 2]
    shared = np.repeat(sizes, sizes) > 1
    offset = (t_sorted - np.repeat(medians, sizes))[shared]
    ranks = c[s.RANK].to_numpy(dtype=np.int64)[order][shared]
    if not len(ranks):
        return {}
    frame = pd.DataFrame({"rank": ranks, "offset": offset})
    return {int(r): float(o) for r, o in frame.groupby("rank")["offset"].median().items()}


def _step_ns(c: pd.DataFrame, t: np.ndarray) -> float | None:
    """The longest typical interval between consecutive collectives of one group (ns)."""
    member = group_ids(c, [s.PG_KEY, s.RANK], first_seen=False)
    group = group_ids(c, [s.PG_KEY], first_seen=False)
    n = int(member.max()) + 1
    q = c[s.SEQ].to_numpy(dtype=np.float64)
    q0, q1, t0, t1 = np.full(n, np.inf), np.full(n, -np.inf), np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(q0, member, q)
    np.maximum.at(q1, member, q)
    np.minimum.at(t0, member, t)
    np.maximum.at(t1, member, t)
    group_of = np.empty(n, dtype=np.int64)
    group_of[member] = group
    spans = q1 > q0
    if not spans.any():
        return None
    per_seq = pd.Series((t1 - t0)[spans] / (q1 - q0)[spans])
    step = float(per_seq.groupby(group_of[spans]).median().max())
    return step if step > 0 else None
