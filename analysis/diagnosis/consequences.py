"""Roots of the wait-for graph that are consequences, not causes.

Two things the dumps cannot show directly make victims look like roots:

- a hang that began after a mismatch: a rank that stopped issuing only after the
  mismatch was issued is waiting on its consequences;
- in gloo dumps (no send/recv recorded), a rank blocked in a send/recv with a stuck
  pipeline peer waits in no recorded collective, like a stuck rank. What tells them
  apart is the group a rank moves in step with (its tensor-parallel group, in
  Megatron-style jobs: the group it issues the most collectives in). Its members share
  their pipeline stage and their pipeline neighbours' fate, so a pipeline wait stops
  them all at the same point, while a CPU-side stall strikes one process: a rank whose
  step-mates went on without it is stuck itself; a rank that stopped at the same point
  as every step-mate, none of them waiting in a collective, is blocked on a pipeline
  peer (when the dumps list pipeline groups, only if a pipeline peer is itself stuck
  or waiting). The same point means level in every group: a rank that issued fewer of
  another group's collectives than each of its step-mates did in theirs stopped earlier.
"""

from __future__ import annotations

from collections import defaultdict

from ..model.groups import DEFAULT_PG_DESC, DEFAULT_PG_ID, ProcessGroup
from ..types import FailureClass
from .analysis import Analysis
from .findings import Finding, Kind, Role


def silent(f: Finding, blocked_ranks: set[int]) -> bool:
    """A suspect only because peers wait on it: it waits in no recorded collective itself."""
    return f.failure_class == FailureClass.MISSING_PARTICIPANT and f.rank not in blocked_ranks


