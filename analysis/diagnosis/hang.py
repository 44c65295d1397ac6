"""Explain a hang: which roots of the wait-for graph are causes, and why.

The roots of the wait-for graph are the candidates. A wait-for cycle is explained by the
one model (its records, then its counts, then its waits: :mod:`.cycle_records`,
:mod:`.cycle_counts`, :mod:`.cycle_waits`; a root alone by its counts and waits); where
it names no member, each is a straggler or a rank waited on (:mod:`.root_findings`) and
the cycle is noted as undecided. Roots that only appear because of something the dumps cannot
show are set aside (see :mod:`.consequences`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..types import FailureClass
from .analysis import Analysis
from .behind import behind_stuck_peers, held_pipeline_peers, left_behind
from .consequences import after_mismatch, pipeline_victims, silent
from .cycle_counts import explain_cycle_by_counts
from .cycle_records import explain_cycle
from .cycle_waits import explain_cycle_by_waits
from .dead import dead_findings
from .findings import Finding, Kind, Role
from .hang_view import HangView
from .root_findings import held_by_stall, straggler, waited_on
from .waitfor import WaitGraph, root_components


@dataclass(frozen=True, slots=True)
class HangExplanation:
    """The causes of a hang, and the candidates judged to be consequences."""

    suspects: tuple[Finding, ...]
    """One finding per suspect rank."""
    notes: tuple[Finding, ...]
    """Cycles left unresolved, ranks set aside and why, cautions."""
    set_aside: frozenset[int]
    """Candidate roots judged to be victims, though no visible wait shows it."""
    unresolved: bool
    """A wait-for cycle that program order could not break."""


MAX_COUNTED = 64
"""Largest wait-for cycle whose members' counts are compared with their level peers'."""


def _explained_by_model(w: HangView, comp: list[int]) -> list[Finding]:
    """The members of a cycle whose records explain it (see :mod:`.cycle_records`), else
    whose counts do (see :mod:`.cycle_counts`), else the member its waits name (see
    :mod:`.cycle_waits`). A root alone is read by its counts and waits only: with no member
    in step beside it, its records against its program's, record by record, speak as much
    of ranks at another stage the dumps did not tell apart as of it; its counts are
    compared only with ranks held, or waiting, at the same call."""
    by_records = explain_cycle(w.a, w.cycle_waits, comp) if len(comp) > 1 else []
    return (
        by_records
        or explain_cycle_by_counts(w.a, w.count_view, comp)
        or explain_cycle_by_waits(w.a, w.cycle_waits, w.count_view, comp)
    )


def _component(w: HangView, comp: list[int]) -> tuple[list[Finding], list[Finding]]:
    """Findings for one root component of the wait-for graph, and notes: the members the
    model names (:func:`_explained_by_model`); where it names none, a root alone as a
    straggler or a rank waited on, and each member of a cycle as such a possible cause (the
    model cannot say which of them departed), with the cycle noted as undecided."""
    by_model = _explained_by_model(w, comp) if len(comp) <= MAX_COUNTED else []
    if by_model:  # records, counts or waits that depart from those of their program's ranks
        return by_model, []
    if len(comp) == 1 and held_by_stall(w, comp[0]):
        return [], []
    found = [f for r in comp if (f := straggler(w, r) if r in w.graph.stragglers else waited_on(w, r, comp))]
    if len(comp) == 1:
        return found, []
    # a cycle the model does not decide: each member may be the cause, none is named
    return [replace(f, role=Role.POSSIBLE) for f in found], [Finding(Kind.CYCLE, Role.NOTE, tuple(comp))]


def _explain(w: HangView) -> tuple[list[Finding], list[Finding]]:
    findings: list[Finding] = []
    notes: list[Finding] = []
    for comp in root_components(w.graph):
        found, comp_notes = _component(w, comp)
        findings += found
        notes += comp_notes
    return findings, notes


def _past_silent_roots(a: Analysis, w: HangView, notes: list[Finding]) -> tuple[HangView, list[Finding], list[Finding]]:
    """Where no root of the wait-for graph explains anything (each is held at an op its
    record no longer holds, or in a collective stuck in flight), the graph read again
    without the waits on them: a rank further down that left its program (a desync that
    program order or counts show) is named. Only such ranks: a rank merely waited on there
    may well be held by a root."""
    roots = {r for comp in root_components(w.graph) for r in comp}
    if not roots:
        return w, [], notes
    deeper = HangView(a, _beyond(a, roots))
    more, more_notes = _explain(deeper)
    more = [f for f in more if f.failure_class == FailureClass.DESYNC]
    return (deeper, more, more_notes) if more else (w, [], notes)


def _beyond(a: Analysis, victims: set[int]) -> WaitGraph:
    """The wait-for graph without the waits on ``victims``: they wait on others themselves."""
    g = a.graph
    edges = [e for e in g.edges if e.blocker not in victims]
    return WaitGraph(edges=edges, blocked=g.blocked, stragglers=g.stragglers, stalled=g.stalled)


def explain_hang(
    w: HangView,
    mismatch_since: int | None,
    mismatch_members: set[int],
    went_ahead: set[int] = frozenset(),
    named: set[int] = frozenset(),
) -> HangExplanation:
    """The causes of the hang in ``w``'s wait-for graph, with what was set aside and why.

    ``mismatch_since`` is when the earliest decisive mismatch was issued and
    ``mismatch_members`` the members of groups with one: a hang that follows a
    mismatch is read as its consequence. ``went_ahead`` are the ranks a mismatch shows
    one collective off (they skipped or added one): a rank only they wait on has simply
    not got where they went. ``named`` are the ranks a mismatch or a lone collective names
    already (a silent rank whose pipeline peer waits on one of them is behind it). Where
    every root is a rank blocked on a
    pipeline peer, the causes lie beyond them: the graph is read again without the
    waits on them.
    """
    a = w.a
    findings, notes = _explain(w)
    if not findings:
        w, findings, notes = _past_silent_roots(a, w, notes)
    kept, dropped = after_mismatch(findings, w.blocked_ranks, mismatch_since, mismatch_members)
    held = [f for f in kept if f.waiters and set(f.waiters) <= went_ahead and f.rank not in went_ahead]
    kept = [f for f in kept if f not in held]  # waited on only by ranks that skipped or added one
    dropped += [Finding(Kind.CONSEQUENCE, Role.CLEARED, f.ranks, detail={"waited_on_by": f.waiters}) for f in held]
    victims = pipeline_victims(a, w.blocked_ranks, kept)
    if victims and len(victims) == len(kept) and mismatch_since is None:
        deeper = HangView(a, _beyond(a, {f.rank for f in victims}))
        more, more_notes = _explain(deeper)
        more_kept, more_dropped = after_mismatch(more, w.blocked_ranks, mismatch_since, mismatch_members)
        more_kept = [f for f in more_kept if f.rank not in {v.rank for v in victims}]
        if more_kept:
            w, kept, notes, dropped = deeper, victims + more_kept, more_notes, dropped + more_dropped
    pipeline = bool(victims) and (len(victims) < len(kept) or mismatch_since is not None)
    if pipeline:
        dropped.append(Finding(Kind.PIPELINE_BLOCKED, Role.CLEARED, tuple(sorted(f.rank for f in victims))))
        kept = [f for f in kept if f not in victims]
    kept, behind = dead_findings(a, w.blocked_ranks, kept)
    if not (pipeline or behind) and not a.records_p2p and any(silent(f, w.blocked_ranks) for f in kept):
        dropped.append(Finding(Kind.P2P_INVISIBLE, Role.NOTE, ()))
    dropped += behind
    set_aside = frozenset(r for f in dropped if f.role == Role.CLEARED for r in f.ranks)
    if mismatch_since is None:
        explained = {f.rank for f in kept} | {r for f in dropped for r in f.ranks}
        lone, lone_behind = dead_findings(a, w.blocked_ranks, left_behind(a, w.blocked_ranks, explained))
        kept, held = held_pipeline_peers(a, w.blocked_ranks, kept)
        dropped += held
        lone, behind_stuck = behind_stuck_peers(a, w.blocked_ranks, kept, lone, named)
        lone_behind += behind_stuck
        kept, dropped = kept + lone, dropped + lone_behind  # behind a dead rank of its chain: not on its own
    return HangExplanation(tuple(kept), tuple(notes + dropped), set_aside, any(n.kind == Kind.CYCLE for n in notes))
