"""Hosts and the drain list: the machines that hold a suspect or a rank without a readable dump.

Drain order follows the evidence: first the host of the most telling suspect (a
mismatch, then a rank without a dump, a missing participant, an unmatched send/recv, a
rank stuck in flight; a suspect in the wavefront group before one outside it), then
hosts with more suspects, then hosts that only hold ranks without a readable dump.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..types import FailureClass, HostMap
from .words import compact_ranks


def host_fields(
    host_map: HostMap | None,
    ranks: Iterable[int],
    suspects: Mapping[int, FailureClass],
    without_dump: Collection[int],
    wave_ranks: Collection[int] = (),
) -> tuple[list[dict[str, Any]], list[str]]:
    """``hosts`` (one entry per host that holds a suspect or a rank without a readable dump,
    in drain order) and ``drain_hosts`` (their names)."""
    if not host_map:
        return [], []
    on_host: dict[str, list[int]] = defaultdict(list)
    for r in sorted(set(ranks) | set(suspects) | set(without_dump)):
        host = host_map.host(r)
        if host is not None:
            on_host[host].append(r)
    rows = []
    for host, members in on_host.items():
        mine = [r for r in members if r in suspects]
        lost = [r for r in members if r in without_dump]
        if not mine and not lost:
            continue
        keys = [(r not in wave_ranks, suspects[r].priority, r) for r in mine]
        best = min(keys) if keys else (True, len(FailureClass), min(lost))
        rows.append(
            (
                best,
                -len(mine),
                host,
                {"host": host, "ranks": members, "suspect_ranks": mine, "ranks_without_dump": lost},
            )
        )
    rows.sort(key=lambda row: row[:3])
    return [row[3] for row in rows], [row[2] for row in rows]


def host_labels(host_map: HostMap | None, ranks: Iterable[int]) -> dict[int, str]:
    """rank -> host for the ranks whose host is known (for row labels)."""
    if not host_map:
        return {}
    return {r: h for r in ranks if (h := host_map.host(r)) is not None}


def drain_reasons(hosts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each host of the report's ``hosts`` with why it is drained: the suspects it holds, the
    ranks on it without a readable dump."""
    out = []
    for h in hosts:
        why = []
        if h["suspect_ranks"]:
            why.append(f"suspect {compact_ranks(h['suspect_ranks'], 8)}")
        lost = [r for r in h["ranks_without_dump"] if r not in h["suspect_ranks"]]
        if lost:
            why.append(f"no readable dump from {compact_ranks(lost, 8)}")
        out.append((str(h["host"]), "; ".join(why)))
    return out
