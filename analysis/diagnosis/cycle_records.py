"""A wait-for cycle explained by the records of its members (layer 3 of the one model).

The glue between the analysis and :mod:`.explanation`: which ranks' records to read (the
members, up to ``MATES`` ranks of each member's program and stage, and ``WITNESSES`` ranks
of the groups the cycle waits in), which edits explain a wait of the cycle, and the
findings the causes become.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import schema as s
from ..model import costs
from ..model.records import Records, newest_records
from ..types import FailureClass
from .analysis import Analysis
from .edit_distance import SKIP, SUBSTITUTE
from .explanation import MATES, RecordEdit, cycle_causes
from .findings import NEVER, Finding, Kind, Role
from .waitfor import WaitEdge, WaitGraph

WITNESSES = 16
"""Ranks of the groups a cycle waits in, besides its members and their programs' ranks, whose
records tell a call the job issues (at more than one point) from one a rank issued alone."""


@dataclass(frozen=True, slots=True)
class CycleWaits:
    """What the explanation reads of the wait-for graph."""

    graph: WaitGraph
    into: dict[int, list[WaitEdge]]
    """The waits on each rank."""
    created: dict[tuple[str, int, int], int]
    """(group, rank, seq) -> when the rank issued that pending collective (ns)."""
    program_ranks: Callable[[int], set[int]]
    """The ranks of a rank's program and stage, itself included."""
    call_sites: dict[int, str]
    """stack id -> call site (past the program's own helpers)."""


def explain_cycle(a: Analysis, w: CycleWaits, comp: list[int]) -> list[Finding]:
    """The members of cycle ``comp`` whose records explain it (see :mod:`.explanation`), as findings."""
    mates = {r: sorted(w.program_ranks(r) - {r})[:MATES] for r in comp}
    ranks = set(comp) | {m for ms in mates.values() for m in ms}
    held = {b.pg_key for b in w.graph.blocked if b.rank in ranks and b.pg_key in a.groups.groups}
    others = sorted({m for k in held for m in a.groups.groups[k].ranks} - ranks)
    ranks |= set(others[:WITNESSES])  # their records say which calls the job issues, not only these ranks
    records = newest_records(a.dumps.entries, ranks, a.groups.key_of, a.families.family_of, w.call_sites)
    causes = cycle_causes(records, comp, mates, lambda e: _explains_a_wait(a, w, records, e))
    return [] if causes is None else [_record_edit_finding(a, w, records, e) for e in causes.values()]


def _explains_a_wait(a: Analysis, w: CycleWaits, records: Records, e: RecordEdit) -> bool:
    """Whether an edit explains a wait: a call skipped where peers wait for the rank in a group
    of that family; a call added, or another issued in place of the program's (another op
    or group), where the rank itself waits in it. A wrong tensor alone holds nobody up."""
    t = records.table
    family_of = a.families.family_of
    if e.kind == SKIP:
        if e.expected_row is None:
            return False
        family = t["family"].iat[e.expected_row]
        return any(family_of.get(x.pg_key, x.pg_key) == family for x in w.into.get(e.rank, []))
    if e.kind == SUBSTITUTE and s.OP not in e.differs and e.cost < costs.ELSEWHERE:
        return False
    key, seq = str(t[s.PG_KEY].iat[e.row]), int(t[s.SEQ].iat[e.row])
    return any(b.rank == e.rank and (b.pg_key, b.seq) == (key, seq) for b in w.graph.blocked)


def _record_edit_finding(a: Analysis, w: CycleWaits, records: Records, e: RecordEdit) -> Finding:
    """A :class:`RecordEdit` as a finding: for a skip, the call skipped in the rank's own group
    of that family, at the seq its peers wait for it in."""
    t = records.table
    expected = None if e.expected_row is None else t.loc[e.expected_row]
    where = t.loc[e.row] if e.kind != SKIP or expected is None else expected
    key, seq, op, p2p = str(where[s.PG_KEY]), int(where[s.SEQ]), str(where[s.OP]), bool(where[s.IS_P2P])
    if e.kind == SKIP and expected is not None:
        family = str(expected["family"])
        waits = [x for x in w.into.get(e.rank, []) if a.families.family_of.get(x.pg_key, x.pg_key) == family]
        if waits:
            first = min(waits, key=lambda x: x.seq)
            key, seq = first.pg_key, first.seq
    cls = FailureClass.P2P_UNMATCHED if e.kind == SKIP and p2p else FailureClass.DESYNC
    if e.kind == SUBSTITUTE and e.differs and set(e.differs) <= {s.INPUT_SIZES, s.INPUT_DTYPES}:
        cls = FailureClass.SIZE_MISMATCH if s.INPUT_SIZES in e.differs else FailureClass.DTYPE_MISMATCH
    waiters = tuple(sorted({x.waiter for x in w.into.get(e.rank, [])}))
    family = "" if expected is None else str(expected["family"]).split("#")[0]
    detail = {
        "edit": e.kind,
        "record_id": e.record_id,
        "against": e.against,
        "expected": "" if expected is None else f"their {family} group's seq {int(expected[s.SEQ])} {expected[s.OP]}",
        "differs": e.differs,
        "shown": e.shown,
        "cost": e.cost,
        "call_site": where[s.CALL_SITE] if isinstance(where[s.CALL_SITE], str) else None,
    }
    since = w.created.get((key, e.rank, seq), NEVER)
    return Finding(Kind.RECORD_EDIT, Role.SUSPECT, (e.rank,), cls, key, seq, op, waiters, since, detail)
