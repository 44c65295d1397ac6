"""The triage fields of a report: confidence and caveats, rank classes, hosts and the
drain list, and the comparison with an earlier snapshot."""

from __future__ import annotations

import dataclasses
import os

from .. import schema as s
from ..diagnosis.analysis import Analysis
from ..diagnosis.caveats import confidence
from ..diagnosis.judgment import Judgment
from ..diagnosis.unreadable import unreadable_files
from ..ingest.discover import rank_from_name
from ..ingest.hosts import hosts_from_names
from ..types import HostMap
from .classes import class_fields
from .compare import compare_fields
from .confidence import caveat_sentence
from .hosts import host_fields
from .report import Report


def add_triage(report: Report, a: Analysis, j: Judgment, host_map: HostMap | None = None) -> None:
    """Fill in the report's triage fields from the judgment of the analysis."""
    d = j.diagnosis
    report.confidence = confidence(j.caveats).value
    report.caveats = [caveat_sentence(c, a, d.wave) for c in j.caveats]
    report.classes = j.classes
    report.rank_classes = class_fields(a, j.classes, d.findings)
    set_hosts(report, host_map or names_host_map(a))
    if j.comparison is not None:
        report.comparison = j.comparison
        report.compare = compare_fields(j.comparison)


def names_host_map(a: Analysis) -> HostMap | None:
    """Hosts from the dump files' names, read or not."""
    files = a.dumps.files
    named = list(zip(files[s.RANK].astype(int), files[s.FILE].astype(str)))
    for e in a.dumps.file_errors:
        rank = rank_from_name(os.path.basename(e.file))
        if rank is not None:
            named.append((rank, e.file))
    return hosts_from_names(named)


def set_hosts(report: Report, host_map: HostMap | None) -> None:
    """The report's ``hosts`` and ``drain_hosts`` for ``host_map`` (none: both empty)."""
    a = report.analysis
    without = set(report.missing_dumps) | (set(unreadable_files(a)) if a is not None else set())
    ranks = set(a.dumps.ranks) if a is not None else set()
    wave = report.wavefront.pg_ranks if report.wavefront is not None else ()
    report.hosts, report.drain_hosts = host_fields(host_map, ranks, report.suspect_classes, without, wave)
    report.host_map = host_map


def with_hosts(report: Report, host_map: HostMap | None) -> Report:
    """A copy of ``report`` whose hosts come from ``host_map`` (the dashboard's node size)."""
    out = dataclasses.replace(report)
    set_hosts(out, host_map or (names_host_map(report.analysis) if report.analysis is not None else None))
    return out
