"""Everything decided about one analysis: the verdict, what the health checks change, the
caveats, the rank classes and the comparison with an earlier snapshot. A pure function of
the analysis; the report (``report/``) only puts it in fields and words."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..model.health import RankHealth, health_of
from ..types import FileError
from .analysis import Analysis
from .caveats import Caveat, find_caveats
from .compare import Comparison, compare_progress
from .health import apply_health, tie_of
from .rank_classes import RankClass, rank_classes
from .unreadable import unreadable_files
from .verdict import Diagnosis, diagnose


@dataclass(frozen=True, slots=True)
class Judgment:
    diagnosis: Diagnosis
    """The verdict, after the health checks' tie-break."""
    health: Mapping[int, RankHealth]
    tie_broken_by_health: bool
    unreadable: Mapping[int, FileError]
    """Ranks whose dump is there but could not be read."""
    caveats: list[Caveat]
    classes: list[RankClass]
    comparison: Comparison | None
    """Who moved since ``earlier`` (None without it)."""


def judge(a: Analysis, earlier: Analysis | None = None) -> Judgment:
    """The judgment of ``a`` (and of its progress since ``earlier``, an earlier snapshot of
    the same job; :class:`InputError` if it is not one)."""
    d = diagnose(a)
    health = health_of(a.dumps)
    d, by_health = apply_health(d, health, tie_of(a, d))
    comparison = None if earlier is None else compare_progress(a, earlier, set(d.suspect_classes))
    return Judgment(
        d, health, by_health.changed, unreadable_files(a), find_caveats(a, d), rank_classes(a, d), comparison
    )
