"""A rank's local group ids read by the order it made its groups.

``pg_status`` is keyed by the process-local ``pg_id``, and only a rank's entries name the
group of an id; an only-active dump or a short ring buffer leaves most ids unnamed. A
process numbers the groups it is a member of 0, 1, 2, ... as it makes them (the default
group first), and torch's default group names count every group the job makes, alike on
every rank. So where every group name a rank's ``pg_config`` lists is a number, its k-th
group by name is its local id k. The job is read so only where every id its entries name,
on every rank, agrees (a job that names its groups itself, or whose dumps list groups the
process made no backend for, does not).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .. import schema as s


def ids_by_creation_order(
    configs: pd.DataFrame, id_to_name: Mapping[tuple[int, str], str]
) -> dict[tuple[int, str], str]:
    """(rank, pg_id) -> group name for every group each rank's pg_config lists, where the
    names are numbers and every (rank, pg_id) -> name the entries show agrees; else empty."""
    if configs.empty:
        return {}
    listed = configs[[s.RANK, s.PG_NAME]].drop_duplicates()
    order: dict[tuple[int, str], str] = {}
    for rank, names in listed.groupby(s.RANK, sort=False)[s.PG_NAME]:
        names = {str(n) for n in names}
        if not all(n.isdecimal() for n in names):
            continue
        for k, name in enumerate(sorted(names, key=int)):
            order[(int(rank), str(k))] = name
    ordered = {rank for rank, _ in order}
    shown = [(key, name) for key, name in id_to_name.items() if key[0] in ordered]
    if not shown or any(order.get(key) != name for key, name in shown):
        return {}
    return order
