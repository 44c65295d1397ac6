"""What an op's profiling name says: the op, and for send/recv the two group ranks.

``nccl:send 0->3`` is a send from group rank 0 to 3; ``nccl:recv 3<-0`` the matching
recv. A function of the name alone, so it is parsed once per distinct name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the readers parse names without pandas; only peer_ranks needs it
    import pandas as pd

_P2P_NAME = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)$")


def peer_ranks(names: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The (src, dst) group ranks a send/recv's profiling name gives (null for other ops).

    A function of the name, so parsed once per distinct name instead of stored per row.
    """
    import pandas as pd

    cat = names.astype("category").array
    parsed = [parse_op(str(x)) for x in cat.categories]
    out = []
    for i in (1, 2):
        per_name = np.array([-1 if p[i] is None else p[i] for p in parsed] + [-1], dtype=np.int64)
        values = per_name[np.where(cat.codes < 0, len(parsed), cat.codes)]
        out.append(pd.Series(pd.arrays.IntegerArray(np.maximum(values, 0), values < 0), index=names.index))
    return out[0], out[1]


def parse_op(name: str) -> tuple[str, int | None, int | None]:
    """``nccl:send 0->3`` -> (send, 0, 3); ``nccl:recv 3<-0`` -> (recv, 0, 3): (op, src, dst)."""
    op = name.split(":", 1)[1] if ":" in name else name
    m = _P2P_NAME.match(op)
    if not m:
        return op, None, None
    a, b = int(m.group(2)), int(m.group(4))
    if max(a, b) >= 2**31:
        return op, None, None
    src, dst = (a, b) if m.group(3) == "->" else (b, a)
    return m.group(1), src, dst


EXCHANGE_OPS = ("all_to_all", "alltoall")
"""Ops that exchange uneven amounts: their sizes change from step to step (MoE routing)."""


def is_exchange(op: str) -> bool:
    """Whether ``op`` (or any part of a coalesced ``a+b``) is an all-to-all exchange."""
    return any(x in op for x in EXCHANGE_OPS)


def is_send_recv(op: str) -> bool:
    """A point-to-point op (send, recv, or a coalesced group of them)."""
    return bool(op) and set(op.split("+")) <= {"send", "recv"}
