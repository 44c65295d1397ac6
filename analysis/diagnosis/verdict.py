"""The verdict: suspects, failure class, wavefront and findings, from an Analysis.

One step per concern, in the order evidence is weighed: mismatches first (the earliest
divergence in each group explains what follows), then the hang (roots of the wait-for
graph, explained), then a collective stuck on every member, then ranks without a dump.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import schema as s
from ..model.cells import created_ns
from ..types import AttributionState, FailureClass, Verdict
from .analysis import Analysis
from .findings import Finding, Kind, Role
from .hang import explain_hang
from .hang_view import HangView
from .mismatch import Mismatch, attributes_that_differ
from .own_calls import own_call_findings
from .waitfor import reaches

if TYPE_CHECKING:
    import pandas as pd

Wave = tuple[str, int | None, str | None]
"""(group key, seq, op) where progress diverged."""


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What the dumps show, decided; the words are rendered from it in the report layer."""

    verdict: Verdict
    failure_class: FailureClass
    suspect_classes: dict[int, FailureClass]
    victims: tuple[int, ...]
    attribution: AttributionState
    wave: Wave | None
    findings: tuple[Finding, ...]
    """Everything the verdict rests on, in the order a reader should see it."""
    possible: dict[int, Finding] = field(default_factory=dict)
    """Ranks that may be a cause, which the dumps cannot tell apart from others, with the finding why."""

    @property
    def suspects(self) -> list[int]:
        return sorted(self.suspect_classes)


class _Draft:
    """The verdict as it is assembled: suspects in the order found, the first wave, findings."""

    def __init__(self) -> None:
        self.classes: dict[int, FailureClass] = {}
        self.possible: dict[int, Finding] = {}
        self.wave: Wave | None = None
        self.findings: list[Finding] = []

    def add(self, f: Finding, wave: Wave | None = None) -> None:
        self.findings.append(f)
        if f.role == Role.SUSPECT and f.failure_class is not None:
            for r in f.ranks:
                self.classes.setdefault(r, f.failure_class)
        if f.role == Role.POSSIBLE:
            for r in f.ranks:
                self.possible.setdefault(r, f)
        if self.wave is None and wave is not None:
            self.wave = wave


def _mismatch_since(a: Analysis, decisive: list[Mismatch]) -> int | None:
    """When the earliest decisive mismatch was issued (ns), if the dumps have times."""
    times = []
    c = a.cells
    for m in decisive:
        hit = created_ns(a.dumps.entries, c.loc[(c[s.PG_KEY] == m.pg_key) & (c[s.SEQ] == m.seq)]).dropna()
        if len(hit):
            times.append(int(hit.min()))
    return min(times) if times else None


def _mismatch_finding(m: Mismatch, cells: pd.DataFrame) -> Finding:
    """``cells``: at least those of ``m``'s (group, seq)."""
    detail = {
        "attribute": m.attribute,
        "found": m.found,
        "expected": m.expected,
        "decided_by": m.decided_by,
        "shift": m.shift,
        "differs": attributes_that_differ(cells, m),
    }
    if m.decisive:
        return Finding(Kind.MISMATCH, Role.SUSPECT, m.odd_ranks, m.failure_class, m.pg_key, m.seq, detail=detail)
    return Finding(Kind.UNDECIDED_MISMATCH, Role.POSSIBLE, m.odd_ranks, m.failure_class, m.pg_key, m.seq, detail=detail)


def _weigh_mismatches(a: Analysis, draft: _Draft) -> list[Mismatch]:
    """The earliest mismatch of each group that a majority decides; returns them."""
    first_per_group: dict[str, Mismatch] = {}
    for m in sorted(a.mismatches, key=lambda m: m.seq):
        first_per_group.setdefault(m.pg_key, m)
    decisive = [m for m in first_per_group.values() if m.decisive]
    # the cells of every mismatch's (group, seq), found in one pass over all cells
    near = a.cells.loc[
        a.cells[s.PG_KEY].isin({m.pg_key for m in a.mismatches}).to_numpy()
        & a.cells[s.SEQ].isin({m.seq for m in a.mismatches}).to_numpy()
    ]
    for m in sorted(decisive, key=lambda m: (m.failure_class.priority, m.seq)):
        op = near.loc[(near[s.PG_KEY] == m.pg_key) & (near[s.SEQ] == m.seq), s.OP]
        draft.add(_mismatch_finding(m, near), (m.pg_key, m.seq, str(op.mode().iloc[0]) if not op.empty else None))
    decided_groups = {d.pg_key for d in decisive}
    for m in sorted(a.mismatches, key=lambda m: (m.failure_class.priority, m.seq)):
        if not m.decisive and m.pg_key not in decided_groups:
            draft.add(_mismatch_finding(m, near))
    return decisive


def _weigh_exchanges(a: Analysis, draft: _Draft, explained: set[tuple[str, int]]) -> None:
    """All-to-all exchanges that do not add up: a size mismatch no single rank can be named for,
    unless a decided mismatch at the same (group, seq) explains it (a rank at another call)."""
    for imb in a.imbalances:
        if (imb.pg_key, imb.seq) in explained:
            continue
        detail = {"sent": imb.sent, "received": imb.received}
        f = Finding(
            Kind.SIZES_DO_NOT_ADD_UP, Role.POSSIBLE, imb.ranks, FailureClass.SIZE_MISMATCH, imb.pg_key, imb.seq, imb.op
        )
        draft.add(replace(f, detail=detail), (imb.pg_key, imb.seq, imb.op))


