"""Point-to-point ops (send/recv) that had not completed when the dumps were taken."""

from __future__ import annotations

import pandas as pd

from .. import schema as s
from ..opnames import peer_ranks
from ..tables.rowkeys import equals, flag
from ..types import DumpSet
from .groups import GroupIndex


def pending_p2p(dumps: DumpSet, index: GroupIndex) -> pd.DataFrame:
    """Pending send/recv rows with their group key and (group-local) peers."""
    e = dumps.entries
    mask = flag(e[s.IS_P2P]) & ~(equals(e[s.STATE], "completed") | flag(e[s.RETIRED]))
    p = e.loc[mask, [s.RANK, s.PG_NAME, s.OP, s.PROFILING_NAME, s.P2P_SEQ, s.RECORD_ID]].copy()
    p[s.PEER_SRC], p[s.PEER_DST] = peer_ranks(p[s.PROFILING_NAME])
    p[s.PG_KEY] = [index.key_of.get((int(r), str(n)), str(n)) for r, n in zip(p[s.RANK], p[s.PG_NAME])]
    return p
