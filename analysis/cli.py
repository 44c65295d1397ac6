"""``python -m analysis PATH``: the verdict on a folder of Flight Recorder dumps.

Exit codes: 0 healthy, 1 a hang or mismatch was found, 2 nothing could be analyzed.
NVIDIA's CollectiveAnalyzer flags (``--fr-path``, ``-p``, ``-v``, ``--debug``) work too.

The report's modules are imported where they are used: by then ``analyze`` has imported
them while the dumps were read (see ``api``), and importing them here first would make
the workers wait for pandas.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .api import analyze, analyze_proxy_ops
from .ingest.discover import discover
from .ingest.hosts import read_hostfile
from .ingest.read import read_raw
from .tables.mapstep import MapEngine
from .types import DumpReadError, HostMap, InputError, Verdict

if TYPE_CHECKING:
    from .report.report import Report

EXIT_HEALTHY, EXIT_FOUND, EXIT_NOTHING = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flightdeck",
        description="Find the root-cause ranks of a hung PyTorch job from its Flight Recorder dumps.",
        epilog="Servers for agents and bots: flightdeck mcp --root DIR (MCP), flightdeck serve --root DIR (HTTP JSON).",
    )
    _dump_arguments(p)
    _output_arguments(p)
    _loading_arguments(p)
    _file_arguments(p)
    _context_arguments(p)
    return p


def _dump_arguments(p: argparse.ArgumentParser) -> None:
    """Where the dumps are: PATH or NVIDIA's --fr-path, and which files of a folder."""
    p.add_argument("path", nargs="?", help="folder, file, glob pattern or path prefix of the dumps")
    p.add_argument("--fr-path", dest="fr_path", help="same as PATH (NVIDIA CollectiveAnalyzer flag)")
    p.add_argument("-p", "--pattern", help="glob for dump file names inside a folder (default: all known prefixes)")