def _weigh_own_calls(w: HangView, draft: _Draft) -> set[str]:
    """Ranks blocked in a collective of their own, which they added (see :mod:`.own_calls`);
    returns their groups."""
    if draft.classes:
        return set()
    found = own_call_findings(w)
    for f in found:
        draft.add(f, (f.pg_key, f.seq, f.op))
    return {f.pg_key for f in found if f.pg_key is not None}


def _weigh_hang(
    w: HangView, draft: _Draft, decisive: list[Mismatch], own_groups: set[str]
) -> tuple[frozenset[int], bool]:
    """The roots of the wait-for graph, explained; returns the ranks set aside and whether a cycle stayed."""
    a = w.a
    members = {r for m in decisive for r in a.groups.groups[m.pg_key].ranks}
    members |= {r for k in own_groups for r in a.groups.groups[k].ranks}
    since = _mismatch_since(a, decisive) if decisive else None
    went_ahead = {r for m in decisive if m.shift for r in m.odd_ranks}
    named = {r for f in draft.findings if f.role == Role.SUSPECT for r in f.ranks}
    hang = explain_hang(w, since, members if draft.classes else set(), went_ahead, named)
    at_tie = _held_at_a_tie(a, draft)
    for f in sorted(hang.suspects, key=lambda f: (f.since, f.rank)):
        if f.rank in at_tie:  # it waits in the tie: whoever is wrong there, the rest follows
            draft.add(Finding(Kind.CONSEQUENCE, Role.CLEARED, f.ranks, detail={"waited_on_by": f.waiters}))
            continue
        draft.add(f, (f.pg_key, f.seq, f.op) if f.pg_key is not None else None)
    for note in hang.notes:
        draft.add(note)
    return hang.set_aside, hang.unresolved


def _held_at_a_tie(a: Analysis, draft: _Draft) -> set[int]:
    """Ranks of an undecided mismatch blocked in its collective (none of them is ahead of it)."""
    ties = [f for f in draft.findings if f.kind == Kind.UNDECIDED_MISMATCH]
    heads = {(b.rank, b.pg_key, b.seq) for b in a.graph.blocked if not b.queued and not b.is_p2p}
    return {r for f in ties for r in f.ranks if (r, f.pg_key, f.seq) in heads}


def _weigh_stalled(a: Analysis, draft: _Draft) -> None:
    """Everyone issued it, nobody finished: stuck in flight, with no rank isolated."""
    if draft.classes or not a.graph.stalled:
        return
    (key, q), ranks = max(a.graph.stalled.items(), key=lambda kv: len(kv[1]))
    op = next((b.op for b in a.graph.blocked if b.pg_key == key and b.seq == q), None)
    draft.wave = (key, q, op)
    draft.add(Finding(Kind.STALLED, Role.NOTE, tuple(sorted(ranks)), None, key, q, op))


def _weigh_missing_dumps(a: Analysis, draft: _Draft) -> None:
    for r in a.missing_dumps:
        if r not in draft.classes:
            draft.add(Finding(Kind.ABSENT, Role.SUSPECT, (r,), FailureClass.MISSING_DUMP))


def _failure_class(a: Analysis, draft: _Draft) -> FailureClass:
    """The most telling class among the suspects, ties to the commonest; else among the
    findings that name no rank for sure."""
    if draft.classes:
        counts = Counter(draft.classes.values())
        return min(counts, key=lambda c: (c.priority, -counts[c]))
    undecided = [f.failure_class for f in draft.findings if f.role == Role.POSSIBLE and f.failure_class]
    if undecided:
        return min(undecided, key=lambda c: c.priority)
    return FailureClass.STALLED_IN_FLIGHT if a.graph.stalled else FailureClass.HEALTHY


def _verdict(a: Analysis, failure_class: FailureClass) -> Verdict:
    if failure_class == FailureClass.HEALTHY:
        return Verdict.HEALTHY
    g = a.graph
    return Verdict.HANG if g.edges or g.stragglers or g.stalled or a.missing_dumps else Verdict.MISMATCH


def diagnose(a: Analysis) -> Diagnosis:
    """Decide suspects, class, wavefront and findings from the analysis."""
    draft = _Draft()
    decisive = _weigh_mismatches(a, draft)
    _weigh_exchanges(a, draft, {(m.pg_key, m.seq) for m in decisive})
    w = HangView(a)
    own_groups = _weigh_own_calls(w, draft)
    set_aside, unresolved = _weigh_hang(w, draft, decisive, own_groups)
    _weigh_stalled(a, draft)
    _weigh_missing_dumps(a, draft)

    suspects = set(draft.classes)
    blocked = {b.rank for b in a.graph.blocked}
    victims = tuple(sorted((reaches(a.graph, suspects) | blocked | set_aside) - suspects))
    if victims:
        draft.add(Finding(Kind.WAITING, Role.NOTE, victims))
    failure_class = _failure_class(a, draft)
    isolated = bool(suspects) and not unresolved and len(suspects) < max(len(a.dumps.ranks), 1)
    return Diagnosis(
        verdict=_verdict(a, failure_class),
        failure_class=failure_class,
        suspect_classes=dict(draft.classes),
        victims=victims,
        attribution=AttributionState.CONTINUE if isolated else AttributionState.STOP,
        wave=draft.wave,
        findings=tuple(draft.findings),
        possible={r: f for r, f in draft.possible.items() if r not in draft.classes},
    )
