"""Times as people read them: UTC wall time, and how long before the dump, beside raw ns.

Flight Recorder writes no dump time, so "before the dump" counts back from the newest
entry in the dumps (the job's last recorded collective).
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc(ns: int | None) -> str:
    """``2026-12-03 19:51:02.123 UTC`` (millisecond precision); '' when unknown."""
    if ns is None or ns <= 0:
        return ""
    when = datetime.fromtimestamp(ns / 1e9, tz=UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d} UTC"


def seconds(ns: float) -> str:
    """A duration in ns as seconds with sensible precision: ``0.004 s``, ``2.5 s``, ``95 s``."""
    sec = ns / 1e9
    if abs(sec) < 1:
        return f"{sec:.3f} s"
    return f"{sec:.1f} s" if abs(sec) < 60 else f"{sec:.0f} s"


def before(ns: int | None, dump_ns: int | None) -> str:
    """``12.3 s before the dump`` (or ``at the dump``); '' when either time is unknown."""
    if ns is None or dump_ns is None or ns <= 0:
        return ""
    gap = dump_ns - ns
    if gap == 0:
        return "at the dump"
    return f"{seconds(abs(gap))} {'before' if gap > 0 else 'after'} the dump"


def readable(ns: int | None, dump_ns: int | None) -> str:
    """``1796328543535923167 ns · 2026-12-03 19:51:02.123 UTC · 12.3 s before the dump``."""
    if ns is None or ns <= 0:
        return "" if ns is None else str(ns)
    parts = [f"{ns} ns", utc(ns), before(ns, dump_ns)]
    return " · ".join(p for p in parts if p)
