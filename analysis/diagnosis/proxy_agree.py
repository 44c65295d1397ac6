"""Do the proxy-op waits and the Flight Recorder dumps tell the same story? (a decision;
:mod:`analysis.report.proxy_words` says it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..types import Verdict
from .proxy_waits import NONE, ProxyWaits
from .proxy_walk import LINK

AGREE = "agree"
"""The same rank (or a link end) is a suspect in both."""
DISAGREE = "disagree"
"""Both name someone, and nobody in common."""
HANG_WITHOUT_WAITS = "hang_without_waits"
"""The dumps show a hang; the finished proxy ops show nobody slow (a hung op never finishes)."""
SLOW_WITHOUT_HANG = "slow_without_hang"
"""The waits name a slow rank or link; the dumps show no hang or mismatch (a slowdown)."""
BOTH_QUIET = "both_quiet"
WAITS_ONLY = "waits_only"
"""The dumps name no rank (the job hangs with no rank isolated); the waits name one."""
NOT_COMPARABLE = "not_comparable"
"""The waits' ranks are communicator-local: they cannot be set beside global ranks."""


@dataclass(frozen=True, slots=True)
class Agreement:
    kind: str
    common: tuple[int, ...] = ()
    fr_only: tuple[int, ...] = ()
    waits_only: tuple[int, ...] = ()


def waits_suspects(pw: ProxyWaits) -> set[int]:
    """Every rank the waits blame: culprits and both ends of a suspect link."""
    return set(pw.culprit_ranks) | {r for link in pw.suspect_links for r in link}


def compare(verdict: Verdict, suspects: Sequence[int], pw: ProxyWaits) -> Agreement:
    """The dumps' verdict and suspects beside the waits' findings."""
    fr = set(suspects)
    named = [f for f in pw.findings if f.kind != "unresolved" and not f.ambiguous]
    if named and not all(f.is_global for f in named):
        return Agreement(NOT_COMPARABLE)
    ours = waits_suspects(pw)
    quiet = pw.finding == NONE
    if verdict == Verdict.HEALTHY:
        return Agreement(BOTH_QUIET) if quiet else Agreement(SLOW_WITHOUT_HANG, waits_only=tuple(sorted(ours)))
    if quiet:
        return Agreement(HANG_WITHOUT_WAITS, fr_only=tuple(sorted(fr)))
    if not fr:
        return Agreement(WAITS_ONLY, waits_only=tuple(sorted(ours)))
    common = fr & ours
    kind = AGREE if common else DISAGREE
    return Agreement(kind, tuple(sorted(common)), tuple(sorted(fr - ours)), tuple(sorted(ours - fr)))


def link_ends(pw: ProxyWaits) -> set[int]:
    return {r for f in pw.findings if f.kind == LINK for r in f.ranks}


def inflight_summary(pw: ProxyWaits, limit: int = 50) -> pd.DataFrame:
    """The oldest in-flight ops, in global ranks where the communicator maps."""
    inf = pw.inflight
    if inf is None or inf.empty:
        return pd.DataFrame()
    inf = inf.assign(comm_hash=inf["comm_hash"].astype(str))
    ranks = []
    for comm, rank, grank in inf[["comm_hash", "rank", "_rank"]].itertuples(index=False):
        cm = pw.comms.get(comm)
        ranks.append(int(grank) if grank >= 0 else (cm.rank(int(rank)) if cm is not None else int(rank)))
    inf = inf.assign(g_rank=ranks)
    return inf.sort_values("age_ns", ascending=False, kind="stable").head(limit)
