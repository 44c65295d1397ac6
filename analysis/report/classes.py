"""Rank classes as the report's ``rank_classes`` field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..diagnosis.analysis import Analysis
from ..diagnosis.findings import Finding
from ..diagnosis.rank_classes import Place, RankClass, Situation
from .roots import hidden_receivers, root_reason


def place_fields(a: Analysis, place: Place | None, pg_keys: tuple[str, ...]) -> dict[str, Any] | None:
    """Where a class is: the group (by description, and by name when the class is in one group), seq, op, state."""
    if place is None:
        return None
    g = a.groups.groups.get(place.pg_key)
    return {
        "pg_desc": g.desc if g else "",
        "pg_name": (g.name if g else place.pg_key) if len(pg_keys) <= 1 else None,
        "num_groups": len(pg_keys),
        "seq": place.seq,
        "op": place.op,
        "state": place.state,
        "p2p": place.is_p2p,
    }


def class_fields(a: Analysis, classes: list[RankClass], findings: Iterable[Finding] = ()) -> list[dict[str, Any]]:
    """One object per class, largest first; ``id`` is the position, ``waits_on`` refers to ids,
    ``root`` says why a class that waits on no other is a root (``findings``: the diagnosis's)."""
    hidden = hidden_receivers(findings)
    out = []
    for i, c in enumerate(classes):
        where = place_fields(a, c.place, c.pg_keys)
        blocked = c.situation == Situation.BLOCKED
        out.append(
            {
                "id": i,
                "ranks": list(c.ranks),
                "size": c.size,
                "situation": c.situation.value,
                "suspect": c.suspect,
                "failure_class": None if c.failure_class is None else c.failure_class.value,
                "blocked_at": where if blocked else None,
                "last_entry": None if blocked else where,
                "stack_id": None if c.place is None else c.place.stack_id,
                "waits_on": [{"class": k, "reason": reason} for k, reason in c.waits_on],
            }
        )
        out[-1]["root"] = root_reason(out[-1], hidden)
    return out
