"""All-to-all exchanges whose sizes do not add up over the group.

In an all_to_all each rank's input and output sizes legitimately differ (uneven
splits, as MoE and recommendation models issue them), so ranks are not compared with
each other. But an exchange moves data, it does not make or lose any: over the whole
group, the elements sent equal the elements received. Where they do not, some rank's
split sizes disagree with its peers' (NCCL hangs or corrupts; gloo may complete it).
Flight Recorder keeps each rank's totals, not its splits, so the rank whose split is
wrong cannot be named from the sizes alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import schema as s
from ..model.groups import GroupIndex
from ..opnames import is_exchange

_DIMS = re.compile(r"\[([\d,\s]*)\]")


@dataclass(frozen=True, slots=True)
class Imbalance:
    """An exchange at (group, seq) whose elements sent and received over the group differ."""

    pg_key: str
    seq: int
    op: str
    sent: int
    received: int
    ranks: tuple[int, ...]


def numel(sizes: str | None) -> int | None:
    """Elements of all tensors in a sizes text such as ``[[12,64],[3]]``; None if unknown."""
    if not isinstance(sizes, str) or not sizes.startswith("["):
        return None
    inner = sizes[1:-1]
    return sum(math.prod(int(d) for d in dims.split(",") if d.strip()) for dims in _DIMS.findall(inner))


def _fits(n: int | None) -> int:
    """``n`` if it is a count an int64 sum can hold, else -1 (unknown)."""
    return n if n is not None and 0 <= n < 2**50 else -1


def _per_category(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """``numel`` of ``column`` at ``rows``, computed once per distinct text (-1 if unknown)."""
    cat = column.array
    if not isinstance(cat, pd.Categorical):
        cat = pd.Categorical(column.astype(str))
    per = np.array([_fits(numel(str(c))) for c in cat.categories] + [-1], dtype=np.int64)
    codes = cat.codes[rows]
    return per[np.where(codes < 0, len(per) - 1, codes)]


def find_imbalances(
    cells: pd.DataFrame, entries: pd.DataFrame, index: GroupIndex, have_dump: set[int]
) -> list[Imbalance]:
    """Exchanges whose totals over the group differ, where every member (two or more) wrote a
    dump and has the exchange in its buffer."""
    if cells.empty:
        return []
    ops = cells[s.OP].array  # categorical: each op name is tested once, not once per cell
    names = [str(c) for c in ops.categories]
    exchange = np.array([is_exchange(n) and "+" not in n for n in names] + [False])
    mask = exchange[np.where(ops.codes < 0, len(names), ops.codes)]
    if not mask.any():
        return []
    sel = cells.loc[mask, [s.PG_KEY, s.SEQ, s.RANK, s.OP, "row"]]
    rows = sel["row"].to_numpy()
    sel = sel.assign(
        sent=_per_category(entries[s.INPUT_SIZES], rows), received=_per_category(entries[s.OUTPUT_SIZES], rows)
    )
    found = []
    for (key, seq), part in sel.groupby([s.PG_KEY, s.SEQ], sort=True, observed=True):
        group = index.groups.get(str(key))
        members = set() if group is None else set(group.ranks)
        complete = len(members) >= 2 and members <= have_dump and set(part[s.RANK].astype(int)) == members
        if not complete or (part["sent"] < 0).any() or (part["received"] < 0).any():
            continue
        sent, received = int(part["sent"].sum()), int(part["received"].sum())
        if sent != received:
            op = str(part[s.OP].iloc[0])
            found.append(Imbalance(str(key), int(seq), op, sent, received, tuple(group.ranks)))
    return found
