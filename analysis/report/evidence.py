"""The findings of a diagnosis in words: one sentence per finding, written here only."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace

from .. import schema as s
from ..diagnosis.findings import Finding, Kind
from ..diagnosis.level_counts import ISSUED
from ..model.groups import GroupIndex
from ..model.health import DEVICE_WORDS
from ..types import FailureClass, FileError
from .words import counted, group_label, ranks_text

_ATTRIBUTE_WORDS = {
    s.OP: "ops",
    s.INPUT_SIZES: "input sizes",
    s.INPUT_DTYPES: "dtypes",
    s.CALL_SITE: "call sites",
    ISSUED: "numbers of the group's collectives issued",
}


def _called_from(site: str | None) -> str:
    return f", called from {site}" if site else ""


def _differ(f: Finding, where: str) -> str:
    d = f.detail
    found = "; ".join(f"rank {r}: {v}" for r, v in list(d["found"].items())[:8])
    return f"At seq {f.seq} of {where} the {_ATTRIBUTE_WORDS[d['attribute']]} differ: {found}"


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
        parts.append(f"{_ATTRIBUTE_WORDS[attribute]} ({theirs}; the others: {d['others']})")
    return f" The {', '.join(parts)} differ too." if parts else ""


def _undecided(f: Finding, where: str) -> str:
    return f"{_differ(f, where)}, and no majority or sibling group decides which is right.{_also_differ(f)}"


def _skipped(f: Finding, where: str) -> str:
    desc, seq = f.detail["went_to"]
    return (
        f"Rank {f.rank} skipped seq {f.seq} ({f.op or 'collective'}) of {where}: it went on to seq {seq} of a "
        f"{desc or 'default'} group, which the other ranks issue only after it; {ranks_text(f.waiters)} wait for "
        "the skipped one."
    )


def _extra(f: Finding, where: str) -> str:
    return (
        f"Rank {f.rank} issued an extra collective: seq {f.seq} ({f.op or 'collective'}"
        f"{_called_from(f.detail.get('call_site'))}) of {where}, which no other rank issues; its peers moved on "
        "to later collectives."
    )


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


def _went_ahead(f: Finding, where: str) -> str:
    d = f.detail
    return (
        f"Rank {f.rank} went ahead of its program: it issued {counted(d['more'], 'more collective')} of group "
        f"{d['ahead_in']} than the other ranks of its program at that point issued in theirs, and {ranks_text(f.waiters)} wait for it "
        f"at seq {f.seq} ({f.op or 'collective'}) of {where}, which it reaches only behind what it waits in "
        "(a skipped collective)."
    )


def _out_of_place(f: Finding, where: str) -> str:
    desc, seq = f.detail["after"]
    return (
        f"Rank {f.rank} issued seq {f.seq} ({f.op or 'collective'}) of {where} after seq {seq} of a "
        f"{desc.split('#')[0] or 'default'} group, which the other ranks of its program issue only after it: "
        f"that seq of its group stands where they issued another, so rank {f.rank} skipped or added one of "
        "the group's collectives before it."
    )


def _departed(f: Finding, where: str) -> str:
    if f.detail.get("turns"):
        family = f.detail["expected_family"].split("#")[0]
        return (
            f"Rank {f.rank} issued seq {f.seq} ({f.op or 'collective'}) of {where} right after another of its "
            f"kind, where in each earlier step it issued these and {f.detail['expected_op']} of a {family} group "
            f"in turn, as its peers still do: rank {f.rank} added or skipped a collective there."
        )
    return (
        f"Rank {f.rank} issued seq {f.seq} ({f.op or 'collective'}) of {where} where, after the same collectives, "
        f"its earlier steps issued {f.detail['expected_op']} of a {f.detail['expected_family'].split('#')[0]} group, "
        f"and its peers did not leave their routine: rank {f.rank} "
        + (
            "never posted that send/recv and went on."
            if f.detail.get("skipped_p2p")
            else "added or skipped a collective there."
        )
    )


def _record_edit(f: Finding, where: str) -> str:
    d = f.detail
    mates = f"the ranks of its program ({ranks_text(d['against'])})"
    call = f"seq {f.seq} ({f.op or 'collective'}) of {where}"
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
    if d.get("went_on"):
        more_of = ", ".join(f"{n} {family.split('#')[0] or 'default'}" for family, n in d["went_on"])
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


def _straggler(f: Finding, where: str) -> str:
    return (
        f"Rank {f.rank} is stuck at seq {f.seq} ({f.op or 'collective'}) of {where}, which "
        f"{ranks_text(f.detail['completed_by'])} already completed: the collective is not progressing on rank "
        f"{f.rank} itself (its GPU, driver or network path)."
    )


def _not_issued(f: Finding, where: str) -> str:
    last = f.detail.get("last_seq")
    last_text = f"its last was seq {last}" if last is not None else "none in the window"
    verb = "waits" if len(f.waiters) == 1 else "wait"
    text = (
        f"Rank {f.rank} never issued seq {f.seq} ({f.op or 'op'}{_called_from(f.detail.get('call_site'))}) of "
        f"{where} ({last_text}); {ranks_text(f.waiters)} issued it and {verb}."
    )
    if f.detail.get("silent"):
        text += (
            f" Rank {f.rank} itself waits in no collective: it is stuck before issuing "
            "(CPU side: compute, data loading, a lock), or blocked in something the dumps do not record."
        )
    return text


def _left_behind(f: Finding, where: str) -> str:
    return (
        f"Rank {f.rank} waits in no collective, while {ranks_text(f.waiters)}, "
        + ("the other members of that group" if f.detail.get("every_member") else "the ranks it moves in step with")
        + f", went on to seq {f.seq} ({f.op or 'collective'}) of {where} and the like, which rank {f.rank} never "
        "issued: it stopped on its own (CPU side: compute, data loading, a lock)."
    )


def _no_record(f: Finding, where: str) -> str:
    return f"Rank {f.rank} has no record of {where} while {ranks_text(f.waiters)} wait at seq {f.seq} ({f.op or 'op'})."


def _no_dump(f: Finding, where: str) -> str:
    unreadable = f.detail.get("unreadable_file")
    who = (
        f"Rank {f.rank}'s dump {unreadable} could not be read"
        if unreadable
        else (f"Rank {f.rank} wrote no dump (process died or the file is lost)")
    )
    return f"{who}; {ranks_text(f.waiters)} wait for it at seq {f.seq} ({f.op or 'op'}) of {where}."


def _p2p_unmatched(f: Finding, where: str) -> str:
    other = "recv" if f.op == "send" else "send"
    return (
        f"Rank {f.rank} never posted the {other} matching {ranks_text(f.waiters)}'s pending {f.op} "
        f"in {where} (p2p seq {f.seq})"
        + (
            ", and waits in nothing itself: it stopped before posting it (CPU side: compute, data loading, a lock)."
            if f.detail.get("stopped")
            else "."
        )
    )


def _sizes_do_not_add_up(f: Finding, where: str) -> str:
    d = f.detail
    return (
        f"At seq {f.seq} of {where} the {f.op or 'all_to_all'} does not add up: over the group the ranks send "
        f"{d['sent']} elements and expect to receive {d['received']}, so some rank's split sizes disagree with its "
        "peers'. Flight Recorder records each rank's totals, not its splits: the sizes cannot tell which rank."
    )


def _stalled(f: Finding, where: str) -> str:
    return (
        f"Every member of {where} issued seq {f.seq} ({f.op or 'collective'}) and none completed it: "
        "the collective is stuck in flight (GPU, NCCL or network), with no rank behind on the CPU side."
    )


def _absent(f: Finding, where: str) -> str:
    unreadable = f.detail.get("unreadable_file")
    if unreadable:
        return f"Rank {f.rank} is a member of the job's groups, but its dump {unreadable} could not be read."
    return f"Rank {f.rank} is a member of the job's groups but wrote no dump."


def _cycle(f: Finding, where: str) -> str:
    return (
        f"{ranks_text(f.ranks).capitalize()} wait on each other in a cycle, and program order does not "
        "say which of them diverged first."
    )


def _consequence(f: Finding, where: str) -> str:
    by = (f.detail or {}).get("waited_on_by")
    if by:
        return (
            f"Rank {f.rank} is waited on only by {ranks_text(by)}, one collective off the rest (a skipped or added"
            f" one): it has not got where {'that rank' if len(by) == 1 else 'they'} went; a consequence, not a cause."
        )
    return f"Rank {f.rank} stopped issuing only after the mismatch began; it is taken as a consequence, not a cause."


def _pipeline_blocked(f: Finding, where: str) -> str:
    return (
        "These dumps record no send/recv (gloo), so point-to-point waits are invisible. "
        f"{ranks_text(f.ranks).capitalize()} completed everything they issued and stopped together with "
        "their whole group: most likely blocked in a send/recv with a stuck pipeline peer, not stuck themselves."
    )


def _behind_stuck(f: Finding, where: str) -> str:
    held_by = f.detail.get("held_by")
    if "named" in f.detail:
        stuck, peer = f.detail["named"], "itself a cause named here"
    elif held_by is not None:
        stuck, peer = f.detail["stuck"], f"which waits on rank {held_by}"
    else:
        stuck, peer = f.detail["stuck"], "which is stuck with ranks waiting on it"
    return (
        f"{ranks_text(f.ranks).capitalize()} waits in no recorded collective and is a pipeline peer of rank {stuck},"
        f" {peer}: most likely blocked in a send/recv with it (gloo records none); it may also be stuck on its own."
    )


def _behind_no_dump(f: Finding, where: str) -> str:
    dead, how = f.detail["dead"], f.detail.get("how", "chain")
    one = len(f.ranks) == 1
    who = f"{ranks_text(f.ranks).capitalize()} {'waits' if one else 'wait'} in no recorded collective"
    if how == "chain":
        why = (
            f"and stopped at the same point as the rest of {'its' if one else 'their'} pipeline chain, "
            f"whose rank {dead} wrote no dump: most likely blocked in a send/recv (gloo records none) behind rank {dead}"
        )
    elif how == "last":
        why = (
            f"and issued nothing after {'its' if one else 'their'} last collective with rank {dead}, which wrote "
            f"no dump: a collective with a member that died never returns or ends in an error"
        )
    else:
        why = (
            f"next to rank {dead}, which wrote no dump: most likely blocked in a send/recv (gloo records none) "
            f"with it or with a rank behind it"
        )
    return (
        f"{who} {why}; if rank {dead}'s file was only lost, {'it' if one else 'one of them'} may be stuck on its own."
    )


def _p2p_invisible(f: Finding, where: str) -> str:
    return (
        "These dumps record no send/recv (gloo): a rank that waits in no collective may also be blocked "
        "in a point-to-point op the dumps cannot show."
    )


def _waiting(f: Finding, where: str) -> str:
    verb = "is" if len(f.ranks) == 1 else "are"
    return f"{counted(len(f.ranks), 'rank')} {verb} blocked waiting, directly or through others: {ranks_text(f.ranks, 24)}."


QUOTE_CHARS = 120
"""How much of a failed health check's output a sentence quotes."""


