"""The sentences of ranks that stopped, wait or are missing: stuck or never-issued
collectives, absent dumps, unmatched send/recv, cycles and the ranks blocked behind them."""

from __future__ import annotations

from collections.abc import Callable

from ..diagnosis.findings import Finding, Kind
from .words import called_from, counted, ranks_text


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
        f"Rank {f.rank} never issued seq {f.seq} ({f.op or 'op'}{called_from(f.detail.get('call_site'))}) of "
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


SENTENCES: dict[Kind, Callable[[Finding, str], str]] = {
    Kind.STRAGGLER: _straggler,
    Kind.NOT_ISSUED: _not_issued,
    Kind.NO_RECORD: _no_record,
    Kind.LEFT_BEHIND: _left_behind,
    Kind.NO_DUMP: _no_dump,
    Kind.P2P_UNMATCHED: _p2p_unmatched,
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
}
