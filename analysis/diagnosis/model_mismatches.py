"""The mismatches of the one model: roles -> program -> alignment -> departures.

A fault is one rank's (or a few ranks') doing: where every member of a group departs from
its role's program at the same position, the program does not describe that group there
(it runs another part of the program than the groups it was put with: another pipeline
stage whose earlier calls happened to look the same). Such a group becomes a role of its
own and the program is taken again, once. So where every group's cells agree at every seq,
no rank departs: only the descriptions where some group's cells differ are modelled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import COLLECTIVE
from ..model.families import Families, call_codes, description_codes
from ..model.program import TOKEN, consensus_program
from ..model.roles import group_roles
from ..tables.rowkeys import SLICE_ROWS, first_rows
from .alignment import Alignment, align
from .departures import departures
from .mismatch import Mismatch
from .pairs import Counts


def model_mismatches(
    cells: pd.DataFrame,
    families: Families,
    counts: Counts | None = None,
) -> list[Mismatch]:
    """Every rank's departure from its role's program, as mismatches (see ``departures``);
    ``counts``: how many calls each rank issued in each group, where the dumps keep it."""
    cells = sites_where_all_have_them(cells, families)
    tokens = call_codes(cells, TOKEN)
    keep = descriptions_that_split(cells, tokens, families)
    if not keep.any():
        return []  # no rank departs where its whole group issued one call: see groups_apart
    if not keep.all():
        cells, tokens = cells.loc[keep].reset_index(drop=True), tokens[keep]
    roles = group_roles(cells, families, tokens)
    described = families.description_of
    alignment = align(cells, roles, consensus_program(cells, roles, described, tokens), described, tokens, counts)
    apart = groups_apart(alignment, cells)
    if apart:
        roles = {**roles, **{k: f"{roles.get(k, k)}@{k}" for k in apart}}
        alignment = align(cells, roles, consensus_program(cells, roles, described, tokens), described, tokens, counts)
    return departures(alignment, cells)


def sites_where_all_have_them(cells: pd.DataFrame, families: Families) -> pd.DataFrame:
    """``cells``, with no call site in the descriptions where some cells have one and others
    none (JSON dumps and dumps without stacks record none): a site that was not recorded
    is no other site, so there call sites are not compared."""
    sites = cells[s.CALL_SITE].array
    missing = sites.codes < 0
    if not missing.any() or missing.all():
        return cells
    desc = description_codes(cells, families.description_of)
    mixed = pd.Series(missing).groupby(desc).agg(["any", "all"])
    blank = mixed.index[(mixed["any"] & ~mixed["all"]).to_numpy()].to_numpy()
    if not len(blank):
        return cells
    codes = np.where(np.isin(desc, blank), -1, sites.codes)
    return cells.assign(**{s.CALL_SITE: pd.Categorical.from_codes(codes, sites.categories)})


def descriptions_that_split(cells: pd.DataFrame, tokens: np.ndarray, families: Families) -> np.ndarray:
    """The cells of the descriptions where the cells of some (group, seq) issued two calls:
    elsewhere every group's calls agree, and a group whose members all agree departs from
    no role (it would be a role of its own). A description is kept whole: the weights of
    ``call_support`` count over it."""
    gid = cells[COLLECTIVE].to_numpy()
    first = first_rows(gid, int(gid.max(initial=-1)) + 1)
    agreed = tokens[first]  # each collective's first call
    split = np.empty(len(tokens), dtype=bool)
    for start in range(0, len(tokens), SLICE_ROWS):  # no cell-long copy of the first calls (8 bytes a cell)
        stop = start + SLICE_ROWS
        np.not_equal(tokens[start:stop], agreed[gid[start:stop]], out=split[start:stop])
    if not split.any():
        return split
    desc = description_codes(cells, families.description_of)
    wanted = np.unique(desc[split])
    return np.isin(desc, wanted[wanted >= 0])


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