def first_line(text: str | None, limit: int = QUOTE_CHARS) -> str:
    """The first non-empty line of a check's output, cut to ``limit`` characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def what_failed(rank: int, checks: Mapping[str, str | None]) -> str:
    """e.g. 'rank 3's GPU health check failed ("GPU 3: Requires a reset ...")'."""
    parts = []
    for device, output in checks.items():
        quote = first_line(output)
        parts.append(f"{DEVICE_WORDS[device]}" + (f' ("{quote}")' if quote else ""))
    return f"rank {rank}'s {' and '.join(parts)} health check{'s' if len(parts) > 1 else ''} failed"


def _health_failed(f: Finding, where: str) -> str:
    return f"{DEVICE_WORDS[f.detail['device']]} health check failed on {ranks_text(f.ranks, 16)}."


def _health_tie_broken(f: Finding, where: str) -> str:
    one = len(f.ranks) == 1
    causes = "; ".join(what_failed(r, f.detail["checks"][r]) for r in f.ranks)
    return (
        f"The dumps cannot single out a rank among {ranks_text(f.detail['tie'], 16)}; {causes}, so "
        f"{'it is' if one else 'they are'} taken as the suspect{'' if one else 's'} and "
        f"{ranks_text(f.detail['victims'], 16)} as victims (health checks break the tie; the dumps alone do not "
        "decide it)."
    )


