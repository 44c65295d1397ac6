"""Silent ranks blocked behind a rank that wrote no dump.

gloo records no send/recv, so a rank blocked in a pipeline send/recv with a dead peer
waits in no recorded collective, like a stuck rank, and the data-parallel peers of a
whole pipeline chain wait on it. A rank that wrote no dump stops its pipeline chain:
where a group that carries recorded collectives (a pipeline chain's model-parallel or
embedding group) holds a dead rank and otherwise only silent ranks that stopped at the
same point in it, those ranks are explained by the dead one, and so, transitively, are
silent ranks sharing such a group with them. Only stalls nothing else explains are
named.

A rank whose stage-mates went on (a group it shares with its chain holds a member that
waits in a recorded collective) is stuck itself, not blocked behind the dead one. A chain-mate
stuck on its own next to a rank whose file was lost would look the same as one blocked
behind a dead rank, so the ranks behind it are kept as possible causes, not cleared.
"""

from __future__ import annotations

from ..model.groups import ProcessGroup
from .analysis import Analysis
from .consequences import silent
from .findings import Finding, Kind, Role


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


def _left_by_stage_mates(a: Analysis, rank: int, chain: set[int], blocked_ranks: set[int]) -> bool:
    """``rank`` shares a group with a chain-mate in which another member waits in a recorded
    collective: its stage-mates went on, where a pipeline wait would have stopped them too."""
    return any(
        rank in g.ranks and len(set(g.ranks) & chain) > 1 and any(r in blocked_ranks for r in g.ranks)
        for g in a.groups.groups.values()
        if len(g.ranks) < len(set(a.dumps.ranks) | set(a.missing_dumps))
    )


def behind_dead(a: Analysis, blocked_ranks: set[int]) -> dict[int, int]:
    """Silent ranks explained by a dead rank of their chain: rank -> the dead rank."""
    dead = set(a.missing_dumps)
    if not dead or a.records_p2p:
        return {}
    silent = set(a.dumps.ranks) - blocked_ranks
    while True:
        quiet = _quiet_groups(a, dead, silent)
        by = _closure(quiet, dead)
        chains = {d: {r for r, dd in by.items() if dd == d} | {d} for d in set(by.values())}
        busy = {r for r, d in by.items() if _left_by_stage_mates(a, r, chains[d], blocked_ranks)}
        if not busy:
            return by
        silent -= busy


def dead_findings(a: Analysis, blocked_ranks: set[int], kept: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """The findings that stay causes, and per dead rank a finding that keeps the silent ranks
    behind it as possible causes only."""
    by = behind_dead(a, blocked_ranks)
    behind = [f for f in kept if silent(f, blocked_ranks) and f.rank in by]
    notes = []
    for d in sorted({by[f.rank] for f in behind}):
        ranks = tuple(sorted(f.rank for f in behind if by[f.rank] == d))
        notes.append(Finding(Kind.BEHIND_NO_DUMP, Role.POSSIBLE, ranks, None, detail={"dead": d}))
    return [f for f in kept if f not in behind], notes
