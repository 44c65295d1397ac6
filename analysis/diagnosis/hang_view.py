"""Lookups over the wait-for graph that the explanation of a hang shares (see :mod:`.hang`):
the waits into each rank, when each pending call was issued, the ranks of each rank's
program, and the model's views of the cycles (records, counts)."""

from __future__ import annotations

import functools
from collections import defaultdict

from .. import schema as s
from ..model.callsites import job_call_sites
from ..model.cells import created_ns
from .analysis import Analysis
from .cycle_counts import CountView
from .cycle_records import CycleWaits
from .findings import NEVER
from .waitfor import Blocked, WaitEdge, WaitGraph


class HangView:
    """Lookups over one wait-for graph of an analysis (see the module docstring)."""

    def __init__(self, a: Analysis, graph: WaitGraph | None = None) -> None:
        self.a = a
        self.graph = a.graph if graph is None else graph
        self.into: dict[int, list[WaitEdge]] = defaultdict(list)
        for e in self.graph.edges:
            self.into[e.blocker].append(e)
        pending = a.cells.loc[~a.cells["done"].to_numpy()]
        pending = pending.assign(**{s.T_CREATED: created_ns(a.dumps.entries, pending)}).dropna(subset=[s.T_CREATED])
        self.created = {
            (str(k), int(r), int(q)): int(t)
            for k, r, q, t in pending[[s.PG_KEY, s.RANK, s.SEQ, s.T_CREATED]].itertuples(index=False)
        }
        self.blocked_ranks = {b.rank for b in self.graph.blocked}
        self.heads: dict[int, list[Blocked]] = defaultdict(list)
        """Each rank's collectives it waits in (not queued behind one of its own)."""
        for b in self.graph.blocked:
            if not b.queued and not b.is_p2p:
                self.heads[b.rank].append(b)

    @functools.cached_property
    def call_sites(self) -> dict[int, str]:
        stacks = self.a.dumps.stacks
        return job_call_sites(stacks) if len(stacks) else {}

    @functools.cached_property
    def cycle_waits(self) -> CycleWaits:
        return CycleWaits(self.graph, self.into, self.created, self.program_ranks, self.call_sites)

    def program_ranks(self, rank: int) -> set[int]:
        """The ranks of ``rank``'s program and stage: by its groups smaller than the world (the
        same program families at the same pipeline stage: where a family's seq stands in the
        program differs between stages), and by the families of all its groups (a job whose
        every group spans the world runs one)."""
        levels = self.a.levels
        at_stage = self._at_stage.get((levels.program.get(rank), levels.recorded_stage.get(rank)), frozenset())
        return set(at_stage) | {rank} | self.count_view.mates.get(rank, frozenset())

    @functools.cached_property
    def _at_stage(self) -> dict[tuple[object, object], frozenset[int]]:
        """(program, stage) -> its ranks."""
        levels = self.a.levels
        found: dict[tuple[object, object], set[int]] = defaultdict(set)
        for r, p in levels.program.items():
            found[(p, levels.recorded_stage.get(r))].add(r)
        return {k: frozenset(v) for k, v in found.items()}

    @functools.cached_property
    def count_view(self) -> CountView:
        return CountView(self.a, self.cycle_waits)

    def since(self, edges: list[WaitEdge]) -> int:
        return min((self.created.get((e.pg_key, e.waiter, e.seq), NEVER) for e in edges), default=NEVER)

    def waiters_at(self, rank: int, pg_key: str, seq: int) -> tuple[int, ...]:
        return tuple(sorted({w.waiter for w in self.into[rank] if (w.pg_key, w.seq) == (pg_key, seq)}))

    def site(self, key: str, seq: int, rank: int) -> str | None:
        """Where ``rank`` called (group, seq) from, if the dump recorded it."""
        mine = self.a.cells.iloc[self.a.rank_rows("cells", rank)]  # the rank's rows, not three cell-long tests
        hit = mine.loc[(mine[s.PG_KEY] == key) & (mine[s.SEQ] == seq), s.CALL_SITE]
        return hit.iloc[0] if len(hit) and isinstance(hit.iloc[0], str) else None
