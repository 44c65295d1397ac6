"""``flightdeck watch DIR`` (and ``python -m analysis --watch DIR``): its options and exit codes.

Exit codes: 1 the job hung (with ``--until-hang``), 0 stopped after ``--max-snapshots``,
130 Ctrl-C, 2 a bad option.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..types import HostMap
from .watch import WatchOptions, watch

EXIT_BAD_OPTION = 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="flightdeck watch",
        description="Watch a running job's Flight Recorder snapshots as they arrive (one subfolder per "
        "snapshot, or dump files rewritten in place) and say, snapshot by snapshot, whether it progresses, "
        "is slow, has a straggler or hangs, and who.",
    )
    p.add_argument("dir", metavar="DIR", help="the folder the snapshots are written to")
    p.add_argument("--until-hang", action="store_true", help="stop at the first hung snapshot (exit 1)")
    p.add_argument("--json-lines", action="store_true", help="one JSON object per snapshot (flightdeck.watch/1)")
    p.add_argument(
        "--on-hang",
        metavar="CMD",
        help="run CMD (a shell command) at the first hang with the full report's path ({report} in CMD, "
        "else the last argument; also $FLIGHTDECK_REPORT)",
    )
    p.add_argument("--world", type=int, metavar="N", help="ranks 0..N-1 are expected (default: the highest seen)")
    p.add_argument(
        "--settle", type=float, default=1.0, metavar="S", help="a file is complete once unchanged for S seconds (1)"
    )
    p.add_argument(
        "--wait-missing",
        type=float,
        default=10.0,
        metavar="S",
        help="take a snapshot without the ranks still missing after S seconds without change, naming them (10)",
    )
    p.add_argument("--poll", type=float, default=0.25, metavar="S", help="look for new files every S seconds")
    p.add_argument("-p", "--pattern", help="glob for dump file names (default: all known prefixes)")
    p.add_argument("--report-dir", metavar="DIR", help="where the full report goes (default: the watched DIR)")
    p.add_argument("--all", action="store_true", help="also analyse the snapshots already there (default: newest)")
    p.add_argument("--max-snapshots", type=int, metavar="N", help="stop after N snapshots (exit 0)")
    p.add_argument("--workers", type=int, default=None, help="processes for reading (default: one per core)")
    p.add_argument("--cache", action="store_true", help="keep each snapshot's tables in the Parquet cache")
    p.add_argument("--ranks-per-node", type=int, metavar="N", help="ranks r // N share a host (node N)")
    return p


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    if (
        args.settle < 0
        or args.wait_missing < args.settle
        or args.poll <= 0
        or (args.world is not None and args.world < 1)
    ):
        print(
            "error: --settle must be 0 or more, --wait-missing at least --settle, --poll and --world more than 0",
            file=sys.stderr,
        )
        return EXIT_BAD_OPTION
    hosts = None
    if args.ranks_per_node is not None:
        hosts = HostMap(source=f"{args.ranks_per_node} ranks per node", ranks_per_node=args.ranks_per_node)
    opts = WatchOptions(
        world=args.world,
        settle=args.settle,
        wait_missing=args.wait_missing,
        poll=args.poll,
        pattern=args.pattern,
        until_hang=args.until_hang,
        json_lines=args.json_lines,
        on_hang=args.on_hang,
        report_dir=args.report_dir,
        workers=args.workers,
        use_cache=args.cache,
        hosts=hosts,
        all_existing=args.all,
        max_snapshots=args.max_snapshots,
    )
    return watch(args.dir, opts)
