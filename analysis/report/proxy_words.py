"""The proxy-op waits in sentences: what they show, what probing's rules would say, whether
they agree with the dumps (the decisions are made in :mod:`analysis.diagnosis.proxy_waits` and
:mod:`analysis.diagnosis.proxy_agree`)."""

from __future__ import annotations

import pandas as pd

from ..diagnosis.proxy_agree import (
    AGREE,
    BOTH_QUIET,
    DISAGREE,
    HANG_WITHOUT_WAITS,
    NOT_COMPARABLE,
    SLOW_WITHOUT_HANG,
    WAITS_ONLY,
    Agreement,
)
from ..diagnosis.proxy_waits import Finding, ProxyWaits
from ..diagnosis.proxy_walk import LINK, RECEIVER, SLOW_GPU, UNRESOLVED
from .words import counted, ranks_text

PREFIX = "Proxy-op waits (NCCL):"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms"


def _where(f: Finding) -> str:
    n = len(f.comms)
    comm = f"communicator {f.comms[0]}" if n == 1 else f"{n} communicators"
    return comm if f.is_global else f"{comm}, ranks local to it"


def finding_sentence(f: Finding) -> str:
    victims = f"{ranks_text(list(f.victims), 12)} waited on it, directly or through others"
    extra = f" ({_ms(f.wait_ns)} of waiting beyond the baseline, {_where(f)})"
    if f.kind == SLOW_GPU:
        guess = " (a cycle of waits: the rank whose wait is least explained, not certain)" if f.ambiguous else ""
        return (
            f"{PREFIX} rank {f.ranks[0]}'s GPU is slow{guess}: its sends waited on it while its own receives did "
            f"not; {victims}{extra}."
        )
    if f.kind == LINK:
        s, r = f.ranks
        return (
            f"{PREFIX} the link from rank {s} to rank {r} (or a NIC on it) is slow: rank {r} waited for data rank "
            f"{s} was ready to send and cleared to send; {ranks_text(list(f.victims), 12)} waited{extra}."
        )
    if f.kind == RECEIVER and f.link_fits_too:
        (s,) = f.credit_senders
        return (
            f"{PREFIX} rank {s} waited for rank {f.ranks[0]}'s clear-to-send credits, and no other sender did: "
            f"rank {f.ranks[0]}'s receive side is congested, or the link between ranks {s} and {f.ranks[0]} "
            f"(or a NIC on it) is slow; both fit; {victims}{extra}."
        )
    if f.kind == RECEIVER:
        waited = f" ({ranks_text(list(f.credit_senders), 12)})" if f.credit_senders else ""
        return (
            f"{PREFIX} rank {f.ranks[0]}'s receive side is congested: its senders{waited} waited for its "
            f"clear-to-send credits; {victims}{extra}."
        )
    return (
        f"{PREFIX} {ranks_text(list(f.victims), 12)} waited on rank {f.ranks[0]}, which reported no send to "
        f"{'it' if len(f.victims) == 1 else 'them'}: those waits are blamed on no one{extra}."
    )


def reversed_peers(pw: ProxyWaits) -> list[tuple[str, int, int]]:
    """Receive edges (comm, receiver, named sender) whose named sender sent nothing to the
    receiver, while the receiver sends to it: receive rows whose peer looks reversed."""
    e = pw.edges
    if e.empty:
        return []
    sends = {(c, s, r) for c, s, r, n in e[["comm", "sender", "receiver", "sender_ops"]].itertuples(index=False) if n}
    out = []
    for c, s, r, n_s, n_r in e[["comm", "sender", "receiver", "sender_ops", "receiver_ops"]].itertuples(index=False):
        if n_r and not n_s and (c, r, s) in sends:
            out.append((c, int(r), int(s)))
    return out


def probing_sentence(pw: ProxyWaits) -> str | None:
    p = pw.probing
    root = p.get("root_rank")
    if root is None:
        return None
    top = (p.get("topology_attribution") or [None])[0]
    cls = f"; its top edge (rank {top['rank']} <- {top['peer']}) is '{top['attribution_class']}'" if top else ""
    return (
        f"probing's nccl_culprit_victim rules, on the same rows, name rank {root} as the root (root-culprit "
        f"summary, communicator-local ranks of every communicator summed together){cls}."
    )


