"""Silent ranks left behind by their step-mates, though no visible wait points at them.

A rank stuck on the CPU side issues nothing more. Usually its peers wait on it in the
next collective, and the wait-for graph finds it; but when the peers of that collective
are themselves blocked elsewhere (two faults, or a pipeline), nobody waits on it
visibly. Its step-mates (the group it moves in step with, see :mod:`.consequences`)
show where it should be: when every one of them went on to a collective it never
issued and waits there, while it waits in nothing, it stopped on its own. Where the
dumps record send/recv (NCCL), the step-mates' host may have issued that collective
behind a send/recv their device waits in: every mate having issued more of the step
group than the rank is enough.
"""

from __future__ import annotations

from .. import schema as s
from ..model.groups import ProcessGroup
from ..types import FailureClass
from .analysis import Analysis
from .consequences import Steps, silent
from .findings import NEVER, Finding, Kind, Role


def left_behind(a: Analysis, blocked_ranks: set[int], known: set[int]) -> list[Finding]:
    """Silent ranks (not in ``known``) whose step-mates all wait in collectives they never issued."""
    steps = Steps(a, blocked_ranks)
    heads = {b.rank: b for b in a.graph.blocked if not b.queued and not b.is_p2p}
    family = a.families.family_of
    found = []
    for rank in sorted(steps.silent - known):
        g = steps.step_group(rank)
        mates = [r for r in g.ranks if r != rank] if g is not None else []
        if not mates:
            continue
        where, every_member = None, False
        waited_in = {(family.get(heads[m].pg_key, heads[m].pg_key), heads[m].seq) for m in mates if m in heads}
        if all(m in heads for m in mates) and not waited_in & _issued(a, rank):
            b = heads[mates[0]]
            where = (b.pg_key, b.seq, b.op)
        if where is None and a.records_p2p and (behind := _behind_everyone(a, steps, rank, g)) is not None:
            every_member = behind.key != g.key
            g = behind
            mates = [r for r in g.ranks if r != rank]
            where = (g.key, steps.issued(g, rank) + 1, _op_at(a, g.key, steps.issued(g, rank) + 1))
        if where is None:
            continue
        found.append(
            Finding(
                Kind.LEFT_BEHIND,
                Role.SUSPECT,
                (rank,),
                FailureClass.MISSING_PARTICIPANT,
                *where,
                waiters=tuple(mates),
                since=NEVER,
                detail={"step_group": g.key, "every_member": every_member},
            )
        )
    return found


def _issued(a: Analysis, rank: int) -> set[tuple[str, int]]:
    """The (family, seq) of every collective ``rank``'s dump holds."""
    mine = a.cells.iloc[a.rank_rows("cells", rank)]
    family = a.families.family_of
    return {(family.get(k, k), int(q)) for k, q in zip(mine[s.PG_KEY].tolist(), mine[s.SEQ].tolist(), strict=True)}


def _behind_everyone(a: Analysis, steps: Steps, rank: int, step_group: ProcessGroup) -> ProcessGroup | None:
    """The first of ``rank``'s groups (its step group first) in which every other member
    issued more collectives than it did. Where the dumps record send/recv, a rank that waits
    in nothing is blocked on nothing they show: its host stopped issuing on its own, and
    that the others went on in one of its groups shows it stopped before them."""
    groups = [step_group] + [g for g in a.levels.groups_of.get(rank, []) if g.key != step_group.key]
    for g in groups:
        others = [r for r in g.ranks if r != rank]
        if others and len(g.ranks) < a.levels.world and all(steps.issued(g, m) > steps.issued(g, rank) for m in others):
            return g
    return None


def _op_at(a: Analysis, key: str, seq: int) -> str | None:
    """The op the members that issued (group, seq) issued there, if the dumps hold it."""
    c = a.cells
    hit = c.loc[(c[s.PG_KEY] == key).to_numpy() & (c[s.SEQ] == seq).to_numpy(), s.OP]
    return str(hit.iloc[0]) if len(hit) else None


