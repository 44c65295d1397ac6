"""The mismatches of the one model: roles -> program -> alignment -> departures.

A fault is one rank's (or a few ranks') doing: where every member of a group departs from
its role's program at the same position, the program does not describe that group there
(it runs another part of the program than the groups it was put with: another pipeline
stage whose earlier calls happened to look the same). Such a group becomes a role of its
own and the program is taken again, once. So where every group's cells agree at every seq,
no rank departs, and nothing more is done.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import COLLECTIVE
from ..model.families import Families, call_codes
from ..model.program import TOKEN, consensus_program
from ..model.roles import group_roles
from ..tables.rowkeys import first_rows
from .alignment import Alignment, align
from .departures import departures
from .mismatch import Mismatch


def model_mismatches(cells: pd.DataFrame, families: Families) -> list[Mismatch]:
    """Every rank's departure from its role's program, as mismatches (see ``departures``)."""
    tokens = call_codes(cells, TOKEN)
    if every_collective_agrees(cells, tokens):
        return []  # no rank departs where its whole group issued one call: see groups_apart
    roles = group_roles(cells, families, tokens)
    described = families.description_of
    alignment = align(cells, roles, consensus_program(cells, roles, described, tokens), described, tokens)
    apart = groups_apart(alignment, cells)
    if apart:
        roles = {**roles, **{k: f"{roles.get(k, k)}@{k}" for k in apart}}
        alignment = align(cells, roles, consensus_program(cells, roles, described, tokens), described, tokens)
    return departures(alignment, cells)


def every_collective_agrees(cells: pd.DataFrame, tokens: np.ndarray) -> bool:
    """Whether every cell of each (group, seq) issued the same call."""
    gid = cells[COLLECTIVE].to_numpy()
    first = first_rows(gid, int(gid.max(initial=-1)) + 1)
    return bool((tokens == tokens[first[gid]]).all())


def groups_apart(alignment: Alignment, cells: pd.DataFrame) -> set[str]:
    """Groups of two or more cells at a position where every one of them departs."""
    departing: dict[tuple[str, int], int] = {}
    for e in alignment.edits:
        departing[(e.pg_key, e.seq)] = departing.get((e.pg_key, e.seq), 0) + 1
    if not departing:
        return set()
    keys = {k for k, _ in departing}
    near = cells.loc[cells[s.PG_KEY].isin(keys).to_numpy(), [s.PG_KEY, s.SEQ]]
    counts = near.groupby([near[s.PG_KEY].astype(str), near[s.SEQ].to_numpy(np.int64)]).size()
    return {k for (k, q), n in departing.items() if n >= 2 and counts.get((k, q), 0) == n}
