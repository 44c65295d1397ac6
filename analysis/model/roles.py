"""Which groups run the same part of the program: the roles a consensus is taken over.

Groups of one description (every tensor-parallel group shares one) run the same program
only where their ranks do the same work: the tensor-parallel groups of two pipeline stages
issue different layers at the same seq. Two groups are in one role when their calls (op,
sizes, dtypes, call site, where the members that recorded the seq agree) are equal at
every seq both recorded; a group
that differs there from every role of its description starts its own. Compared pair by
pair, so ring buffers that hold different stretches of the history still tell stages apart
wherever any two of them overlap. A group that overlaps no other is put with the first role
of its description: nothing says it runs another program.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from .. import schema as s
from .cells import COLLECTIVE
from .families import Families, call_codes, value_range

CALL = (s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)


def group_roles(cells: pd.DataFrame, families: Families, tokens: np.ndarray | None = None) -> dict[str, str]:
    """group key -> role name (its family's name, with ``/n`` where a family splits);
    ``tokens``: the cells' ``call_codes`` over op, sizes, dtypes and call site, if known."""
    role_of = dict(families.family_of)
    by_family: dict[str, list[str]] = defaultdict(list)
    for k, f in families.family_of.items():
        by_family[f].append(k)
    several = {f: keys for f, keys in by_family.items() if len(keys) > 1}
    if cells.empty or not several:
        return role_of
    history = unanimous_history(cells, tokens)
    for family, keys in several.items():
        ordered = sorted(keys, key=lambda k: (-len(history.get(k, {})), k))
        roles: list[tuple[list[str], dict[int, int]]] = []
        for k in ordered:
            mine = history.get(k, {})
            home = _home(mine, roles)
            if home is None:
                home = ([], {})
                roles.append(home)
            home[0].append(k)
            home[1].update(mine)
        if len(roles) > 1:
            for n, (members, _) in enumerate(roles):
                role_of.update({k: f"{family}/{n}" for k in members})
    return role_of


def _home(mine: dict[int, int], roles: list[tuple[list[str], dict[int, int]]]) -> tuple | None:
    """The role whose calls agree with ``mine`` on the most shared seqs; where no role shares
    a seq with it, the first; None where every role that shares one differs."""
    compared = [_compare(mine, role[1]) for role in roles]
    agreeing = [(shared, i) for i, (shared, same) in enumerate(compared) if shared and same]
    if agreeing:
        return roles[min(agreeing, key=lambda a: (-a[0], a[1]))[1]]
    return roles[0] if roles and not any(shared for shared, _ in compared) else None


def _compare(mine: dict[int, int], theirs: dict[int, int]) -> tuple[int, bool]:
    """How many seqs both hold, and whether the calls are equal at all of them."""
    small, big = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
    shared = [q for q in small if q in big]
    return len(shared), all(small[q] == big[q] for q in shared)


def unanimous_history(cells: pd.DataFrame, tokens: np.ndarray | None = None) -> dict[str, dict[int, int]]:
    """group key -> {seq: call code} at the seqs where every cell of the group agrees (a
    rank without a dump, or past its buffer, does not vote)."""
    token = call_codes(cells, CALL) if tokens is None else tokens
    low, high, first = value_range(cells[COLLECTIVE].to_numpy(), token)
    ok = np.flatnonzero((low == high) & (first >= 0))
    keys = cells[s.PG_KEY].astype("category").array
    frame = pd.DataFrame({"k": keys.codes[first[ok]], "q": cells[s.SEQ].to_numpy()[first[ok]], "v": low[ok]})
    out: dict[str, dict[int, int]] = {}
    for code, part in frame.groupby("k", sort=False):
        out[str(keys.categories[code])] = dict(zip(part["q"].tolist(), part["v"].tolist()))
    return out
