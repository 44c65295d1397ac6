"""Send/recv counts at one point of the program: a rank that posted fewer skipped one.

NCCL numbers each rank's send/recvs in a group (``p2p_seq_id``). The ranks at one stage
of sibling pipelines run one schedule: where each posts the same op to the same
neighbour, as the same one of its last such ops before the same collective, they had
posted as many send/recvs of their group. A rank that had posted one fewer there skipped
one (a send its neighbour waits for); one more, it added one. Further off, it is at
another step: a rank that skipped or added a collective issues the program's next one
under another seq, so the collective that follows is not the same point. The collective
that follows and the records in between are the newest ones, so this holds where the
dumps keep only pending entries, or a small ring buffer.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import pandas as pd

from .. import schema as s
from ..model.order import ProgramOrder, Token
from ..opnames import peer_ranks
from ..tables.rowkeys import flag
from .analysis import Analysis


@dataclass(frozen=True, slots=True)
class P2PRecord:
    """One send/recv a rank posted, as its group sees it."""

    rank: int
    pg_key: str
    op: str
    step: int
    """The neighbour's group rank less this rank's (+1: the next stage)."""
    seq: int
    record_id: int


@dataclass(frozen=True, slots=True)
class P2PCount:
    """``rank`` posted ``record`` having posted ``mine`` send/recvs of its group where the
    ``mates`` at its stage of sibling groups, at the same point, had posted ``theirs``."""

    record: P2PRecord
    mine: int
    theirs: int
    mates: tuple[int, ...]
    before: Token
    """The collective that follows it in every one of their programs."""


MATES_COMPARED = 16
"""Ranks at a rank's stage of sibling groups whose send/recvs are compared with its own, at most."""


class P2PCounts:
    """Each rank's recorded send/recvs (read on first use), and where each stands in its program."""

    def __init__(self, a: Analysis, order: ProgramOrder) -> None:
        self.a, self.order = a, order
        self._by_rank: dict[int, list[P2PRecord]] = {}

    def records(self, rank: int) -> list[P2PRecord]:
        """``rank``'s send/recvs, oldest first."""
        if rank not in self._by_rank:
            a = self.a
            e = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
            rows = e.loc[flag(e[s.IS_P2P]), [s.PG_NAME, s.OP, s.PROFILING_NAME, s.P2P_SEQ, s.RECORD_ID]]
            found = []
            if not rows.empty:
                src, dst = peer_ranks(rows[s.PROFILING_NAME])
                for name, op, a_src, a_dst, seq, rid in zip(
                    rows[s.PG_NAME], rows[s.OP], src, dst, rows[s.P2P_SEQ], rows[s.RECORD_ID]
                ):
                    if any(pd.isna(x) for x in (a_src, a_dst, seq, rid)) or str(op) not in ("send", "recv"):
                        continue
                    me, peer = (a_src, a_dst) if op == "send" else (a_dst, a_src)
                    key = a.groups.key_of.get((rank, str(name)), str(name))
                    found.append(P2PRecord(rank, key, str(op), int(peer) - int(me), int(seq), int(rid)))
            self._by_rank[rank] = sorted(found, key=lambda r: r.record_id)
        return self._by_rank[rank]

    def _point(self, record: P2PRecord) -> tuple[Token, int] | None:
        """The collective ``record``'s rank issued next, and how many ops like it (same
        group, op and neighbour) it posted between the two: the point of its program."""
        after = self.order.first_after(record.rank, record.record_id)
        if after is None:
            return None
        rid, token = after
        records = self.records(record.rank)  # oldest first: those between are one slice
        first = bisect.bisect_right(records, record.record_id, key=lambda r: r.record_id)
        last = bisect.bisect_left(records, rid, key=lambda r: r.record_id)
        kind = (record.pg_key, record.op, record.step)
        return token, sum(1 for r in records[first:last] if (r.pg_key, r.op, r.step) == kind)

    def _stage_mates(self, record: P2PRecord) -> dict[int, str]:
        """The rank at ``record``'s stage in each other group of its description, with that group."""
        groups = self.a.groups.groups
        mine = groups.get(record.pg_key)
        if mine is None or not mine.desc or record.rank not in mine.ranks:
            return {}
        stage = mine.ranks.index(record.rank)
        siblings = [g for g in groups.values() if g.key != mine.key and g.desc == mine.desc]
        same = sorted((g for g in siblings if len(g.ranks) == len(mine.ranks)), key=lambda g: g.ranks[stage])
        return {g.ranks[stage]: g.key for g in same[:MATES_COMPARED]}

    def off_count(self, record: P2PRecord) -> P2PCount | None:
        """Where ``record``'s rank had posted another number of its group's send/recvs than
        the ranks at its stage of sibling groups had at the same point (all that recorded
        it agreeing)."""
        point = self._point(record)
        if point is None:
            return None
        theirs: dict[int, int] = {}
        for mate, key in self._stage_mates(record).items():
            for r in self.records(mate):
                if (r.op, r.step, r.pg_key) == (record.op, record.step, key) and self._point(r) == point:
                    theirs[mate] = r.seq
        counts = set(theirs.values())
        if len(counts) != 1 or abs(record.seq - next(iter(counts))) != 1:
            return None  # further off, the rank is at another step: its next collective is not theirs
        return P2PCount(record, record.seq, counts.pop(), tuple(sorted(theirs)), point[0])

    def pending_off_count(self, rank: int, pg_key: str, seq: int) -> P2PCount | None:
        """``off_count`` for the send/recv ``rank`` waits in at (``pg_key``, p2p ``seq``)."""
        record = next((r for r in self.records(rank) if (r.pg_key, r.seq) == (pg_key, seq)), None)
        return self.off_count(record) if record is not None else None
