"""The findings of a diagnosis in words: one sentence per finding, written here only (each
kind's sentence in the ``evidence_*`` module of its family)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace

from ..diagnosis.findings import Finding, Kind
from ..model.groups import GroupIndex
from ..types import FileError
from . import evidence_health, evidence_mismatch, evidence_order, evidence_stops
from .evidence_mismatch import ATTRIBUTE_WORDS
from .words import group_label

_SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    **evidence_mismatch.SENTENCES,
    **evidence_order.SENTENCES,
    **evidence_stops.SENTENCES,
    **evidence_health.SENTENCES,
}


def sentence(f: Finding, groups: GroupIndex, unreadable: Mapping[int, FileError] | None = None) -> str:
    """The finding as one or two sentences a user reads; ``unreadable`` names the dump files of
    ranks that are there but could not be read (so they are not said to have written none)."""
    where = group_label(groups.groups.get(f.pg_key)) if f.pg_key is not None else ""
    if unreadable and f.kind in (Kind.NO_DUMP, Kind.ABSENT) and f.rank in unreadable:
        f = replace(f, detail={**f.detail, "unreadable_file": os.path.basename(unreadable[f.rank].file)})
    return _SENTENCES[f.kind](f, where)


def evidence(
    findings: tuple[Finding, ...] | list[Finding], groups: GroupIndex, unreadable: Mapping[int, FileError] | None = None
) -> list[str]:
    return [sentence(f, groups, unreadable) for f in findings]


_REASONS: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.UNDECIDED_MISMATCH: lambda f, where: (
        f"its {ATTRIBUTE_WORDS[f.detail['attribute']]} at seq {f.seq} of {where} differ from its peers', and no "
        "majority or sibling group at the same point of the program decides which side is right"
    ),
    Kind.SIZES_DO_NOT_ADD_UP: lambda f, where: (
        f"a member of {where}, whose {f.op or 'all_to_all'} at seq {f.seq} does not add up; the sizes cannot tell "
        "which member's splits are wrong"
    ),
}


def _every_rank_added(f: Finding, where: str) -> str:
    return (
        f"it alone issued seq {f.seq} ({f.op or 'collective'}) of {where}, and each rank it waits with issued one "
        "the others did not: no rank's program is left to tell which one left it"
    )


def reason(f: Finding, groups: GroupIndex) -> str:
    """Why a rank is possible, not sure: a short clause for the report's ``possible_ranks``."""
    where = group_label(groups.groups.get(f.pg_key)) if f.pg_key is not None else ""
    render = _every_rank_added if f.kind == Kind.EXTRA else _REASONS.get(f.kind)
    return render(f, where) if render else sentence(f, groups)
