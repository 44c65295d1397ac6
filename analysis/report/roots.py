"""Why a rank class is a root of the wait-for picture: it waits on no other class.

The same words label the roots of the Job picture and fill ``rank_classes[].root`` in the
JSON report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..diagnosis.findings import Finding, Kind

SUSPECT = "suspect"
HIDDEN_RECEIVE = "blocked in a receive the dumps cannot show"
FINISHED = "finished"
NO_DUMP = "no dump"
UNREADABLE = "unreadable dump"
HELD_BY_NONE = "stuck in flight, held by no rank the dumps show"

#: Findings whose ranks went quiet waiting on a send/recv the dumps do not hold (gloo
#: records none; a pipeline peer stuck or without a dump never sent).
_HIDDEN_KINDS = (Kind.PIPELINE_BLOCKED, Kind.BEHIND_STUCK, Kind.BEHIND_NO_DUMP)


def hidden_receivers(findings: Iterable[Finding]) -> set[int]:
    """Ranks the diagnosis takes as blocked in a send/recv its dumps cannot show."""
    return {int(r) for f in findings if f.kind in _HIDDEN_KINDS for r in f.ranks}


def root_reason(cls: dict[str, Any], hidden: set[int]) -> str | None:
    """Why a class of ``rank_classes`` is a root (None when it waits on another class)."""
    if cls["waits_on"]:
        return None
    if cls["suspect"]:
        return SUSPECT
    if cls["situation"] == "no_dump":
        return NO_DUMP
    if cls["situation"] == "unreadable":
        return UNREADABLE
    if set(cls["ranks"]) & hidden:
        return HIDDEN_RECEIVE
    if cls["situation"] == "idle":
        return FINISHED
    return HELD_BY_NONE
