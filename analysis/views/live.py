"""A watched job over its snapshots: the collectives each rank class completed, snapshot by snapshot.

Pure functions of analyses and plain data, shared by the dashboard's live mode and its tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..diagnosis.analysis import Analysis
from .tables import compact_ranks

PROGRESS_COLUMNS = ["snapshot", "class", "completed"]


def completed_per_rank(a: Analysis) -> dict[int, int]:
    """Collectives each rank completed, summed over its groups (a group's newest completed seq + 1)."""
    out: dict[int, int] = {}
    for (_key, rank), p in a.progress.items():
        if p.completed is not None:
            out[int(rank)] = out.get(int(rank), 0) + max(0, int(p.completed) + 1)
    return out


def class_label(c: Mapping[str, Any]) -> str:
    """A rank class in a few characters: ``class 2 · ranks 0-3, 6`` (a star for a suspect class)."""
    star = " *" if c.get("suspect") else ""
    return f"class {c['id']}{star} · ranks {compact_ranks(list(c['ranks']), limit=6)}"


def class_progress(
    history: Sequence[tuple[str, Mapping[int, int]]], classes: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """Per snapshot (name, completed per rank) and per class of ``classes`` (the newest
    snapshot's ``rank_classes``): the fewest collectives any of its ranks had completed.
    A snapshot with none of a class's ranks read adds no row for it."""
    rows = []
    for name, completed in history:
        for c in classes:
            counts = [completed[r] for r in c["ranks"] if r in completed]
            if counts:
                rows.append((name, class_label(c), min(counts)))
    return pd.DataFrame(rows, columns=PROGRESS_COLUMNS)
