"""The verdict: suspects, failure class, wavefront and evidence, from an Analysis."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import schema as s
from ..model.cells import created_ns
from ..model.order import ProgramOrder
from ..types import AttributionState, FailureClass, Verdict
from .analysis import Analysis
from .hang import HangExplainer, group_label, ranks_text
from .mismatch import Mismatch
from .waitfor import reaches


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What the dumps show, decided: the words are rendered from it elsewhere."""

    verdict: Verdict
    failure_class: FailureClass
    suspect_classes: dict[int, FailureClass]
    victims: tuple[int, ...]
    attribution: AttributionState
    wave: tuple[str, int | None, str | None] | None
    """(group key, seq, op) where progress diverged."""
    evidence: tuple[str, ...] = field(default=())

    @property
    def suspects(self) -> list[int]:
        return sorted(self.suspect_classes)


def _mismatch_since(a: Analysis, decisive: list[Mismatch]) -> int | None:
    """When the earliest decisive mismatch was issued (ns), if the dumps have times."""
    times = []
    c = a.cells
    for m in decisive:
        hit = created_ns(a.dumps.entries, c.loc[(c[s.PG_KEY] == m.pg_key) & (c[s.SEQ] == m.seq)]).dropna()
        if len(hit):
            times.append(int(hit.min()))
    return min(times) if times else None


def _mismatch_evidence(a: Analysis, m: Mismatch) -> str:
    g = a.groups.groups[m.pg_key]
    what = {s.OP: "op", s.INPUT_SIZES: "input sizes", s.INPUT_DTYPES: "dtypes", s.CALL_SITE: "call site"}[m.attribute]
    found = "; ".join(f"rank {r}: {v}" for r, v in list(m.found.items())[:8])
    basis = (
        "the sibling groups with the same description" if m.decided_by == "siblings" else "the majority of the group"
    )
    return f"At seq {m.seq} of {group_label(g)} the {what} differ: {found}, while {basis} issued {m.expected}."


def diagnose(a: Analysis) -> Diagnosis:
    """Decide suspects, class, wavefront and evidence from the analysis."""
    graph = a.graph
    evidence: list[str] = []
    suspect_class: dict[int, str] = {}
    wave: tuple[str, int | None, str | None] | None = None

    # 1. Mismatches: the earliest divergence point in each group explains what follows.
    mism = sorted(a.mismatches, key=lambda m: (FailureClass(m.failure_class).priority, m.seq))
    first_per_group: dict[str, Mismatch] = {}
    for m in sorted(a.mismatches, key=lambda m: m.seq):
        first_per_group.setdefault(m.pg_key, m)
    decisive = [m for m in first_per_group.values() if m.expected != "no majority"]
    for m in sorted(decisive, key=lambda m: (FailureClass(m.failure_class).priority, m.seq)):
        evidence.append(_mismatch_evidence(a, m))
        for r in m.odd_ranks:
            suspect_class.setdefault(r, m.failure_class)
        if wave is None:
            op = a.cells.loc[(a.cells[s.PG_KEY] == m.pg_key) & (a.cells[s.SEQ] == m.seq), s.OP]
            wave = (m.pg_key, m.seq, str(op.mode().iloc[0]) if not op.empty else None)
    for m in mism:
        if m.expected == "no majority" and m.pg_key not in {d.pg_key for d in decisive}:
            evidence.append(
                _mismatch_evidence(a, m).replace(
                    "while the majority of the group issued no majority.",
                    "and no majority or sibling group decides which is right.",
                )
            )
    mismatch_groups = {m.pg_key for m in decisive}
    mismatch_members = {r for k in mismatch_groups for r in a.groups.groups[k].ranks}

    # 2. The hang: roots of the wait-for graph, explained.
    order = ProgramOrder(a.cells, a.dumps.entries, {k: g.desc for k, g in a.groups.groups.items()})
    explainer = HangExplainer(a, order, _mismatch_since(a, decisive), mismatch_members if suspect_class else set())
    findings = explainer.explain()
    unresolved_cycle = explainer.unresolved
    for f in sorted(findings, key=lambda f: (f.since, f.rank)):
        suspect_class.setdefault(f.rank, f.failure_class)
        evidence.append(f.evidence)
        if wave is None and f.pg_key is not None:
            wave = (f.pg_key, f.seq, f.op)
    evidence.extend(explainer.notes)

    # 3. Everyone issued it, nobody finished: stalled in flight.
    if not suspect_class and graph.stalled:
        (key, q), _ = max(graph.stalled.items(), key=lambda kv: len(kv[1]))
        g = a.groups.groups[key]
        op = next((b.op for b in graph.blocked if b.pg_key == key and b.seq == q), None)
        wave = (key, q, op)
        evidence.append(
            f"Every member of {group_label(g)} issued seq {q} ({op or 'collective'}) and none completed it: "
            f"the collective is stuck in flight (GPU, NCCL or network), with no rank behind on the CPU side."
        )

    for r in a.missing_dumps:
        if r not in suspect_class:
            suspect_class[r] = "missing_dump"
            evidence.append(f"Rank {r} is a member of the job's groups but wrote no dump.")

    suspects = sorted(suspect_class)
    victims = sorted(
        (reaches(graph, set(suspects)) | {b.rank for b in graph.blocked} | explainer.set_aside) - set(suspects)
    )
    classes = Counter(suspect_class.values())
    if suspects:
        failure_class = min(classes, key=lambda c: (FailureClass(c).priority, -classes[c]))
    elif graph.stalled:
        failure_class = "stalled_in_flight"
    else:
        failure_class = "healthy"
    hang = bool(graph.edges or graph.stragglers or graph.stalled or a.missing_dumps)
    if failure_class == "healthy":
        verdict_word = "healthy"
    elif hang:
        verdict_word = "hang"
    else:
        verdict_word = "mismatch"
    isolated = bool(suspects) and not unresolved_cycle and len(suspects) < max(len(a.dumps.ranks), 1)
    attribution = "CONTINUE" if isolated else "STOP"

    if victims:
        evidence.append(
            f"{len(victims)} rank(s) are blocked waiting, directly or through others: {ranks_text(victims, 24)}."
        )
    return Diagnosis(
        verdict=Verdict(verdict_word),
        failure_class=FailureClass(failure_class),
        suspect_classes={r: FailureClass(c) for r, c in suspect_class.items()},
        victims=tuple(victims),
        attribution=AttributionState(attribution),
        wave=wave,
        evidence=tuple(evidence),
    )
