"""How strongly the dumps say the program issues a call at a position, where the ranks
there split evenly (a pair of ranks, or a group with no siblings).

Weighed in order, each only where all before it are equal:

1. ``here_n``: the cells at the position that issued it, where at least half as many cells
   reached it as the best-reached position of its family (the hung step's frontier, reached
   by a rank or two, may be where they depart: the history speaks for it there);
2. ``phase_n``: the cells at that phase of every step (the same point of the other steps);
3. ``after_n``: the cells anywhere in groups of the same description that issued it right
   after the call the program issues just before this position (what follows that call
   elsewhere);
4. ``role_n``: the cells anywhere in the role that issued it together with another cell of
   their collective (the calls the groups that run this program issue);
5. ``anywhere_n``: the same in groups of the same description, whatever their role (a call
   the program issues somewhere, against one it never does; a call one rank issued alone
   may be the departure itself, so it does not count);
6. ``site_n``: the same for its op at its call site, whatever the tensor;
7. ``moves``: whether it moves any elements (a program does not issue a collective to move
   nothing; an empty tensor is a bug upstream).

Where all seven are equal the position stays tied: the program is not known there.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .. import schema as s
from ..tables.rowkeys import pair_ids
from .cells import COLLECTIVE
from .families import call_codes, description_codes

WEIGHED = ("here_n", "phase_n", "after_n", "role_n", "anywhere_n", "site_n", "moves")


def contested(votes: pd.DataFrame, keys: tuple[str, ...]) -> np.ndarray:
    """Rows of ``votes`` (f, q, t and ``keys``) that share the best ``keys`` of their
    position with another row."""
    ranked = votes.sort_values(["f", "q", *keys], ascending=[True, True] + [False] * len(keys), kind="stable")
    top = ranked.drop_duplicates(["f", "q"]).set_index(["f", "q"])[list(keys)]
    at = top.reindex(pd.MultiIndex.from_frame(votes[["f", "q"]])).to_numpy()
    best = (votes[list(keys)].to_numpy() == at).all(axis=1)
    per = pd.Series(best).groupby([votes["f"].to_numpy(), votes["q"].to_numpy()]).transform("sum").to_numpy()
    return best & (per > 1)


def weigh_contested(
    votes: pd.DataFrame, cells: pd.DataFrame, tokens: np.ndarray, description_of: dict[str, str], role: np.ndarray
) -> None:
    """Adds ``here_n``, and ``after_n``, ``role_n``, ``anywhere_n``, ``site_n`` and ``moves`` to ``votes``
    (f, q, t, n, row, weak, phase_n): the weights of the rows still even on ``here_n`` and
    ``phase_n``; 0 elsewhere."""
    for col in WEIGHED[2:]:
        votes[col] = 0
    votes["here_n"] = np.where(votes["weak"].to_numpy(), 0, votes["n"].to_numpy())
    even = np.flatnonzero(contested(votes, ("here_n", "phase_n")))
    if not len(even):
        return
    desc = description_codes(cells, description_of)
    site = call_codes(cells, (s.OP, s.CALL_SITE))
    rows = votes["row"].to_numpy()[even]
    together = _issued_together(cells, tokens)
    votes.loc[votes.index[even], "role_n"] = _count(role[together], tokens[together], role[rows], tokens[rows])
    votes.loc[votes.index[even], "anywhere_n"] = _count(desc[together], tokens[together], desc[rows], tokens[rows])
    votes.loc[votes.index[even], "site_n"] = _count(desc[together], site[together], desc[rows], site[rows])
    before = _previous_call(votes, even)
    prev = _previous_token(cells, tokens)
    n = len(tokens)
    pair = pair_ids(np.concatenate([tokens, tokens[rows]]), np.concatenate([prev, before]))
    after = _count(desc, pair[:n], desc[rows], pair[n:])
    votes.loc[votes.index[even], "after_n"] = np.where(before >= 0, after, 0)
    sizes = cells[s.INPUT_SIZES].astype(str).to_numpy()[rows]
    votes.loc[votes.index[even], "moves"] = [int(_elements(v) != 0) for v in sizes]


def _issued_together(cells: pd.DataFrame, tokens: np.ndarray) -> np.ndarray:
    """Cells whose call another cell of the same collective issued too: a call a rank issued
    alone may be the departure itself, and says nothing of the program."""
    ids = pair_ids(cells[COLLECTIVE].to_numpy().astype(np.int64), tokens)
    return np.bincount(ids)[ids] >= 2


def _count(group: np.ndarray, value: np.ndarray, at_group: np.ndarray, at_value: np.ndarray) -> np.ndarray:
    """How many cells have each (``at_group``, ``at_value``) as their (group, value)."""
    n = len(group)
    ids = pair_ids(np.concatenate([group, at_group]), np.concatenate([value, at_value]))
    counts = np.bincount(ids[:n], minlength=int(ids.max(initial=-1)) + 1)
    return counts[ids[n:]]


def _previous_call(votes: pd.DataFrame, even: np.ndarray) -> np.ndarray:
    """The commonest token at (f, q - 1) of each of the rows ``even`` (-1 where none)."""
    first = votes.sort_values(["f", "q", "n"], ascending=[True, True, False], kind="stable").drop_duplicates(["f", "q"])
    lookup = dict(zip(zip(first["f"].tolist(), first["q"].tolist()), first["t"].tolist()))
    f, q = votes["f"].to_numpy()[even], votes["q"].to_numpy()[even]
    return np.array([lookup.get((int(a), int(b) - 1), -1) for a, b in zip(f, q)], dtype=np.int64)


def _previous_token(cells: pd.DataFrame, tokens: np.ndarray) -> np.ndarray:
    """The token of each cell's rank in the same group one seq before (-1 where not seen)."""
    key = cells[s.PG_KEY].astype("category").cat.codes.to_numpy().astype(np.int64)
    rank = cells[s.RANK].to_numpy().astype(np.int64)
    seq = cells[s.SEQ].to_numpy().astype(np.int64)
    order = np.lexsort((seq, rank, key))
    prev = np.full(len(tokens), -1, dtype=np.int64)
    k, r, q = key[order], rank[order], seq[order]
    follows = (k[1:] == k[:-1]) & (r[1:] == r[:-1]) & (q[1:] == q[:-1] + 1)
    prev[order[1:][follows]] = tokens[order[:-1][follows]]
    return prev


def _elements(sizes: str) -> int | None:
    """How many elements a sizes value moves (None where it is not a list of shapes)."""
    try:
        shapes = json.loads(sizes)
        if not isinstance(shapes, list) or not shapes or not all(isinstance(x, list) for x in shapes):
            return None
        return sum(math.prod(int(d) for d in shape) for shape in shapes)
    except (ValueError, TypeError, RecursionError):
        return None
