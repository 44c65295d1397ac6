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


def command(dump_dir: str, python: str = sys.executable) -> list[str]:
    """fr_trace over a dump directory; -p gives the file-name prefix before the rank."""
    return [
        python,
        "-m",
        "torch.distributed.flight_recorder.fr_trace",
        dump_dir,
        "-p",
        FILE_PREFIX,
    ]


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


def aborted(log: str) -> bool:
    """True when fr_trace gave up matching after too many mismatches."""
    return "Too many mismatches" in log


def predict_peak_rss(
    dump_bytes: int, ratios: list[float], default_ratio: float = 12.0
) -> int:
    """Peak RSS expected for a set of ``dump_bytes``, from RSS/bytes ratios seen at smaller sizes."""
    ratio = max(ratios) if ratios else default_ratio
    return int(dump_bytes * ratio)
