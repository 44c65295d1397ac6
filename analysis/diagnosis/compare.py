"""Two snapshots of one job, minutes apart: who moved in between, and so dead or slow.

Per rank and process group, the collectives completed between the EARLIER and the
LATER dumps. A rank that completed nothing while its peers went on is a straggler; when
nobody moved the job hangs; when everybody moved the job is slow, and the ranks the
others wait on in the later dumps are slow, not stuck.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..model.cells import int_values
from ..types import InputError, Membership
from .analysis import Analysis
from .lateness import lateness


class Motion(enum.StrEnum):
    HUNG = "hung"
    """No rank completed a collective between the dumps."""
    STRAGGLER = "straggler"
    """Some ranks completed nothing while others went on."""
    PROGRESSING = "progressing"
    """Every rank completed collectives between the dumps."""


@dataclass(frozen=True, slots=True)
class Comparison:
    motion: Motion
    progressing: tuple[int, ...]
    stalled: tuple[int, ...]
    named: tuple[int, ...]
    """HUNG and STRAGGLER: the stuck ranks (the later suspects among the stalled or without
    a dump in the later set, else all stalled). PROGRESSING: the slow ranks (the later suspects, who moved)."""
    interval_ns: int | None
    """Between the newest entries of the two sets: FR records no dump time."""
    deltas: pd.DataFrame
    """rank, pg_key, completed_earlier, completed_later, completed_between."""
    slow: tuple[int, ...] = ()
    """PROGRESSING: the ranks the others waited on, measured from when each rank came into the
    collectives between the dumps (``lateness.WAIT_SHARE``); empty otherwise."""
    lateness: pd.DataFrame | None = None
    """PROGRESSING: the figures ``slow`` rests on, per rank (``lateness.Lateness.table``)."""


def compare_progress(later: Analysis, earlier: Analysis, later_suspects: set[int]) -> Comparison:
    """How far each rank got between ``earlier`` and ``later`` (two dump sets of one job)."""
    _same_job(later, earlier)
    rows = []
    for (key, rank), p in later.progress.items():
        q = earlier.progress.get((key, rank))
        if q is None or p.completed is None or q.completed is None:
            continue
        rows.append((rank, key, q.completed, p.completed, p.completed - q.completed))
    deltas = pd.DataFrame(
        rows, columns=[s.RANK, s.PG_KEY, "completed_earlier", "completed_later", "completed_between"]
    ).sort_values([s.RANK, s.PG_KEY], ignore_index=True)
    if deltas.empty:
        raise InputError("the two dump sets share no process group and rank: they are not snapshots of one job")
    went_back = int((deltas["completed_between"] < 0).sum())
    if went_back and went_back >= int((deltas["completed_between"] > 0).sum()):
        raise InputError(
            f"in {went_back} (rank, group) pairs the EARLIER dumps are further along than the LATER ones: "
            "the two folders are swapped"
        )
    moved = deltas.groupby(s.RANK)["completed_between"].max() > 0
    progressing = tuple(int(r) for r in moved.index[moved.to_numpy()])
    stalled = tuple(int(r) for r in moved.index[~moved.to_numpy()])
    # A suspect without a dump in the later set (its process stopped, its dumps with it) did
    # not move either: it is named, not the ranks that wait on it.
    unseen = later_suspects - set(deltas[s.RANK].astype(int))
    if not progressing:
        motion = Motion.HUNG
        named = tuple(sorted(later_suspects & (set(stalled) | unseen))) or stalled
    elif stalled:
        motion = Motion.STRAGGLER
        named = tuple(sorted(later_suspects & (set(stalled) | unseen))) or stalled
    else:
        motion = Motion.PROGRESSING
        named = tuple(sorted(later_suspects & set(progressing)))
    interval = _interval(later, earlier)
    if motion != Motion.PROGRESSING:
        return Comparison(motion, progressing, stalled, named, interval, deltas)
    late = lateness(later, earlier, interval)
    return Comparison(motion, progressing, stalled, named, interval, deltas, late.slow, late.table)


def _same_job(later: Analysis, earlier: Analysis) -> None:
    """Both sets must hold one job: a group both know has the same members in both.

    Groups are matched by key (their name, equal on every rank); a group whose members
    are inferred from the entries is compared only on the ranks that wrote a dump to both
    sets (a rank without a dump in one of them is in neither's inferred list), and the
    description, local pg_id or where the members came from never count."""
    before = earlier.groups.groups
    dumped = set(later.dumps.ranks) & set(earlier.dumps.ranks)
    for key, g in later.groups.groups.items():
        other = before.get(key)
        if other is None:
            continue
        mine, theirs = set(g.ranks), set(other.ranks)
        if Membership.INFERRED in (g.membership_source, other.membership_source):
            mine, theirs = mine & dumped, theirs & dumped
        if mine != theirs:
            raise InputError(
                f"group {g.name} has ranks {_listed(g.ranks)} in the LATER dumps and {_listed(other.ranks)} "
                "in the EARLIER ones: they are not snapshots of one job"
            )


def _listed(ranks: tuple[int, ...]) -> str:
    """The members, cut after 16 with how many more there are (never a list that looks equal)."""
    shown = ", ".join(map(str, ranks[:16]))
    return f"[{shown}]" if len(ranks) <= 16 else f"[{shown}, ... {len(ranks) - 16} more]"


def _newest_ns(a: Analysis) -> int | None:
    times = int_values(a.dumps.entries[s.T_CREATED], -1)
    return int(times.max()) if len(times) and times.max() > 0 else None


def _interval(later: Analysis, earlier: Analysis) -> int | None:
    t1, t0 = _newest_ns(later), _newest_ns(earlier)
    return None if t1 is None or t0 is None else t1 - t0
