"""Node health checks in the verdict: Flight Recorder evidence decides, health breaks ties.

NVIDIA's analyzer prints the checks but never uses them to decide who is guilty. Here:

- where the dumps cannot isolate a rank (attribution ``STOP``: every member stuck in
  flight, or suspects the dumps cannot tell apart), a rank of that tie whose GPU or NIC
  check failed becomes the suspect, and the others of the tie its victims;
- a failed check on a suspect supports the finding;
- a failed check on a rank the dumps clear is stated, not blamed.

The decision (:func:`decide`) is data; :func:`apply_health` returns the changed Diagnosis
with the decision as findings (``health_*`` kinds), which the report layer puts in words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model.health import DEVICE_WORDS, RankHealth, failed_ranks
from ..types import AttributionState, FailureClass
from .analysis import Analysis
from .findings import Finding, Kind, Role
from .verdict import Diagnosis


@dataclass(frozen=True, slots=True)
class HealthDecision:
    """What the health checks change, and what they only support or state."""

    tie: tuple[int, ...]
    """Ranks the dumps could not tell apart (empty when the dumps isolate the suspects)."""
    promoted: tuple[int, ...]
    """Ranks of the tie made suspects by a failed check."""
    supported: tuple[int, ...]
    """Suspects (after the tie-break) whose check failed."""
    cleared: tuple[int, ...]
    """Ranks whose check failed although the dumps do not blame them."""
    failed: Mapping[str, tuple[int, ...]]
    """Ranks whose check failed, per device ("gpu", "nic")."""

    @property
    def changed(self) -> bool:
        return bool(self.promoted)


@dataclass(frozen=True, slots=True)
class Tie:
    """Ranks the dumps cannot tell apart, and where each is stuck (group key, seq, op)."""

    ranks: tuple[int, ...] = ()
    stuck_at: Mapping[int, tuple[str, int, str | None]] = dataclasses.field(default_factory=dict)


def tie_of(a: Analysis, d: Diagnosis) -> Tie:
    """The suspects of a ``STOP`` verdict, or with no suspect, every rank stuck in a
    collective all members issued and none completed."""
    if d.attribution != AttributionState.STOP:
        return Tie()
    if d.suspects:
        return Tie(tuple(d.suspects))
    ops = {(b.pg_key, b.seq): b.op for b in a.graph.blocked}
    stuck_at = {r: (key, q, ops.get((key, q))) for (key, q), ranks in a.graph.stalled.items() for r in ranks}
    return Tie(tuple(sorted(stuck_at)), stuck_at)


def decide(d: Diagnosis, health: Mapping[int, RankHealth], tie: Sequence[int]) -> HealthDecision:
    """The tie-break and the support, from the diagnosis and each rank's checks."""
    failed = {device: tuple(failed_ranks(dict(health), device)) for device in DEVICE_WORDS}
    any_failed = {r for ranks in failed.values() for r in ranks}
    in_tie = [r for r in tie if r in any_failed]
    promoted = tuple(in_tie) if 0 < len(in_tie) < len(tie) else ()
    suspects = set(promoted) if promoted else set(d.suspects)
    return HealthDecision(
        tie=tuple(tie),
        promoted=promoted,
        supported=tuple(sorted(any_failed & suspects)),
        cleared=tuple(sorted(any_failed - suspects - (set(tie) if not promoted else set()))),
        failed=failed,
    )


def _broken_tie(d: Diagnosis, decision: HealthDecision, tie: Tie) -> Diagnosis:
    """The diagnosis with the tie's failed ranks as suspects and the rest of the tie as victims;
    the wavefront moves to where the first of them is stuck."""
    cls = d.failure_class if d.failure_class != FailureClass.HEALTHY else FailureClass.STALLED_IN_FLIGHT
    suspects = {r: d.suspect_classes.get(r, cls) for r in decision.promoted}
    victims = sorted((set(d.victims) | set(decision.tie)) - set(suspects))
    return dataclasses.replace(
        d,
        suspect_classes=suspects,
        victims=tuple(victims),
        attribution=AttributionState.CONTINUE,
        failure_class=min((c for c in suspects.values()), key=lambda c: c.priority),
        wave=tie.stuck_at.get(decision.promoted[0], d.wave),
        possible={r: f for r, f in d.possible.items() if r not in suspects},
    )


def _checks(h: RankHealth) -> dict[str, str | None]:
    """The failed checks of one rank: device -> its output."""
    return {device: h.output(device) for device in h.failed_devices()}


def health_findings(d: Diagnosis, decision: HealthDecision, health: Mapping[int, RankHealth]) -> tuple[Finding, ...]:
    """The decision as findings: which checks failed, the tie broken (or not), support, and ranks cleared."""
    out = [
        Finding(Kind.HEALTH_FAILED, Role.NOTE, ranks, detail={"device": device})
        for device, ranks in decision.failed.items()
        if ranks
    ]
    if decision.promoted:
        out.append(
            Finding(
                Kind.HEALTH_TIE_BROKEN,
                Role.SUSPECT,
                decision.promoted,
                d.failure_class,
                detail={
                    "tie": decision.tie,
                    "victims": tuple(r for r in decision.tie if r not in decision.promoted),
                    "checks": {r: _checks(health[r]) for r in decision.promoted},
                },
            )
        )
    elif decision.tie:
        checked = [r for r in decision.tie if r in health]
        failed = [r for r in checked if health[r].failed]
        if failed and len(failed) == len(decision.tie):
            out.append(Finding(Kind.HEALTH_TIE_KEPT, Role.NOTE, tuple(failed), detail={"failed": True}))
        elif checked and not failed:
            out.append(Finding(Kind.HEALTH_TIE_KEPT, Role.NOTE, tuple(checked), detail={"failed": False}))
    for r in decision.supported:
        if r not in decision.promoted:
            out.append(Finding(Kind.HEALTH_SUPPORTS, Role.NOTE, (r,), detail={"checks": _checks(health[r])}))
    victims = set(d.victims)
    for r in decision.cleared:
        detail = {"checks": _checks(health[r]), "waits": r in victims}
        out.append(Finding(Kind.HEALTH_CLEARED, Role.CLEARED, (r,), detail=detail))
    unreadable = tuple(r for r, h in health.items() if h.unreadable)
    if unreadable:
        out.append(Finding(Kind.HEALTH_UNREADABLE, Role.NOTE, unreadable))
    return tuple(out)


def apply_health(d: Diagnosis, health: Mapping[int, RankHealth], tie: Tie) -> tuple[Diagnosis, HealthDecision]:
    """The diagnosis with the health checks applied (a changed copy, the decision among its
    findings), and the decision."""
    decision = decide(d, health, tie.ranks)
    if not health:
        return d, decision
    out = _broken_tie(d, decision, tie) if decision.changed else d
    return dataclasses.replace(out, findings=(*out.findings, *health_findings(out, decision, health))), decision
