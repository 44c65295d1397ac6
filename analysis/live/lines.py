"""One line per snapshot: progressing, slow, straggler or hung, with who, where and since when.

A single snapshot of a running job always has collectives in flight, so its own verdict
is never the line's word: the word comes from the comparison with the previous snapshot
(``Report.comparison``). ``hung``: nobody completed a collective in between; ``straggler``:
some ranks completed nothing while others went on; ``slow``: everybody moved, and the
others spent at least a quarter of the time between the snapshots waiting on some rank(s)
alone, measured from when each rank came into each collective in between
(``diagnosis.lateness``); ``progressing`` otherwise. The first snapshot is the ``baseline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..diagnosis.compare import Comparison, Motion
from ..report.words import ranks_text

if TYPE_CHECKING:
    from ..report.report import Report
    from .snapshots import Snapshot

BASELINE, PROGRESSING, SLOW, STRAGGLER, HUNG, UNREADABLE = (
    "baseline",
    "progressing",
    "slow",
    "straggler",
    "hung",
    "unreadable",
)
STOPPED = (HUNG,)
"""The words that mean the job stopped moving (the full report is written then)."""


@dataclass(slots=True)
class Line:
    """What is said about one snapshot."""

    snapshot: str
    state: str
    ranks: tuple[int, ...] = ()
    """hung, straggler: the stuck ranks; slow: the slow ones."""
    ranks_loaded: int = 0
    missing: tuple[int, ...] = ()
    """Expected ranks whose file never appeared in this snapshot."""
    pg_name: str | None = None
    pg_desc: str | None = None
    seq: int | None = None
    op: str | None = None
    interval_s: float | None = None
    seconds: float = 0.0
    """Reading and analysing the snapshot."""
    report: str | None = None
    """The full report's path (the first snapshot in which the job stopped moving)."""
    message: str = ""
    candidates: tuple[int, ...] = field(default=(), repr=False)
    """The ranks the others wait on in this snapshot alone (its suspects; never the word)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON line (``--json-lines``), schema ``flightdeck.watch/1``."""
        return {
            "schema": "flightdeck.watch/1",
            "snapshot": self.snapshot,
            "state": self.state,
            "ranks": list(self.ranks),
            "group": None if self.pg_name is None else {"pg_name": self.pg_name, "pg_desc": self.pg_desc},
            "seq": self.seq,
            "op": self.op,
            "ranks_loaded": self.ranks_loaded,
            "missing_ranks": list(self.missing),
            "interval_s": self.interval_s,
            "seconds": round(self.seconds, 3),
            "report": self.report,
            "message": self.message,
        }

    def text(self) -> str:
        """The line a person reads."""
        head = f"{self.snapshot}  {self.state:<11}"
        parts = [self.message] if self.message else []
        if self.pg_name is not None and self.state in (HUNG, STRAGGLER, SLOW):
            where = f"group {self.pg_name}" + (f" ({self.pg_desc})" if self.pg_desc else "")
            at = f"{self.op} seq {self.seq} of {where}" if self.seq is not None else where
            parts.append(f"at {at}")
        if self.missing:
            parts.append(f"no file from {_ranks(self.missing)}")
        parts.append(f"{self.ranks_loaded} ranks read in {self.seconds:.2f} s")
        if self.report:
            parts.append(f"full report: {self.report}")
        return head + "  " + "; ".join(parts)


def _ranks(ranks: tuple[int, ...]) -> str:
    return ranks_text(list(ranks), 12)


def _waited(c: Comparison) -> str:
    """How long the others waited on the slow rank(s) alone, against the interval."""
    t = c.lateness
    if t is None or t.empty or not c.interval_ns:
        return "the others waited on"
    wait = float(t[t["rank"].isin(c.slow)]["wait_ns"].max()) / 1e9
    return f"the others waited {wait:.2f} s (summed over collectives) in {c.interval_ns / 1e9:.2f} s on"


def line_of(report: Report, snap: Snapshot, previous: Line | None, seconds: float) -> Line:
    """The line for ``report`` (``snap`` analysed against the previous snapshot, if any)."""
    line = Line(snap.name, BASELINE, ranks_loaded=report.ranks_loaded, missing=snap.missing, seconds=seconds)
    line.candidates = tuple(sorted(report.suspect_classes))
    w = report.wavefront
    c = report.comparison
    if report.ranks_loaded == 0:
        line.state, line.message = UNREADABLE, "no dump could be read"
        return line
    if c is None:
        line.message = "the first snapshot: the next one is compared with it"
        return line
    line.interval_s = None if c.interval_ns is None else round(c.interval_ns / 1e9, 3)
    if c.motion == Motion.HUNG:
        line.state, line.ranks = HUNG, c.named
        line.message = f"{_ranks(c.named)} stuck, no rank moved since the previous snapshot"
    elif c.motion == Motion.STRAGGLER:
        line.state, line.ranks = STRAGGLER, c.named
        line.message = f"{_ranks(c.named)} completed nothing while {len(c.progressing)} other rank(s) went on"
    else:
        if c.slow:
            line.state, line.ranks = SLOW, c.slow
            line.message = f"every rank moved; {_waited(c)} {_ranks(c.slow)} alone: slow, not stuck"
        else:
            line.state = PROGRESSING
            line.message = "every rank completed collectives since the previous snapshot"
    if w is not None and line.state != PROGRESSING:
        line.pg_name, line.pg_desc, line.seq, line.op = w.pg_name, w.pg_desc, w.collective_seq_id, w.op
    return line