class Steps:
    """Each rank's step-mates and pipeline peers, and who is silent."""

    def __init__(self, a: Analysis, blocked_ranks: set[int]) -> None:
        self.a = a
        self.world = a.levels.world
        """Every rank of the job, not the largest group the dumps show: without a world group
        in them, a group of half the job is still a group ranks move in step with."""
        self.groups_of: dict[int, list[ProcessGroup]] = defaultdict(list)
        for g in a.groups.groups.values():
            if 2 <= len(g.ranks) < self.world and not g.has_p2p:  # pipeline groups are not step-mates
                for r in g.ranks:
                    self.groups_of[r].append(g)
        have_dump = set(a.dumps.ranks)
        self.silent = have_dump - blocked_ranks
        self._parts_of: dict[int, list[tuple[ProcessGroup, list[ProcessGroup]]]] = {}
        self.program = a.levels.program
        """The program families of each rank's groups (see :func:`.families.rank_programs`),
        computed once per analysis with the level counts."""

    def issued(self, g: ProcessGroup, rank: int) -> int:
        p = self.a.progress.get((g.key, rank))
        return -1 if p is None or p.enqueued is None else p.enqueued

    def step_group(self, rank: int) -> ProcessGroup | None:
        """Of the groups whose members all run ``rank``'s program (the same program families),
        the one ``rank`` issued the most collectives in (ties: the larger group, the one more
        ranks move in step in)."""
        mine = self.program.get(rank)
        busy = [
            g
            for g in self.groups_of[rank]
            if self.issued(g, rank) >= 0 and all(self.program.get(r) == mine for r in g.ranks)
        ]
        return max(busy, key=lambda g: (self.issued(g, rank), len(g.ranks)), default=None)

    def pipeline_peers(self, rank: int) -> set[int]:
        """Members of ``rank``'s groups that carry no recorded collective: pipeline groups
        as pg_config lists them (gloo records no send/recv in them)."""
        quiet = [g for g in self.groups_of[rank] if all(self.issued(g, r) < 0 for r in g.ranks)]
        return {r for g in quiet for r in g.ranks if r != rank}

    def likely_pipeline_peers(self, rank: int) -> set[int]:
        """The pipeline peers pg_config lists, or where it lists none, the ranks a pipeline
        send/recv would join ``rank`` to. A group made of whole groups of one description
        from several stages (the model-parallel group: the tensor-parallel groups of one
        pipeline) holds them: its ranks of another stage that hold the same place in their
        group of that description as ``rank`` in its own (a pipeline passes each shard to
        the rank that holds the same shard of the next stage). A rank's stage is every rank
        it reaches through groups whose members all run one program; where the programs
        cannot be told apart, that is every rank, and there are none."""
        if listed := self.pipeline_peers(rank):
            return listed
        stage = self._stage(rank)
        peers: set[int] = set()
        for part, inside in self._parts(rank):
            place = part.ranks.index(rank)
            for g in inside:
                if g.desc == part.desc and len(g.ranks) == len(part.ranks) and g.ranks[place] not in stage:
                    peers.add(g.ranks[place])
        return peers

    def _parts(self, rank: int) -> list[tuple[ProcessGroup, list[ProcessGroup]]]:
        """``rank``'s groups that make up, with others of their description, a group of
        several stages (its tensor-parallel group, in the model-parallel group), each with
        the groups inside that larger one."""
        if rank in self._parts_of:
            return self._parts_of[rank]
        found = []
        for whole in self._cross_groups(rank):
            if len({self.program.get(m) for m in whole.ranks}) == 1:
                continue  # a group of one program lies within one stage
            inside = [g for g in self._groups_within(whole) if g.desc]
            found += [(g, inside) for g in inside if rank in g.ranks]
        self._parts_of[rank] = found
        return found

    def stopped_with_its_part(self, rank: int) -> bool:
        """Whether every mate of ``rank``'s part (see ``_parts``) waits in no collective and
        issued no more of the part's collectives than ``rank``: the part stopped together,
        as a pipeline wait stops it."""
        parts = [g for g, _ in self._parts(rank)]
        mates = {m for g in parts for m in g.ranks}
        return bool(parts) and mates <= self.silent and self.left_by_its_part(rank) is False

    def left_by_its_part(self, rank: int) -> bool | None:
        """Whether a mate of ``rank``'s part (see ``_parts``: the group whose members share
        their pipeline neighbours) issued more of it than ``rank`` did: it went on without
        ``rank``. None where ``rank`` has no part."""
        parts = [g for g, _ in self._parts(rank)]
        if not parts:
            return None
        return any(self.issued(g, m) > self.issued(g, rank) for g in parts for m in g.ranks)

    def _cross_groups(self, rank: int) -> list[ProcessGroup]:
        """``rank``'s groups but the default one, the world-wide included (with one
        data-parallel replica, the model-parallel group is the whole job)."""
        return [
            g
            for g in self.a.groups.groups.values()
            if rank in g.ranks and not g.has_p2p and g.name != DEFAULT_PG_ID and g.desc != DEFAULT_PG_DESC
        ]

    def _groups_within(self, whole: ProcessGroup) -> list[ProcessGroup]:
        """The groups (other than ``whole``) that lie wholly inside ``whole``."""
        members = set(whole.ranks)
        return [
            g
            for g in {g.key: g for r in whole.ranks for g in self.groups_of[r]}.values()
            if g.key != whole.key and set(g.ranks) < members
        ]

    def _stage(self, rank: int) -> set[int]:
        """The ranks ``rank`` reaches through groups whose members all run one program."""
        seen, todo = {rank}, [rank]
        while todo:
            r = todo.pop()
            for g in self.groups_of[r]:
                if len({self.program.get(m) for m in g.ranks}) == 1:
                    for m in g.ranks:
                        if m not in seen:
                            seen.add(m)
                            todo.append(m)
        return seen

    def stopped_together(self, rank: int, causes: set[int]) -> bool:
        """``rank`` stopped at the same point as every step-mate, none waiting in a collective,
        and a pipeline peer (where the dumps name them) is stuck or waiting. Where two groups
        are as busy as its step group, the mates of either will do: which of them the rank
        moves in step with, the counts do not say."""
        peers = self.pipeline_peers(rank)
        if peers and not any(p in causes or p not in self.silent for p in peers):
            return False
        for g in self.step_groups(rank):
            level = set(g.ranks) <= self.silent and len({self.issued(g, r) for r in g.ranks}) == 1
            if level and not self.behind_its_mates(rank, g) and not self.ahead_of_a_mate(rank, g):
                return True
        return False

    def step_groups(self, rank: int) -> list[ProcessGroup]:
        """The step group (see ``step_group``) and any other group as busy."""
        g = self.step_group(rank)
        if g is None:
            return []
        mine = self.program.get(rank)
        return [g] + [
            h
            for h in self.groups_of[rank]
            if h.key != g.key
            and self.issued(h, rank) == self.issued(g, rank)
            and all(self.program.get(r) == mine for r in h.ranks)
        ]

    def behind_its_mates(self, rank: int, g: ProcessGroup) -> bool:
        """Every step-mate in ``g`` issued more of another group's collectives (in its own group
        of that description) than ``rank`` did: level in ``g``, ``rank`` stopped earlier."""
        return any(theirs and all(n > mine for n in theirs) for mine, theirs in self._counts_beside(rank, g))

    def ahead_of_a_mate(self, rank: int, g: ProcessGroup) -> bool:
        """A step-mate in ``g`` issued fewer of another group's collectives (in its own group of
        that description) than ``rank`` did: level in ``g``, but ``rank`` went on past the
        point where that mate stopped, so the two did not stop together."""
        return any(0 <= n < mine for mine, theirs in self._counts_beside(rank, g) for n in theirs)

    def _counts_beside(self, rank: int, g: ProcessGroup) -> list[tuple[int, list[int]]]:
        """For each other described group of ``rank``: its count there, and the counts of its
        step-mates in ``g`` in their groups of that description (step-mates run one program,
        so those groups are of one family)."""
        mates = [r for r in g.ranks if r != rank]
        return [
            (self.issued(h, rank), [self.issued(x, m) for m in mates for x in self.groups_of[m] if x.desc == h.desc])
            for h in self.groups_of[rank]
            if h.key != g.key and h.desc
        ]


def after_mismatch(
    findings: list[Finding], blocked_ranks: set[int], mismatch_since: int | None, mismatch_members: set[int]
) -> tuple[list[Finding], list[Finding]]:
    """The findings that stay causes once a mismatch is known, and notes for those it explains."""
    kept: list[Finding] = []
    notes: list[Finding] = []
    for f in findings:
        if mismatch_members and f.rank in mismatch_members:
            continue  # part of the mismatch found before the hang
        if mismatch_since is not None and silent(f, blocked_ranks) and f.since > mismatch_since:
            notes.append(Finding(Kind.CONSEQUENCE, Role.CLEARED, f.ranks))
            continue
        kept.append(f)
    return kept, notes


def pipeline_victims(a: Analysis, blocked_ranks: set[int], findings: list[Finding]) -> list[Finding]:
    """The findings about gloo ranks that stopped together with their step-mates: blocked on a
    pipeline peer, not stuck (none where the dumps record send/recv)."""
    if a.records_p2p:
        return []
    steps = Steps(a, blocked_ranks)
    causes = {f.rank for f in findings}
    return [f for f in findings if silent(f, blocked_ranks) and steps.stopped_together(f.rank, causes)]