def behind_stuck_peers(
    a: Analysis, blocked_ranks: set[int], causes: list[Finding], behind: list[Finding], named: set[int] = frozenset()
) -> tuple[list[Finding], list[Finding]]:
    """Of the ``behind`` findings (ranks left behind, that nobody visibly waits on), those whose
    pipeline peer is a stuck cause that others do wait on, another cause (of ``causes``, or a
    rank ``named`` by a mismatch or a lone collective), or is held waiting on a cause: in
    gloo dumps a send/recv with it is invisible, and the causes already named are the simpler
    account. They stay possible causes."""
    if a.records_p2p:
        return behind, []
    steps = Steps(a, blocked_ranks)
    stuck = {f.rank for f in causes if f.rank not in blocked_ranks and f.waiters}
    cause_ranks = {f.rank for f in causes} | set(named)
    held = _held_by(a, blocked_ranks, cause_ranks)
    kept, notes = [], []
    for f in behind:
        peers = steps.likely_pipeline_peers(f.rank) if f.kind == Kind.LEFT_BEHIND else set()
        if on_stuck := sorted(peers & stuck):
            notes.append(Finding(Kind.BEHIND_STUCK, Role.POSSIBLE, f.ranks, None, detail={"stuck": on_stuck[0]}))
        elif on_named := sorted(peers & cause_ranks - {f.rank}):
            notes.append(Finding(Kind.BEHIND_STUCK, Role.POSSIBLE, f.ranks, None, detail={"named": on_named[0]}))
        elif on_held := sorted(p for p in peers if held.get(p, f.rank) != f.rank):
            detail = {"stuck": on_held[0], "held_by": held[on_held[0]]}
            notes.append(Finding(Kind.BEHIND_STUCK, Role.POSSIBLE, f.ranks, None, detail=detail))
        else:
            kept.append(f)
    return kept, notes


def held_pipeline_peers(
    a: Analysis, blocked_ranks: set[int], causes: list[Finding]
) -> tuple[list[Finding], list[Finding]]:
    """Of the ``causes``, the silent ranks that others wait on but that stopped together with
    the mates of their part (see ``Steps.stopped_with_its_part``: none waits in a
    collective or went on), as a pipeline wait stops them, and whose pipeline peer is held
    waiting, in a recorded collective, on another cause, or is itself a silent cause the
    mates of its own part went on without: in gloo dumps the rank is most likely blocked in
    a send/recv with that peer, and the one cause is the simpler account. They stay
    possible causes (never all of them)."""
    if a.records_p2p:
        return causes, []
    steps = Steps(a, blocked_ranks)
    ranks = {f.rank for f in causes}
    held = _held_by(a, blocked_ranks, ranks)
    stuck = {f.rank for f in causes if silent(f, blocked_ranks) and steps.left_by_its_part(f.rank)}
    kept, notes = [], []
    for f in causes:
        together = silent(f, blocked_ranks) and steps.stopped_with_its_part(f.rank)
        peers = steps.likely_pipeline_peers(f.rank) if together else set()
        on_held = sorted(p for p in peers if held.get(p, f.rank) != f.rank)
        on_stuck = sorted(peers & stuck)
        if on_held:
            detail = {"stuck": on_held[0], "held_by": held[on_held[0]]}
            notes.append(Finding(Kind.BEHIND_STUCK, Role.POSSIBLE, f.ranks, None, detail=detail))
        elif on_stuck:
            notes.append(Finding(Kind.BEHIND_STUCK, Role.POSSIBLE, f.ranks, None, detail={"stuck": on_stuck[0]}))
        else:
            kept.append(f)
    explaining = {n.detail.get("held_by", n.detail["stuck"]) for n in notes}
    if not kept or explaining - {f.rank for f in kept}:
        return causes, []  # a peer held by, or stuck as, a rank set aside here explains nothing
    return kept, notes


def _held_by(a: Analysis, blocked_ranks: set[int], causes: set[int]) -> dict[int, int]:
    """Blocked ranks that wait directly on one of ``causes``, each with the first it waits on."""
    held: dict[int, int] = {}
    for e in a.graph.edges:
        if e.waiter in blocked_ranks and e.waiter not in causes and e.blocker in causes:
            held.setdefault(e.waiter, e.blocker)
    return held
