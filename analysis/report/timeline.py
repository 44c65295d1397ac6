"""The timeline of each rank class: its last completed collective and its first stuck one.

One member speaks for its class (its members are in the same situation): the newest entry
it finished and the oldest it did not, with when each was created, counted back from the
dump. The Markdown export lists it and draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..diagnosis.analysis import Analysis
from ..model.cells import int_values
from .report import Report


@dataclass(frozen=True, slots=True)
class Moment:
    """One entry of the timeline: which collective, in which group, and when it was created."""

    op: str
    group: str
    seq: int | None
    state: str
    created_ns: int | None

    def text(self) -> str:
        seq = "" if self.seq is None else f" seq {self.seq}"
        return f"{self.op}{seq} of {self.group} ({self.state})"


@dataclass(frozen=True, slots=True)
class ClassTimeline:
    class_id: int
    ranks: tuple[int, ...]
    rank: int
    """The member whose entries are shown."""
    suspect: bool
    situation: str
    last_completed: Moment | None
    first_stuck: Moment | None


def dump_time(a: Analysis) -> int | None:
    """The newest entry's creation time (ns): Flight Recorder writes no dump time."""
    times = int_values(a.dumps.entries[s.T_CREATED], -1)
    top = int(times.max()) if len(times) else -1
    return top if top > 0 else None


def class_timelines(report: Report) -> list[ClassTimeline]:
    """One timeline per rank class, in the report's order (largest first)."""
    a = report.analysis
    out = []
    for c in report.rank_classes:
        rank = int(min(c["ranks"]))
        done, stuck = (None, None) if a is None else rank_moments(a, rank)
        out.append(ClassTimeline(c["id"], tuple(c["ranks"]), rank, c["suspect"], c["situation"], done, stuck))
    return out


def rank_moments(a: Analysis, rank: int) -> tuple[Moment | None, Moment | None]:
    """The rank's newest completed entry and its oldest unfinished one (None where it has none)."""
    mine = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
    if mine.empty:
        return None, None
    mine = mine.sort_values(s.RECORD_ID)
    retired = mine[s.RETIRED].astype("boolean").fillna(False).to_numpy(dtype=bool)
    done = (mine[s.STATE].astype(str).to_numpy() == "completed") | retired
    last = _moment(mine[done].iloc[-1], "completed") if done.any() else None
    first = _moment(mine[~done].iloc[0], None) if (~done).any() else None
    return last, first


def _moment(row: pd.Series, state: str | None) -> Moment:
    p2p = bool(row.get(s.IS_P2P)) if not pd.isna(row.get(s.IS_P2P)) else False
    seq = row.get(s.P2P_SEQ) if p2p else row.get(s.SEQ)
    created = row.get(s.T_CREATED)
    desc = row.get(s.PG_DESC)
    name = row.get(s.PG_NAME)
    group = f"group {name} ({desc or 'no description'})"
    return Moment(
        op=str(row.get(s.OP) or "op") + (" (p2p)" if p2p else ""),
        group=group,
        seq=None if seq is None or pd.isna(seq) else int(seq),
        state=state or str(row.get(s.STATE)),
        created_ns=None if created is None or pd.isna(created) or int(created) <= 0 else int(created),
    )
