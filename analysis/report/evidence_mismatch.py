"""The sentences of a mismatch: ranks that issued the same seq of a group with different
ops, sizes, dtypes or call sites, or different numbers of the group's collectives."""

from __future__ import annotations

from collections.abc import Callable

from .. import schema as s
from ..diagnosis.findings import Finding, Kind
from ..diagnosis.level_counts import ISSUED
from ..types import FailureClass
from .words import ranks_text

ATTRIBUTE_WORDS = {
    s.OP: "ops",
    s.INPUT_SIZES: "input sizes",
    s.INPUT_DTYPES: "dtypes",
    s.CALL_SITE: "call sites",
    ISSUED: "numbers of the group's collectives issued",
}


def _differ(f: Finding, where: str) -> str:
    d = f.detail
    found = "; ".join(f"rank {r}: {v}" for r, v in list(d["found"].items())[:8])
    return f"At seq {f.seq} of {where} the {ATTRIBUTE_WORDS[d['attribute']]} differ: {found}"


def _count_mismatch(f: Finding, where: str) -> str:
    d = f.detail
    found = "; ".join(f"rank {r}: {v}" for r, v in list(d["found"].items())[:8])
    what = "a skipped collective" if d.get("shift", 0) > 0 else "an added collective"
    return (
        f"Every member issued seq {f.seq} of {where} and none completed it, but the ranks issued different "
        f"numbers of the group's collectives ({found}) where the ranks level with them in their other groups "
        f"issued {d['expected']} in theirs: {what}."
    )


def _mismatch(f: Finding, where: str) -> str:
    if f.detail["attribute"] == ISSUED:
        return _count_mismatch(f, where)
    basis = {
        "program": "the other ranks at this point of the program (of its group, and of the groups that run the same calls)",
        "history": "the ranks of its role at the same point of their other steps",
        "usual": "the other side (the call its role issues together elsewhere)",
        "shift": "the other side",
        "off_by_one": "the other side (one collective off it from here on, in a call both sides issue in turn)",
        "counts": "the side that issued as many of the group's collectives as its level peers did",
        "pair_counts": "the other side (as many of the group's collectives issued as in a group of the same"
        " program; this side one off that)",
    }.get(f.detail["decided_by"], "the majority of the group")
    text = f"{_differ(f, where)}, while {basis} issued {f.detail['expected']}."
    shift = f.detail.get("shift", 0)
    if shift and f.detail["decided_by"] == "counts":
        who = ranks_text(f.ranks).capitalize()
        text += (
            f" {who} issued one {'fewer' if shift > 0 else 'more'} than the ranks level with it in their other"
            f" groups issued in theirs: {'a skipped' if shift > 0 else 'an added'} collective."
        )
    elif (
        not shift
        and f.failure_class == FailureClass.DESYNC
        and f.detail["attribute"] in (s.INPUT_SIZES, s.INPUT_DTYPES)
    ):
        who = ranks_text(f.ranks).capitalize()
        text += (
            f" {who} issued a whole call the program issues together elsewhere: it is at another point of its"
            " program (a skipped or added collective), not passing a wrong size."
        )
    elif shift:
        who = ranks_text(f.ranks).capitalize()
        text += (
            f" {who} issued here what the others issue at seq {f.seq + 1}: a skipped collective."
            if shift > 0
            else f" {who} issued at seq {f.seq + 1} what the others issued here: an added collective."
        )
    return text + _also_differ(f)


def _also_differ(f: Finding) -> str:
    """Every other attribute the odd ranks differ on, with their values and the others'."""
    parts = []
    for attribute, d in f.detail.get("differs", {}).items():
        if attribute == f.detail["attribute"]:
            continue
        theirs = "; ".join(f"rank {r}: {v}" for r, v in list(d["odd"].items())[:4])
        parts.append(f"{ATTRIBUTE_WORDS[attribute]} ({theirs}; the others: {d['others']})")
    return f" The {', '.join(parts)} differ too." if parts else ""


def _undecided(f: Finding, where: str) -> str:
    return f"{_differ(f, where)}, and no majority or sibling group decides which is right.{_also_differ(f)}"


SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.MISMATCH: _mismatch,
    Kind.UNDECIDED_MISMATCH: _undecided,
}
