"""The cheapest edits that line one rank's calls up with a program (``model/costs``).

An edit distance in a band of ``costs.BAND``: substitute (its cost depends on which
attributes differ, and on whether the rank's call is one the program issues at another
point), skip, extra (each dearer where the call skipped is one the program issues nowhere
else, or the call added is one it issues elsewhere); the program's positions past the
rank's last call are free (a history may stop anywhere). What is returned is the first
step of the cheapest alignment that is not a match: where, and how, the rank departed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import schema as s
from ..model import costs
from ..model.program import TOKEN

MATCH, SUBSTITUTE, SKIP, EXTRA = "match", "substitute", "skip", "extra"

Position = tuple[int, int] | None
"""The program's call at one position: (token, a row that issued it); None where unknown."""


@dataclass(frozen=True, slots=True)
class Departure:
    kind: str
    """``match`` (the calls line up), ``substitute``, ``skip`` or ``extra``."""
    mine: int
    """Index of the rank's call where it departs (for a skip: the call issued instead)."""
    theirs: int
    """Index of the program's position there."""
    cost: float
    """Of the whole cheapest alignment."""
    shown: bool = False
    """A later call of the rank lines up with a known call of the program after this step (a
    skip or an extra is then seen, not only supposed)."""


@dataclass(frozen=True, slots=True)
class Calls:
    """One rank's calls and the program they are aligned to."""

    mine: list[int]
    """The rank's tokens."""
    rows: np.ndarray
    """The rank's cells (for which attributes differ)."""
    program: list[Position]
    mine_elsewhere: list[bool]
    """Each of the rank's calls is one the program issues at some point (the whole call)."""
    program_elsewhere: list[bool]
    """Each of the program's calls is one it issues at another point too (its op at its call
    site, where the site is known: the line of the program, whatever the tensor)."""
    mine_of_program: list[bool] | None = None
    """Each of the rank's calls is the program's in that sense (default: ``mine_elsewhere``)."""
    whole_steps: bool = True
    """The dumps show the program over more than one step (its period), so a call seen at
    one position only is a call of its own; without that, nothing says it is."""


def differs(codes: dict[str, np.ndarray], row: int, other: int) -> tuple[str, ...]:
    """The attributes of a call (op, sizes, dtypes, call site) where two cells differ."""
    return tuple(col for col in TOKEN if codes[col][row] != codes[col][other])


FUNCTION = "function"
"""The codes entry that names each cell's calling function (file and function of its call
site): two call sites of one function are two lines of it."""


def substitution_cost(changed: tuple[str, ...], same_function: bool = True) -> float:
    """What substituting a call that differs in ``changed`` costs (``costs.SUBSTITUTE``; a
    call site in another function costs ``costs.OTHER_FUNCTION``)."""
    cost = sum(costs.SUBSTITUTE[col] for col in changed)
    if s.CALL_SITE in changed and not same_function:
        cost += costs.OTHER_FUNCTION - costs.SUBSTITUTE[s.CALL_SITE]
    return cost


def first_departure(c: Calls, codes: dict[str, np.ndarray]) -> Departure:
    """The first step, not a match, of the cheapest alignment of ``c.mine`` to ``c.program``.
    Equal costs prefer, in turn, the substitution, the skip, the extra."""
    n, m = len(c.mine), len(c.program)
    inf = float("inf")
    # best[i][j]: cost of aligning mine[i:] to program[j:], and its first step
    best = [[(inf, MATCH)] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        best[n][j] = (0.0, MATCH)
    for i in range(n - 1, -1, -1):
        for j in range(min(m, i + costs.BAND), max(0, i - costs.BAND) - 1, -1):
            options = []
            if j < m:
                step = _sub_cost(c, i, j, codes)
                options.append((step + best[i + 1][j + 1][0], MATCH if step == 0 else SUBSTITUTE))
                options.append((_skip_cost(c, j) + best[i][j + 1][0], SKIP))
            options.append((_extra_cost(c, i) + best[i + 1][j][0], EXTRA))
            best[i][j] = min(options, key=lambda o: o[0])  # first of equals: the order above
    path = _path(best, n)
    first = next((k for k, (_, _, step) in enumerate(path) if step != MATCH), None)
    if first is None:
        return Departure(MATCH, n - 1, n - 1, best[0][0][0])
    i, j, kind = path[first]
    shown = any(step == MATCH and c.program[b] is not None for _, b, step in path[first + 1 :])
    return Departure(kind, min(i, n - 1), j, best[0][0][0], shown)


def _path(best: list[list[tuple[float, str]]], n: int) -> list[tuple[int, int, str]]:
    """The steps (rank's index, program's index, step) of the cheapest alignment."""
    i = j = 0
    path = []
    while i < n:
        step = best[i][j][1]
        path.append((i, j, step))
        i, j = (i + 1, j + 1) if step in (MATCH, SUBSTITUTE) else (i, j + 1) if step == SKIP else (i + 1, j)
    return path


def _sub_cost(c: Calls, i: int, j: int, codes: dict[str, np.ndarray]) -> float:
    """Cost of the rank's call ``i`` standing at the program's position ``j``."""
    here = c.program[j]
    if here is None:
        return costs.UNKNOWN
    if c.mine[i] == here[0]:
        return 0.0
    near = [c.program[k] for k in (j - 1, j + 1) if 0 <= k < len(c.program) and c.program[k] is not None]
    if c.mine_elsewhere[i] or any(c.mine[i] == p[0] for p in near):
        return costs.ELSEWHERE
    row, other = int(c.rows[i]), here[1]
    return substitution_cost(differs(codes, row, other), codes[FUNCTION][row] == codes[FUNCTION][other])


def _skip_cost(c: Calls, j: int) -> float:
    """Skipping the program's call ``j``: dearer where the program issues it nowhere else,
    in dumps that show more than one step."""
    known = c.program[j] is not None and j < len(c.program_elsewhere)
    return costs.SKIP_OWN if known and not c.program_elsewhere[j] and c.whole_steps else costs.SKIP


def _extra_cost(c: Calls, i: int) -> float:
    """Adding the call ``i``: dearer where it is one the program issues."""
    known = c.mine_elsewhere if c.mine_of_program is None else c.mine_of_program
    return costs.EXTRA_PROGRAM if known[i] else costs.EXTRA
