"""Everything the verdict is drawn from: groups -> cells + progress -> mismatches + wait graph."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.cells import build_cells, int_values, queue_heads
from ..model.counts import count_mates
from ..model.errored import reopen_errored
from ..model.families import Families, program_families
from ..model.groups import GroupIndex, build_groups
from ..model.p2p import pending_p2p
from ..model.progress import Progress, compute_progress
from ..model.world import complete_inferred_groups, estimate_world, lone_waiting
from ..tables.combine import return_freed_memory
from ..tables.rowindex import RankRows
from ..types import DumpSet
from .exchange import Imbalance, find_imbalances
from .level_counts import LevelCounts
from .mismatch import Mismatch
from .model_mismatches import model_mismatches
from .pairs import Counts
from .waitfor import WaitGraph, build_wait_graph


@dataclass(slots=True)
class Analysis:
    """Intermediate results, kept for views (dashboard, grid) that need more than the verdict."""

    dumps: DumpSet
    groups: GroupIndex
    progress: dict[tuple[str, int], Progress]
    cells: pd.DataFrame
    families: Families
    mismatches: list[Mismatch]
    imbalances: list[Imbalance]
    graph: WaitGraph
    missing_dumps: list[int]
    levels: LevelCounts
    _rank_rows: dict[str, RankRows] = field(default_factory=dict, repr=False)

    def rank_rows(self, table: str, rank: int) -> np.ndarray:
        """Positions of ``rank``'s rows in ``cells`` or the dumps' ``entries`` (built on first use)."""
        if table not in self._rank_rows:
            frame = self.cells if table == "cells" else self.dumps.entries
            self._rank_rows[table] = RankRows(int_values(frame[s.RANK], -1))
        return self._rank_rows[table].of(rank)

    @property
    def records_p2p(self) -> bool:
        """False for gloo dumps: gloo's Flight Recorder writes no send/recv entries."""
        names = self.dumps.entries[s.PROFILING_NAME]
        cats = names.cat.categories if hasattr(names, "cat") else names.unique()
        return not (len(cats) and all(str(c).startswith("gloo:") for c in cats))


HAND_BACK_ROWS = 1 << 20
"""Entries from which the memory a stage of the analysis freed is handed back after it."""


def _hand_back(dumps: DumpSet) -> None:
    """Hand back the memory the stage before freed, on a large set: the command keeps freed
    memory for reuse (``process_limits.reuse_freed_memory``), and a stage's temporaries
    left resident under the next stage's raised the peak by what they held (4,096 ranks:
    1.02 -> 0.86 GB in the parent, the time the same)."""
    if len(dumps.entries) >= HAND_BACK_ROWS:
        return_freed_memory()


def run_analysis(dumps: DumpSet) -> Analysis:
    """Everything up to (not including) the verdict."""
    index = build_groups(dumps)
    _hand_back(dumps)
    have_dump = set(dumps.ranks)
    cells = build_cells(dumps, index)
    _hand_back(dumps)
    lone = lone_waiting(index, cells, dumps.entries)
    world = estimate_world(index, have_dump, lone)
    complete_inferred_groups(index, world, have_dump, lone)
    expected = {r for g in index.groups.values() for r in g.ranks} | set(range(world))
    missing = sorted(r for r in expected if r not in have_dump)
    errored = reopen_errored(cells, index, set(missing))
    progress = compute_progress(dumps, index, cells, errored)
    _hand_back(dumps)
    families = program_families(cells, {k: g.desc for k, g in index.groups.items()})
    levels = LevelCounts(
        index, progress, families, max([len(have_dump | set(missing))] + [len(g.ranks) for g in index.groups.values()])
    )
    _hand_back(dumps)
    mates = functools.partial(count_mates, index.groups.values(), families.family_of, levels.recorded_stage)
    mismatches = model_mismatches(cells, families, Counts(progress, families.family_of, mates))
    _hand_back(dumps)
    pending = cells.loc[~cells["done"].to_numpy(), [s.PG_KEY, s.RANK, s.SEQ, s.OP]]
    pending_ops = {
        (k, int(r), int(q)): str(op) for k, r, q, op in pending[[s.PG_KEY, s.RANK, s.SEQ, s.OP]].itertuples(index=False)
    }
    p2p = pending_p2p(dumps, index)
    graph = build_wait_graph(index, progress, have_dump, pending_ops, p2p, queue_heads(cells, dumps.entries, p2p))
    imbalances = find_imbalances(cells, dumps.entries, index, have_dump)
    mismatches += levels.stalled(graph.stalled)
    _hand_back(dumps)
    return Analysis(dumps, index, progress, cells, families, mismatches, imbalances, graph, missing, levels)
