"""Each rank's calls by record number, and the program of ranks that run one program, in
record order: layer 1 of the one model across groups (``docs/one-model.md``).

Flight Recorder numbers each process's records (``record_id``): collectives and send/recvs
of every group alike, in the order the process issued them. Ranks that run one program
issue the same calls in the same order, so their records hold the same call at the same
number. A call here is (program family, op, input sizes, input dtypes, call site): sibling
groups (one family) are one point of the program, whichever group a rank issued it in.

The program of a set of ranks in record order is, at each record number, the call most of
them hold there (``support`` of ``seen``). Where their records repeat every ``p`` numbers (a
training step) the program past the records they hold (beyond where they stopped) is the
call of the same point of an earlier step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..opnames import is_exchange

TAIL = 96
"""Records kept per rank, the newest: the departure that hangs a job lies near its end."""
PERIOD_AGREEMENT = 0.95
"""Share of record numbers one period apart whose calls must agree for the records to repeat."""
MIN_REPEATS = 2
"""A period must be seen at least this many times over."""

CALL = ("family", s.OP, s.INPUT_SIZES, s.INPUT_DTYPES, s.CALL_SITE)
"""What a call is in record order (an exchange's sizes left out: its splits differ by rank
and by step, as in ``families.call_codes``)."""


@dataclass(frozen=True, slots=True)
class Records:
    """The newest records of some ranks, one row each: rank, record_id, pg_key, seq (the p2p
    seq for a send/recv), is_p2p, done, ``CALL``, and ``token`` (equal where the call is)."""

    table: pd.DataFrame

    def of(self, rank: int) -> pd.DataFrame:
        t = self.table
        return t.loc[(t[s.RANK] == rank).to_numpy()]


def newest_records(
    entries: pd.DataFrame,
    ranks: set[int],
    key_of: dict[tuple[int, str], str],
    family_of: dict[str, str],
    site_of_stack: dict[int, str],
) -> Records:
    """The newest ``TAIL`` records of each of ``ranks`` (see :class:`Records`)."""
    e = entries.loc[entries[s.RANK].isin(ranks).to_numpy() & entries[s.RECORD_ID].notna().to_numpy()]
    e = e.sort_values([s.RANK, s.RECORD_ID], kind="stable").groupby(s.RANK, sort=False).tail(TAIL)
    names = e[s.PG_NAME].astype(str).to_numpy()
    rank = e[s.RANK].to_numpy(dtype=np.int64)
    keys = [key_of.get((int(r), n), n) for r, n in zip(rank, names)]
    p2p = e[s.IS_P2P].fillna(False).to_numpy(dtype=bool)
    seq = np.where(p2p, e[s.P2P_SEQ].fillna(-1).to_numpy(np.int64), e[s.SEQ].fillna(-1).to_numpy(np.int64))
    sites = [
        site_of_stack.get(int(sid), str(site)) if not pd.isna(sid) else str(site)
        for sid, site in zip(e[s.STACK_ID], e[s.CALL_SITE])
    ]
    table = pd.DataFrame(
        {
            s.RANK: rank,
            s.RECORD_ID: e[s.RECORD_ID].to_numpy(dtype=np.int64),
            s.PG_KEY: keys,
            s.SEQ: seq,
            s.IS_P2P: p2p,
            "entry": e.index.to_numpy(),
            "family": [family_of.get(k, k) for k in keys],
            s.OP: e[s.OP].astype(str).to_numpy(),
            s.INPUT_SIZES: e[s.INPUT_SIZES].astype(str).to_numpy(),
            s.INPUT_DTYPES: e[s.INPUT_DTYPES].astype(str).to_numpy(),
            s.CALL_SITE: sites,
        }
    )
    return records_of(table)


def records_of(table: pd.DataFrame) -> Records:
    """:class:`Records` of a table with every column but ``token``, which is added (an
    exchange's sizes blanked first: its splits differ by rank and by step)."""
    table = table.reset_index(drop=True)
    exchange = np.array([is_exchange(str(op)) for op in table[s.OP]], dtype=bool)
    table[s.INPUT_SIZES] = np.where(exchange, "", table[s.INPUT_SIZES].astype(str).to_numpy())
    return Records(table.assign(token=table.groupby(list(CALL), sort=False, dropna=False).ngroup().to_numpy(np.int64)))


@dataclass(frozen=True, slots=True)
class RecordProgram:
    """The program of some ranks by record number."""

    call: dict[int, tuple[int, int]]
    """record_id -> (token, a row of ``Records.table`` that holds it), where most hold it."""
    seen: dict[int, int]
    """record_id -> how many of the ranks hold a record there."""
    period: int | None
    """The step, in records, where the program repeats."""
    last: int
    """The newest record number any of the ranks holds."""

    def at(self, record_id: int) -> tuple[int, int] | None:
        """The program's call at ``record_id``; past the records held, that of an earlier step."""
        hit = self.call.get(record_id)
        if hit is not None or self.period is None or record_id <= self.last:
            return hit
        back = record_id - self.period * ((record_id - self.last + self.period - 1) // self.period)
        return self.call.get(back)

    def tokens(self) -> set[int]:
        return {t for t, _ in self.call.values()}


def record_program(records: pd.DataFrame) -> RecordProgram:
    """The call most of ``records``' ranks hold at each record number (an even split: none)."""
    if records.empty:
        return RecordProgram({}, {}, None, -1)
    counts = records.groupby([s.RECORD_ID, "token"], sort=True).size().rename("n").reset_index()
    seen = counts.groupby(s.RECORD_ID)["n"].sum()
    top = counts.sort_values([s.RECORD_ID, "n"], ascending=[True, False], kind="stable")
    best = top.drop_duplicates(s.RECORD_ID)
    second = top.loc[top.duplicated(s.RECORD_ID)].drop_duplicates(s.RECORD_ID).set_index(s.RECORD_ID)["n"]
    row_of = records.reset_index().drop_duplicates([s.RECORD_ID, "token"]).set_index([s.RECORD_ID, "token"])["index"]
    call = {}
    for rid, token, n in best[[s.RECORD_ID, "token", "n"]].itertuples(index=False):
        if second.get(rid, 0) < n:
            call[int(rid)] = (int(token), int(row_of[(rid, token)]))
    return RecordProgram(
        call, {int(k): int(v) for k, v in seen.items()}, _period(call), int(records[s.RECORD_ID].max())
    )


def _period(call: dict[int, tuple[int, int]]) -> int | None:
    """The smallest p where the program's calls p records apart agree (``PERIOD_AGREEMENT``)."""
    if not call:
        return None
    ids = np.array(sorted(call), dtype=np.int64)
    tokens = np.array([call[i][0] for i in ids], dtype=np.int64)
    span = int(ids[-1] - ids[0]) + 1
    dense = np.full(span, -1, dtype=np.int64)
    dense[ids - ids[0]] = tokens
    for p in range(1, span // MIN_REPEATS + 1):
        a, b = dense[:-p], dense[p:]
        both = (a >= 0) & (b >= 0)
        n = int(both.sum())
        if n >= p and n and (a[both] == b[both]).mean() >= PERIOD_AGREEMENT:
            return p
    return None