def _output_arguments(p: argparse.ArgumentParser) -> None:
    """What is printed: text or JSON, how much, and the Parquet tables."""
    p.add_argument("--json", action="store_true", help="print one JSON object (schema flightdeck.report/1)")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="add the per-group frontier table (and health check outputs)"
    )
    p.add_argument(
        "-c",
        "--health-check",
        action="store_true",
        help="print the node health checks per rank (NVIDIA CollectiveAnalyzer flag)",
    )
    p.add_argument("--parquet", metavar="DIR", help="write the report and its tables as Parquet files to DIR")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _loading_arguments(p: argparse.ArgumentParser) -> None:
    """How the dumps are loaded: local processes or a Dask cluster, the cache, JSON copies."""
    p.add_argument("--workers", type=int, default=None, help="processes for loading (default: one per core)")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="read the dumps on a Dask cluster: a scheduler's address (tcp://host:8786) or local[:N] "
        "(N worker processes on this machine; default one per core). Needs requirements-dask.txt",
    )
    p.add_argument(
        "--dask-scratch",
        metavar="DIR",
        help="with --dask: a folder every worker and this machine see at the same path (NFS); "
        "for large sets the workers store their tables there instead of sending them through Dask",
    )
    p.add_argument(
        "--dask-scratch-above",
        metavar="MB",
        type=float,
        default=None,
        help="with --dask-scratch: sets of more than this many MB of dumps go through it (default 256; 0: every set)",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the Parquet cache of the tables")
    p.add_argument("--debug", action="store_true", help="also write a .json copy of every pickle dump next to it")


def _file_arguments(p: argparse.ArgumentParser) -> None:
    """The report written as files: an HTML page, a Markdown postmortem, its figures."""
    p.add_argument("--html", metavar="FILE", help="write the report as one self-contained HTML page (opens offline)")
    p.add_argument(
        "--markdown",
        metavar="FILE",
        help="write a Markdown postmortem to FILE, its figures (PNG and SVG) in FILE's stem + '_figures/' beside it",
    )
    p.add_argument("--png", metavar="DIR", help="write the report's figures alone (PNG and SVG) to DIR")


def _context_arguments(p: argparse.ArgumentParser) -> None:
    """What else is read beside the dumps: earlier dumps, live snapshots, hosts, NCCL proxy ops."""
    p.add_argument("--compare", metavar="EARLIER", help="earlier dumps of the same job: who moved in between")
    p.add_argument(
        "--watch",
        metavar="DIR",
        help="watch a running job's snapshots in DIR (same as 'flightdeck watch DIR'; see 'flightdeck watch --help')",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--ranks-per-node", type=int, metavar="N", help="ranks r // N share a host (node N)")
    where.add_argument("--hostfile", metavar="FILE", help="CSV of 'rank,host' lines: where each rank ran")
    p.add_argument(
        "--proxy-ops",
        metavar="PATH",
        help="NCCL proxy-op waits (file or folder): probing's proxy_ops/inflight_ops exports "
        "(CSV, JSON, JSON lines, Parquet) or NCCL's profiler plugin traces; also without dumps",
    )


def write_json_copies(path: str, pattern: str | None) -> list[str]:
    """``--debug``: a readable JSON twin of each pickle, for eyeballing and other tools."""
    import orjson  # imported where used: only ``--debug`` writes JSON this way

    problems = []
    files, _ = discover(path, pattern)
    for f in files:
        if f.path.endswith(".json"):
            continue
        try:
            raw, fmt = read_raw(f.path)
            if fmt != "pickle":
                continue
            Path(f.path + ".json").write_bytes(orjson.dumps(raw, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2))
        except (DumpReadError, OSError, TypeError) as exc:
            problems.append(f"{f.path}: no JSON copy ({exc})")
    return problems


def host_map(args: argparse.Namespace) -> HostMap | None:
    """Where ranks ran, from ``--hostfile`` or ``--ranks-per-node`` (None: from the file names)."""
    if args.hostfile:
        return read_hostfile(args.hostfile)
    if args.ranks_per_node is not None:
        return HostMap(source=f"{args.ranks_per_node} ranks per node", ranks_per_node=args.ranks_per_node)
    return None


def map_engine(args: argparse.Namespace) -> MapEngine | None:
    """``--dask ADDRESS``: the map step on that Dask cluster (None: this machine's processes)."""
    if args.dask is None:
        if args.dask_scratch is not None:
            raise InputError("--dask-scratch needs --dask")
        return None
    if args.dask_scratch_above is not None and (args.dask_scratch is None or args.dask_scratch_above < 0):
        raise InputError("--dask-scratch-above needs --dask-scratch and a number of MB, 0 or more")
    from .tables.dask_engine import SCRATCH_THRESHOLD_BYTES, DaskEngine  # Dask is imported only when asked for

    above = SCRATCH_THRESHOLD_BYTES if args.dask_scratch_above is None else int(args.dask_scratch_above * (1 << 20))
    return DaskEngine(args.dask, scratch=args.dask_scratch, scratch_threshold_bytes=above)


SERVERS = ("mcp", "serve")
"""``flightdeck mcp --root DIR``, ``flightdeck serve --root DIR``: see ``analysis.service``
(a dump folder of either name is given as ``./mcp``)."""


def watch_argv(argv: Sequence[str]) -> list[str] | None:
    """``watch DIR ...`` or ``--watch DIR`` (``--watch=DIR``): the watch command's arguments, else None."""
    argv = list(argv)
    if len(argv) >= 2 and argv[0] == "watch":
        return argv[1:]
    for i, arg in enumerate(argv):
        if arg == "--watch":
            return argv[:i] + argv[i + 1 :]
        if arg.startswith("--watch="):
            return [*argv[:i], arg.split("=", 1)[1], *argv[i + 1 :]]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SERVERS:
        from .service.main import main as serve_main

        return serve_main(argv)
    watching = watch_argv(argv)
    if watching is not None:
        from .live.command import main as watch_main  # the live package only when watching

        return watch_main(watching)
    args = build_parser().parse_args(argv)
    path = args.path or args.fr_path
    if not path and args.proxy_ops:
        return _proxy_only(args)
    if not path:
        print("error: give the dumps' PATH (or --fr-path), or --proxy-ops PATH", file=sys.stderr)
        return EXIT_NOTHING
    try:
        engine = map_engine(args)
        report = analyze(
            path,
            pattern=args.pattern,
            workers=args.workers,
            progress=not args.quiet and not args.json,
            use_cache=not args.no_cache,
            hosts=host_map(args),
            earlier=args.compare,
            proxy_ops=args.proxy_ops,
            engine=engine,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOTHING
    if args.debug:
        for problem in write_json_copies(path, args.pattern):
            print(problem, file=sys.stderr)
    write_files(report, args)
    show(report, args, path)
    if report.ranks_loaded == 0:
        return EXIT_NOTHING
    return EXIT_HEALTHY if report.verdict == Verdict.HEALTHY else EXIT_FOUND


def show(report: Report, args: argparse.Namespace, path: str) -> None:
    """The report on stdout: one JSON object, or the text (with the tables asked for)."""
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
        return
    if report.ranks_loaded == 0:
        print(f"No Flight Recorder dump could be read under {path}.", file=sys.stderr)
        for e in report.file_errors[:50]:
            print(f"  - {e.file}: {e.error}", file=sys.stderr)
        return
    from .report.health_text import render_health
    from .report.proxy_text import edges_table
    from .report.text import render_text

    print(render_text(report, verbose=args.verbose))
    if args.verbose and report.proxy_waits is not None:
        print("\n".join(edges_table(report)))
    if args.health_check:
        print("\n" + render_health(report.health, verbose=args.verbose))


def write_files(report: Report, args: argparse.Namespace) -> None:
    """``--parquet DIR``, ``--html FILE``, ``--markdown FILE`` and ``--png DIR``, when asked for
    and something was analyzed."""
    if not report.ranks_loaded:
        return
    if args.parquet:
        from .report.export import write_parquet

        write_parquet(report, args.parquet)
    if args.html:
        from .views.html import build_html  # plotly is imported only when a page is asked for

        Path(args.html).write_text(build_html(report, title=f"Flight Deck: {args.path or args.fr_path}"))
    if args.markdown:
        from .views.postmortem import write_markdown  # matplotlib only when a figure is asked for

        write_markdown(report, args.markdown, title=f"Flight Deck: {args.path or args.fr_path}")
    if args.png:
        from .views.static import write_figures

        write_figures(report, args.png)


def _proxy_only(args: argparse.Namespace) -> int:
    """``--proxy-ops`` without dumps: the verdict of the waits alone."""
    from .diagnosis.proxy_waits import NONE
    from .report.proxy_text import render_proxy_text

    report = analyze_proxy_ops(args.proxy_ops)
    pw = report.proxy_waits.waits
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    elif pw.rows.empty and report.proxy_waits.inflight.empty:
        print(f"No proxy-op rows could be read under {args.proxy_ops}.", file=sys.stderr)
        for e in report.file_errors[:50]:
            print(f"  - {e.file}: {e.error}", file=sys.stderr)
    else:
        print(render_proxy_text(report, verbose=args.verbose))
    if pw.rows.empty and report.proxy_waits.inflight.empty:
        return EXIT_NOTHING
    stuck = not report.proxy_waits.inflight.empty  # ops started and never finished
    return EXIT_HEALTHY if pw.finding == NONE and not stuck else EXIT_FOUND


if __name__ == "__main__":
    sys.exit(main())
