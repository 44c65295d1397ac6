"""The one-call entry point: a path in, a Report out.

The analysis modules (and pandas under them) are imported by :func:`import_analysis`
while the dumps are read, on a thread (see ``tables.background``), not when this module
is: a command line starts its workers reading sooner.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .tables.combine import TablesBuilder
from .tables.load import FileFilter, load, to_dumpset
from .tables.mapstep import MapEngine
from .types import DumpSet, HostMap, InputError, Limits

if TYPE_CHECKING:
    from .diagnosis.analysis import Analysis
    from .report.report import Report


def import_analysis() -> None:
    """Import the modules that turn loaded dumps into a Report."""
    from .diagnosis import analysis, judgment  # noqa: F401
    from .report import build  # noqa: F401


def import_analysis_and_proxy() -> None:
    """:func:`import_analysis`, and what adds NCCL proxy-op waits to a Report."""
    import_analysis()
    from .ingest import proxy_ops  # noqa: F401
    from .report import proxy  # noqa: F401


def analyze(
    path: str | Path,
    pattern: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    limits: Limits | None = None,
    use_cache: bool = True,
    hosts: HostMap | None = None,
    earlier: str | Path | None = None,
    proxy_ops: str | Path | None = None,
    engine: MapEngine | None = None,
    file_filter: FileFilter | None = None,
) -> Report:
    """Load every dump under ``path`` and return the verdict with its tables.

    An unchanged dump set is reopened from a Parquet cache unless ``use_cache`` is False.
    ``hosts`` says which host each rank ran on (default: host names in the file names).
    ``earlier`` is a folder of earlier dumps of the same job: the report then says who
    moved in between (``Report.compare``); :class:`InputError` if it holds no dump.
    ``proxy_ops`` (a file or folder of NCCL proxy-op waits) adds ``report.proxy_waits``.
    ``engine`` runs the map step (default: this process or local workers; see ``load``).
    ``file_filter`` sees the files found (here and under ``earlier``) before any is opened
    and returns those to read plus an error for each other one (see ``load``).
    """
    before = None
    if earlier is not None:
        before = load_earlier(earlier, pattern, workers, limits, use_cache, engine, file_filter)
    dumps = load(
        path,
        pattern=pattern,
        workers=workers,
        progress=progress,
        limits=limits,
        use_cache=use_cache,
        engine=engine,
        file_filter=file_filter,
        meanwhile=import_analysis if proxy_ops is None else import_analysis_and_proxy,
    )
    report = analyze_dumps(dumps, hosts=hosts, earlier=before if dumps.ranks else None)
    if proxy_ops is None:
        return report
    from .ingest.proxy_ops import read_proxy_ops
    from .report.proxy import with_proxy_waits

    return with_proxy_waits(report, read_proxy_ops(proxy_ops))


def analyze_proxy_ops(path: str | Path) -> Report:
    """The proxy-op waits under ``path`` alone, as a Report with no dump loaded."""
    from .ingest.proxy_ops import read_proxy_ops
    from .report.proxy import with_proxy_waits

    return with_proxy_waits(analyze_dumps(to_dumpset(TablesBuilder().finish())), read_proxy_ops(path))


def analyze_dumps(dumps: DumpSet, hosts: HostMap | None = None, earlier: DumpSet | None = None) -> Report:
    """The pipeline on already-loaded dumps: tables -> model -> diagnosis -> judgment -> report
    (compared with ``earlier`` dumps of the job, if given)."""
    from .diagnosis.analysis import run_analysis

    return report_of(run_analysis(dumps), hosts, None if earlier is None else run_analysis(earlier))


def report_of(a: Analysis, hosts: HostMap | None = None, earlier: Analysis | None = None) -> Report:
    """The Report of an analysis: its judgment (against ``earlier``'s analysis, if given), in
    the fields and words a user reads."""
    from .diagnosis.judgment import judge
    from .report.build import build_report

    return build_report(a, judge(a, earlier), hosts)


def load_earlier(
    path: str | Path,
    pattern: str | None,
    workers: int | None,
    limits: Limits | None,
    use_cache: bool,
    engine: MapEngine | None = None,
    file_filter: FileFilter | None = None,
) -> DumpSet:
    """The earlier snapshot's dumps, or an InputError naming the folder and why it cannot be used."""
    if not os.path.exists(path):
        raise InputError(f"--compare {os.fspath(path)}: no such file or folder")
    dumps = load(
        path,
        pattern=pattern,
        workers=workers,
        limits=limits,
        use_cache=use_cache,
        engine=engine,
        file_filter=file_filter,
        meanwhile=import_analysis,
    )
    if not dumps.ranks:
        why = dumps.file_errors[0].error if dumps.file_errors else "no dump could be read"
        raise InputError(f"--compare {os.fspath(path)}: no Flight Recorder dump could be read ({why})")
    return dumps