def agreement_sentence(a: Agreement, pw: ProxyWaits) -> str:
    named = ranks_text(sorted({*a.common, *a.waits_only}), 12)
    if a.kind == AGREE:
        more = f"; the dumps also name {ranks_text(list(a.fr_only), 12)}" if a.fr_only else ""
        return f"The proxy-op waits and the dumps agree: both blame {ranks_text(list(a.common), 12)}{more}."
    if a.kind == DISAGREE:
        return (
            f"The proxy-op waits and the dumps disagree: the waits blame {ranks_text(list(a.waits_only), 12)}, "
            f"the dumps {ranks_text(list(a.fr_only), 12)} (the waits cover finished ops: a rank slow before the "
            "hang need not be the one that hung)."
        )
    if a.kind == HANG_WITHOUT_WAITS:
        return (
            "The dumps show a hang but the proxy-op waits show no rank or link slower than the rest: proxy ops are "
            "recorded when they finish, so a hung op appears only in nccl.inflight_ops."
        )
    if a.kind == SLOW_WITHOUT_HANG:
        return f"The proxy-op waits blame {named}, but the dumps show no hang or mismatch: a slowdown, not a hang."
    if a.kind == WAITS_ONLY:
        return f"The dumps single out no rank; the proxy-op waits blame {named}."
    if a.kind == BOTH_QUIET:
        return "The proxy-op waits agree with the dumps: no rank or link stands out."
    if a.kind == NOT_COMPARABLE:
        return (
            "The proxy-op waits' ranks are local to their communicators (no _rank column, and the dumps' pg_config "
            "does not single out the process group): they cannot be compared with the dumps' global ranks."
        )
    return ""


def inflight_sentence(inflight: pd.DataFrame) -> str | None:
    if inflight is None or inflight.empty:
        return None
    oldest = inflight.iloc[0]
    ranks = sorted(set(inflight["g_rank"].astype(int)))
    return (
        f"nccl.inflight_ops: {ranks_text(ranks, 12)} have ops in flight, the oldest {oldest['age_ns'] / 1e9:,.1f} s "
        f"({oldest['coll_func']} seq {int(oldest['seq'])} of communicator {oldest['comm_hash']})."
    )


def proxy_sentences(pw: ProxyWaits, inflight: pd.DataFrame, agreement: Agreement | None) -> list[str]:
    """The evidence the proxy-op waits add to the report."""
    out = [finding_sentence(f) for f in pw.findings if f.kind != UNRESOLVED]
    if not out:
        n = len(pw.comms)
        out.append(f"{PREFIX} no rank or link waits beyond the noise floor ({len(pw.rows)} rows, {n} communicators).")
    out += [finding_sentence(f) for f in pw.findings if f.kind == UNRESOLVED]
    flipped = reversed_peers(pw)
    if flipped:
        c, r, s = flipped[0]
        out.append(
            f"{counted(len(flipped), 'receive edge')} {'names' if len(flipped) == 1 else 'name'} a sender that sent nothing to the receiver, which itself sends to "
            f"that rank (e.g. rank {r} receiving from {s} in communicator {c}): their peers look reversed. They are "
            "matched to no send and blamed on no one; probing's rules take each such receive as the receiver's own "
            "wait."
        )
    if not pw.ranks_are_global and pw.comms:
        local = [c for c in pw.comms.values() if not c.is_global]
        why = next((c.note for c in local if c.note), None)
        out.append(
            f"Ranks of {len(local)} of {len(pw.comms)} communicators stay local to them"
            + (f" ({why})" if why else " (no _rank column and no dumps to map them)")
            + "."
        )
    sentence = probing_sentence(pw)
    if sentence:
        out.append(sentence)
    line = inflight_sentence(inflight)
    if line:
        out.append(line)
    if agreement is not None:
        out.append(agreement_sentence(agreement, pw))
    return out
