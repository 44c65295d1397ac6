"""torch's own analyser (fr_trace): how to call it and what its log names as culprits.

fr_trace loads every dump into memory and then matches collectives across
ranks, logging findings (not a machine-readable result) to stderr. A rank
counts as named when it appears in a "missing ranks: {...}" or
"Culprit rank N" line; anything else is reported as not named.
"""

from __future__ import annotations

import re
import sys

from benchmarks.synth import FILE_PREFIX

_MISSING = re.compile(r"missing ranks: \{([\d,\s]*)\}")
_CULPRIT = re.compile(r"Culprit rank (\d+)")


def command(
    dump_dir: str, python: str = sys.executable, prefix: str = FILE_PREFIX, allow_incomplete: bool = False
) -> list[str]:
    """fr_trace over a dump directory; -p gives the file-name prefix before the rank.

    ``allow_incomplete`` adds ``--allow-incomplete-ranks``, which fr_trace needs
    to analyse a set where some rank wrote no dump.
    """
    cmd = [
        python,
        "-m",
        "torch.distributed.flight_recorder.fr_trace",
        dump_dir,
        "-p",
        prefix,
    ]
    if allow_incomplete:
        cmd.append("--allow-incomplete-ranks")
    return cmd


def named_ranks(log: str) -> list[int]:
    """Ranks fr_trace's log points at, in first-seen order."""
    seen: dict[int, None] = {}
    for m in _MISSING.finditer(log):
        for part in m.group(1).split(","):
            if part.strip():
                seen.setdefault(int(part), None)
    for m in _CULPRIT.finditer(log):
        seen.setdefault(int(m.group(1)), None)
    return list(seen)


_ERROR_TYPE = re.compile(r"Culprit rank (\d+); Error type: (\w+)")
# fr_trace's mismatch types, in Flight Deck's failure classes.
ERROR_CLASSES = {
    "COLLECTIVE_TYPE_MISMATCH": "desync",
    "SIZE_OR_SYNTAX_MISMATCH": "size_mismatch",
    "COLLECTIVE_DTYPE_MISMATCH": "dtype_mismatch",
    "COLLECTIVE_STATE_MISMATCH": "stalled_in_flight",
}


def first_class(log: str) -> str:
    """The failure class of fr_trace's first finding: a mismatch type, a collective some ranks
    did not join (``missing_participant``), or ``healthy`` when it reports nothing."""
    found: list[tuple[int, str]] = []
    m = _MISSING.search(log)
    if m:
        found.append((m.start(), "missing_participant"))
    e = _ERROR_TYPE.search(log)
    if e:
        found.append((e.start(), ERROR_CLASSES.get(e.group(2), e.group(2).lower())))
    return min(found)[1] if found else "healthy"


def aborted(log: str) -> bool:
    """True when fr_trace gave up matching after too many mismatches."""
    return "Too many mismatches" in log


def predict_peak_rss(dump_bytes: int, seen: list[tuple[int, int]], default_ratio: float = 12.0) -> int:
    """Peak RSS expected for ``dump_bytes`` of dumps, from (dump bytes, peak RSS) runs at smaller sizes.

    With two or more runs, extrapolate the line through the two largest (it
    separates the fixed interpreter + torch import cost from the per-byte cost);
    with one, scale its RSS/bytes ratio; with none, assume ``default_ratio``.
    """
    points = sorted(seen)
    if len(points) >= 2:
        (b1, r1), (b2, r2) = points[-2], points[-1]
        if b2 > b1:
            slope = max((r2 - r1) / (b2 - b1), 0.0)
            return int(r2 + slope * (dump_bytes - b2))
    if points:
        b, r = points[-1]
        return int(dump_bytes * r / max(b, 1))
    return int(dump_bytes * default_ratio)
