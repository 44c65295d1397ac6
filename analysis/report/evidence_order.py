"""The sentences of a rank out of step with its program: a collective skipped, added,
issued out of place or past, where its peers kept to the order they share."""

from __future__ import annotations

from collections.abc import Callable

from ..diagnosis.findings import Finding, Kind
from .words import called_from, ranks_text


def _extra(f: Finding, where: str) -> str:
    text = (
        f"Rank {f.rank} issued an extra collective: seq {f.seq} ({f.op or 'collective'}"
        f"{called_from(f.detail.get('call_site'))}) of {where}, which no other rank issues; its peers moved on "
        "to later collectives."
    )
    if f.detail.get("went_on"):  # named by the ranks of its program that went past it (see own_calls)
        text += (
            f" {ranks_text(f.detail['went_on']).capitalize()} of its program went past the point where it issued it,"
            f" without it: its one extra explains that for {f.detail['cost']:g}, their skips for"
            f" {f.detail['other_side']:g} (the edit costs of docs/how-it-works.md)."
        )
    return text


def _went_past(f: Finding, where: str) -> str:
    text = (
        f"Rank {f.rank} went on past seq {f.seq} ({f.op or 'collective'}) of {where} without issuing it: "
        f"{ranks_text(f.waiters)} {'waits' if len(f.waiters) == 1 else 'wait'} for it there, while rank {f.rank}"
        " waits further on in its own steps (a skipped or added collective)."
    )
    if "cost" in f.detail:  # named by the waits of a wait-for cycle
        text += (
            f" Its skip explains every wait of the cycle that needs an edit for {f.detail['cost']:g}; explaining them"
            f" without it costs {f.detail['other_side']:g} (the edit costs of docs/how-it-works.md)."
        )
    return text


def _record_edit(f: Finding, where: str) -> str:
    d = f.detail
    mates = f"the ranks of its program ({ranks_text(d['against'])})"
    call = f"seq {f.seq} ({f.op or 'collective'}{called_from(d.get('call_site'))}) of {where}"
    if d["edit"] == "skip":
        text = f"Rank {f.rank} skipped {call}: at its record {d['record_id']} {mates} hold that call ({d['expected']})"
        text += ", and its later records line up with theirs one record on" if d["shown"] else ""
        waiting = [r for r in f.waiters if r != f.rank]
        verb = "waits" if len(waiting) == 1 else "wait"
        return text + (f"; {ranks_text(waiting)} {verb} for it." if waiting else ".")
    if d["edit"] == "extra":
        text = f"Rank {f.rank} added {call} as its record {d['record_id']}, a call {mates} do not hold there"
        return text + (", and its later records line up with theirs one record back." if d["shown"] else ".")
    differ = ", ".join(d["differs"]) or "the call"
    return f"At its record {d['record_id']} rank {f.rank} issued {call} where {mates} issue {d['expected']} ({differ} differ)."


def _count_edit(f: Finding, where: str) -> str:
    d = f.detail
    fewer, more = (None if x is None else x.split("#")[0] or "default" for x in (d["fewer"], d["more"]))
    place = d["place"]
    if place is None:
        whom = f"every point the ranks of its program ({ranks_text(d['against'])}) reached"
    else:
        family, seq, waited = place
        at = f"seq {seq} of their {family.split('#')[0] or 'default'} group"
        whom = f"{ranks_text(d['against'])} of its program " + (
            f"waiting for it at {at} (counted as if it had issued that one too)"
            if waited
            else f"blocked with it at {at}"
        )
    held = " and ".join(
        x for x in (fewer and f"one {fewer} collective fewer", more and f"one {more} collective more") if x
    )
    how = {
        "skip": "skipped one",
        "extra": "added one",
        "substitute": f"issued a {more} collective in place of a {fewer} one",
    }
    waiting = [r for r in f.waiters if r != f.rank]
    verb = "waits" if len(waiting) == 1 else "wait"
    call = f"seq {f.seq} ({f.op or 'collective'}) of {where}"
    more_of = ", ".join(f"{n} {family.split('#')[0] or 'default'}" for family, n in d.get("went_on", ()))
    if more_of and place is not None and not place[2]:  # it holds the call: its next one at that seq
        wait = f"; {ranks_text(waiting)} {verb} for it at {call}." if waiting else "."
        return (
            f"Rank {f.rank} issued seq {place[1]} of its {fewer} group having issued more of every other family "
            f"than {ranks_text(d['against'])} of its program had when they issued theirs ({more_of} collectives "
            f"more): its call at that seq is the group's next one, so it skipped one {fewer} collective before "
            f"it{wait}"
        )
    if more_of:
        return (
            f"Rank {f.rank} went past {call} without issuing it: {ranks_text(d['against'])} of its program wait "
            f"for it there, and it had since issued more of every other family than they had when they issued "
            f"it ({more_of} collectives more): it skipped that one and went on."
        )
    if d["edit"] == "skip":
        tail = f"; {ranks_text(waiting)} {verb} for it at {call}." if waiting else f" before {call}."
    else:
        tail = f"; it waits in {call}" + (f", and {ranks_text(waiting)} {verb} for it." if waiting else ".")
    return f"Rank {f.rank} had issued {held} than {whom}: it {how[d['edit']]}{tail}"


SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.EXTRA: _extra,
    Kind.WENT_PAST: _went_past,
    Kind.RECORD_EDIT: _record_edit,
    Kind.COUNT_EDIT: _count_edit,
}
