"""Findings for a rank that left the program: a collective it added, or one where its own
routine says it issued something else. Shared by the hang's cycles and lone collectives.
"""

from __future__ import annotations

from .. import schema as s
from ..model.routine import Departure
from ..opnames import is_send_recv
from ..types import FailureClass
from .analysis import Analysis
from .findings import Finding, Kind, Role


def extra_finding(a: Analysis, rank: int, pg_key: str, seq: int, op: str | None, since: int) -> Finding:
    """The finding for a rank that issued a collective no other rank issues."""
    mine = a.cells.iloc[a.rank_rows("cells", rank)]  # the rank's rows, not three cell-long tests
    hit = mine.loc[(mine[s.PG_KEY] == pg_key) & (mine[s.SEQ] == seq), s.CALL_SITE]
    site = hit.iloc[0] if len(hit) and isinstance(hit.iloc[0], str) else None
    return Finding(
        Kind.EXTRA, Role.SUSPECT, (rank,), FailureClass.DESYNC, pg_key, seq, op, since=since, detail={"call_site": site}
    )


def departed_finding(rank: int, d: Departure, since: int, shared: bool = False) -> Finding:
    """The finding for a rank that left its routine at ``d``: where its routine issues a
    send/recv there and the collective it issued instead is one other ranks issue too
    (``shared``: the program's next one, not an added one), it never posted that send/recv
    (its peer waits in the other half)."""
    skipped_p2p = shared and is_send_recv(d.expected[1])
    return Finding(
        Kind.DEPARTED,
        Role.SUSPECT,
        (rank,),
        FailureClass.P2P_UNMATCHED if skipped_p2p else FailureClass.DESYNC,
        d.pg_key,
        d.seq,
        d.issued[1],
        since=since,
        detail={"expected_op": d.expected[1], "expected_family": d.expected[0], "skipped_p2p": skipped_p2p},
    )
