"""Two ranks of one program, record by record: the one a record short skipped it.

Flight Recorder numbers each process's records (``record_id``), collectives and
send/recvs of every group alike. Ranks at one stage of one program issue the same calls
in the same order, so their records hold the same call at the same number. Where two
such ranks' records agree up to one number and differ from the next on, and one's records
from there are the other's from the next number, one has a record the other lacks. An added collective
comes from a call of its own (a debug metric, a stray barrier): issued once, by that rank
alone. A call the other rank issues too, in any of its records, is a call of the program,
so the rank without it skipped it. Where neither shows, nothing is decided. This
shows a skip inside a run of like collectives, where the seqs of the group alone cannot
(the skipped all_reduce looks like the next one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.callsites import job_call_sites
from .analysis import Analysis

MIN_SHIFTED = 3
"""Later records that must show the shift, every one of them, before it decides."""

Call = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Misaligned:
    """``short`` lacks the record ``long`` holds at ``record_id``: it skipped it, or, where
    ``added``, ``long`` added it."""

    short: int
    long: int
    record_id: int
    pg_key: str
    seq: int
    op: str
    is_p2p: bool
    added: bool


class RecordAlignment:
    """Each rank's records as calls by number, compared pairwise on demand."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self._calls: dict[int, dict[int, Call]] = {}
        self._where: dict[int, dict[int, tuple[str, int, str, bool]]] = {}
        self._sites: dict[int, str] | None = None

    def _site(self, stack_id: object, recorded: object) -> str:
        """The call site of a record: from its stack, past the program's own helpers (see
        ``callsites``), else as recorded."""
        if self._sites is None:
            stacks = self.a.dumps.stacks
            self._sites = job_call_sites(stacks) if len(stacks) else {}
        site = self._sites.get(int(stack_id)) if not pd.isna(stack_id) else None
        return str(site if site is not None else recorded)

    def _records(self, rank: int) -> dict[int, Call]:
        if rank not in self._calls:
            a = self.a
            e = a.dumps.entries.iloc[a.rank_rows("entries", rank)]
            family_of, key_of = a.families.family_of, a.groups.key_of
            calls: dict[int, Call] = {}
            where: dict[int, tuple[str, int, str, bool]] = {}
            cols = [s.RECORD_ID, s.PG_NAME, s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE, s.IS_P2P, s.STACK_ID]
            seqs = np.where(
                e[s.IS_P2P].fillna(False).to_numpy(dtype=bool),
                e[s.P2P_SEQ].fillna(-1).to_numpy(dtype=np.int64),
                e[s.SEQ].fillna(-1).to_numpy(dtype=np.int64),
            )
            for (rid, name, op, sizes, dtypes, site, p2p, stack), seq in zip(e[cols].itertuples(index=False), seqs):
                if pd.isna(rid):
                    continue
                key = key_of.get((rank, str(name)), str(name))
                calls[int(rid)] = (family_of.get(key, key), str(op), str(sizes), str(dtypes), self._site(stack, site))
                where[int(rid)] = (key, int(seq), str(op), bool(p2p))
            self._calls[rank], self._where[rank] = calls, where
        return self._calls[rank]

    def compare(self, one: int, other: int) -> Misaligned | None:
        """Where ``one`` and ``other`` (ranks of one program at one stage) stop holding the
        same call at the same record number and one is a record short from there on, judged
        by the call (see the module)."""
        a, b = self._records(one), self._records(other)
        common = sorted(set(a) & set(b))
        first = next((r for r in common if a[r] != b[r]), None)
        if first is None or first - 1 not in a or first - 1 not in b or not self._same_seq(one, other, first - 1):
            return None  # no record just before, held alike by both: the divergence may lie before it
        found = []
        for long, short, mine, theirs in ((one, other, a, b), (other, one, b, a)):
            shifted = [r for r in theirs if r >= first and r + 1 in mine]
            if len(shifted) >= MIN_SHIFTED and all(theirs[r] == mine[r + 1] for r in shifted):
                call = mine[first]
                # the short rank, or another rank of the call's groups, issues it too: the program's
                shared = call in theirs.values() or self._issued_by_others(long, short, first)
                own = not shared and list(mine.values()).count(call) == 1  # issued once, by the long rank alone
                if shared == own:
                    continue  # neither shows: no decision
                key, seq, op, p2p = self._where[long][first]
                found.append(Misaligned(short, long, first, key, seq, op, p2p, added=own))
        return found[0] if len(found) == 1 else None

    def _issued_by_others(self, long: int, short: int, record_id: int) -> bool:
        """Whether a rank other than ``long`` and ``short``, of the group of ``long``'s record
        ``record_id`` or a group of its description (up to ``OTHERS_ASKED`` of them), holds
        that call: in a small ring buffer the short rank's own records may no longer show a
        call its program issues once a step."""
        key = self._where[long][record_id][0]
        groups = self.a.groups.groups
        keys = [key, *self.a.families.same_description(key)]
        ranks = sorted({r for k in keys if k in groups for r in groups[k].ranks} - {long, short})
        call = self._records(long)[record_id]
        return any(call in self._records(r).values() for r in ranks[:OTHERS_ASKED])

    def _same_seq(self, one: int, other: int, record_id: int) -> bool:
        """Whether the like calls ``one`` and ``other`` hold at ``record_id`` are the same
        collective of their group (the same seq). One seq apart, like calls of a run (the
        gradient buckets) only look alike there: the records were shifted already, before
        the first one both dumps hold (an only-active dump holds few)."""
        mine, theirs = self._where[one][record_id], self._where[other][record_id]
        return mine[3] or theirs[3] or mine[1] == theirs[1]


OTHERS_ASKED = 16
"""Ranks, other than the two compared, whose records may show a call is the program's."""

MATES_COMPARED = 4
"""Ranks of a rank's program and stage its records are compared with, at most."""
