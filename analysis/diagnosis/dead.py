"""Silent ranks blocked behind a rank that wrote no dump.

gloo records no send/recv, so a rank blocked in a pipeline send/recv with a dead peer
waits in no recorded collective, like a stuck rank, and the data-parallel peers of a
whole pipeline chain wait on it. A rank that wrote no dump stops its pipeline chain:
where a group that carries recorded collectives (a pipeline chain's model-parallel or
embedding group) holds a dead rank and otherwise only silent ranks that stopped at the
same point in it, those ranks are explained by the dead one, and so, transitively, are
silent ranks sharing such a group with them. Only stalls nothing else explains are
named.

A silent rank whose last recorded collective was in a group with the dead rank, and that
issued nothing after it, is explained by the dead rank too, whatever its stage-mates did:
a collective with a member that dies never returns, or ends in an error the dump cannot
tell from completion (gloo retires it either way).

Any other silent rank is explained by a rank that wrote no file at all as well (one whose
file is there but unreadable lived to write it): where the dumps record no
send/recv, a rank blocked in one with the dead rank, or with a rank blocked behind it,
waits in no recorded collective, and one dead rank is a simpler account than a second,
independent stall. Even its stage-mates going on proves nothing: each stage-mate has its
own pipeline peers, which may be alive.

A rank stuck on its own next to a rank whose file was only lost looks the same as one
blocked behind a dead rank, so the ranks behind it are kept as possible causes, never
cleared.
"""

from __future__ import annotations

from .. import schema as s
from ..model.cells import ROW
from ..model.groups import ProcessGroup
from .analysis import Analysis
from .consequences import silent
from .findings import Finding, Kind, Role
from .unreadable import unreadable_files


def _issued(a: Analysis, g: ProcessGroup, rank: int) -> int:
    p = a.progress.get((g.key, rank))
    return -1 if p is None or p.enqueued is None else p.enqueued


def _still_chain(a: Analysis, g: ProcessGroup, dead: set[int], silent: set[int]) -> bool:
    """Every member is dead or silent, every live member issued in it (it carries recorded
    collectives), and all live members stopped at the same seq."""
    live = [r for r in g.ranks if r not in dead]
    if not live or len(live) == len(g.ranks) or not all(r in dead or r in silent for r in g.ranks):
        return False
    issued = {_issued(a, g, r) for r in live}
    return len(issued) == 1 and min(issued) >= 0


def _quiet_groups(a: Analysis, dead: set[int], silent: set[int]) -> list[ProcessGroup]:
    """Groups of silent members (and at least one dead one) that carry recorded collectives."""
    world = len(set(a.dumps.ranks) | set(a.missing_dumps))
    return [g for g in a.groups.groups.values() if 2 <= len(g.ranks) < world and _still_chain(a, g, dead, silent)]


def _closure(groups: list[ProcessGroup], dead: set[int]) -> dict[int, int]:
    """Ranks reached from a dead rank through the groups, transitively: rank -> the dead rank."""
    reached = {d: d for d in dead}
    changed = True
    while changed:
        changed = False
        for g in groups:
            root = next((reached[r] for r in g.ranks if r in reached), None)
            for r in g.ranks if root is not None else ():
                if r not in reached:
                    reached[r] = root
                    changed = True
    return {r: d for r, d in reached.items() if r not in dead}


def _last_with_dead(a: Analysis, dead: set[int], silent: set[int]) -> dict[int, int]:
    """Silent ranks whose last recorded collective was in a group with a dead member, which
    no live member of it went past: rank -> that dead rank."""
    cells = a.cells
    if cells.empty:
        return {}
    last = cells.loc[cells.groupby(s.RANK, observed=True)[ROW].idxmax(), [s.RANK, s.PG_KEY, s.SEQ]]
    held = {}
    for rank, key, seq in last.itertuples(index=False):
        g = a.groups.groups.get(str(key))
        if int(rank) not in silent or g is None:
            continue
        with_dead = sorted(set(g.ranks) & dead)
        if with_dead and all(_issued(a, g, r) <= int(seq) for r in g.ranks if r not in dead):
            held[int(rank)] = with_dead[0]
    return held


def _nearest_dead(a: Analysis, rank: int, dead: set[int]) -> int:
    """The dead rank that shares the smallest group with ``rank`` (the lowest if none does)."""
    shared = [
        (len(g.ranks), min(set(g.ranks) & dead))
        for g in a.groups.groups.values()
        if rank in g.ranks and dead & set(g.ranks)
    ]
    return min(shared)[1] if shared else min(dead)


CHAIN, LAST, SILENT = "chain", "last", "silent"
"""How a silent rank is behind a dead one: it stopped with it in a group of its chain; its
last collective was with it; or it is only silent, next to it, where the dumps record no
send/recv."""


def behind_dead(a: Analysis, blocked_ranks: set[int]) -> dict[int, tuple[int, str]]:
    """Silent ranks explained by a dead rank: rank -> (the dead rank, how)."""
    dead = set(a.missing_dumps)
    if not dead or a.records_p2p:
        return {}
    silent = set(a.dumps.ranks) - blocked_ranks
    absent = dead - set(unreadable_files(a))  # a file that is there but unreadable: the rank lived to dump
    by = {r: (_nearest_dead(a, r, absent), SILENT) for r in silent} if absent else {}
    by.update({r: (d, LAST) for r, d in _last_with_dead(a, dead, silent).items()})
    by.update({r: (d, CHAIN) for r, d in _closure(_quiet_groups(a, dead, silent), dead).items()})
    return by


def dead_findings(a: Analysis, blocked_ranks: set[int], kept: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The findings that stay causes, and per dead rank (and how) a finding that keeps the
    silent ranks behind it as possible causes only."""
    by = behind_dead(a, blocked_ranks)
    behind = [f for f in kept if silent(f, blocked_ranks) and f.rank in by]
    notes = []
    for d, how in sorted({by[f.rank] for f in behind}):
        ranks = tuple(sorted(f.rank for f in behind if by[f.rank] == (d, how)))
        notes.append(Finding(Kind.BEHIND_NO_DUMP, Role.POSSIBLE, ranks, None, detail={"dead": d, "how": how}))
    return [f for f in kept if f not in behind], notes