def _health_tie_kept(f: Finding, where: str) -> str:
    if f.detail["failed"]:
        return (
            f"Every rank the dumps cannot tell apart ({ranks_text(f.ranks, 16)}) failed a health check: "
            "the checks do not break the tie."
        )
    return f"The health checks of {ranks_text(f.ranks, 16)} passed: they do not single out a rank either."


def _health_supports(f: Finding, where: str) -> str:
    return f"The health checks support this: {what_failed(f.rank, f.detail['checks'])}."


def _health_cleared(f: Finding, where: str) -> str:
    role = "it waits on other ranks" if f.detail["waits"] else "nothing in them blames it"
    text = what_failed(f.rank, f.detail["checks"])
    return f"{text[:1].upper()}{text[1:]}, but the dumps clear it ({role}): stated, not blamed; check that node separately."


def _health_unreadable(f: Finding, where: str) -> str:
    return f"The health checks of {ranks_text(f.ranks, 16)} could not be read (see their outputs)."


_SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.MISMATCH: _mismatch,
    Kind.UNDECIDED_MISMATCH: _undecided,
    Kind.SKIPPED: _skipped,
    Kind.EXTRA: _extra,
    Kind.DEPARTED: _departed,
    Kind.WENT_PAST: _went_past,
    Kind.WENT_AHEAD: _went_ahead,
    Kind.OUT_OF_PLACE: _out_of_place,
    Kind.STRAGGLER: _straggler,
    Kind.NOT_ISSUED: _not_issued,
    Kind.NO_RECORD: _no_record,
    Kind.LEFT_BEHIND: _left_behind,
    Kind.NO_DUMP: _no_dump,
    Kind.P2P_UNMATCHED: _p2p_unmatched,
    Kind.RECORD_EDIT: _record_edit,
    Kind.COUNT_EDIT: _count_edit,
    Kind.STALLED: _stalled,
    Kind.SIZES_DO_NOT_ADD_UP: _sizes_do_not_add_up,
    Kind.ABSENT: _absent,
    Kind.CYCLE: _cycle,
    Kind.CONSEQUENCE: _consequence,
    Kind.PIPELINE_BLOCKED: _pipeline_blocked,
    Kind.BEHIND_NO_DUMP: _behind_no_dump,
    Kind.BEHIND_STUCK: _behind_stuck,
    Kind.P2P_INVISIBLE: _p2p_invisible,
    Kind.WAITING: _waiting,
    Kind.HEALTH_FAILED: _health_failed,
    Kind.HEALTH_TIE_BROKEN: _health_tie_broken,
    Kind.HEALTH_TIE_KEPT: _health_tie_kept,
    Kind.HEALTH_SUPPORTS: _health_supports,
    Kind.HEALTH_CLEARED: _health_cleared,
    Kind.HEALTH_UNREADABLE: _health_unreadable,
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
        f"its {_ATTRIBUTE_WORDS[f.detail['attribute']]} at seq {f.seq} of {where} differ from its peers', and no "
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
