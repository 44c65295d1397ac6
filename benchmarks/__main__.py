"""Benchmark Flight Deck against the read+unpickle floor and torch's fr_trace.

    python -m benchmarks [--sizes 256,1024,4096] [--entries 2000] [--repeat 3]
                         [--dir /tmp/fd-bench] [--skip-frtrace-above 4096] [--plot DIR]

For each size: generate (or reuse) a synthetic hung-job dump set with a known
culprit, warm the page cache, then time fr_trace where it fits in memory and,
interleaved ``--repeat`` times, Flight Deck end to end on an empty cache, the floor
(read and unpickle every file in 2 processes, the garbage collector off as fr_trace
has it) and the old floor (the collector on); then Flight Deck again from its cache.
Medians are reported, with peak RSS over each command's whole process tree. Prints a
table, writes results.json/results.md under --dir and, with ``--plot DIR``, a picture.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis.ingest.process_limits import memory_available
from benchmarks import flightdeck, frtrace, report
from benchmarks.floor import dump_files
from benchmarks.measure import RunResult, run_measured
from benchmarks.synth import TRUTH_FILE, write_dump_set

GB = 1e9
REPEAT_SMALL = 3
"""Cold runs of Flight Deck, each followed by the floor and the old floor (the medians are
reported): a run of a second or two on a shared machine varies by a tenth or more from one
run to the next."""


def _log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


BYTECODE_DIR = Path(tempfile.gettempdir()) / "fd-bench-bytecode"
"""Where the timed runs keep compiled bytecode (see :func:`_env`)."""


def _env() -> dict[str, str]:
    """Subprocess environment with the repo root importable, and bytecode cached.

    A user's second run of any Python tool finds its modules compiled (``__pycache__``);
    a machine that sets PYTHONDONTWRITEBYTECODE (as many containers do) would instead
    time the compiler on every run. So every timed tool writes and reuses bytecode in a
    folder of its own (PYTHONPYCACHEPREFIX), filled by :func:`warm_bytecode` first."""
    env = dict(os.environ)
    root = str(flightdeck.REPO_ROOT)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(BYTECODE_DIR)
    return env


WARM_IMPORTS = (
    "import benchmarks.floor, analysis.cli, analysis.api, analysis.tables.pool, "
    "analysis.tables.arrow_without_pandas; analysis.api.import_analysis()"
)


def warm_bytecode() -> None:
    """Compile what the timed runs import, as their first run on any machine would."""
    subprocess.run(
        [sys.executable, "-c", WARM_IMPORTS], cwd=str(flightdeck.REPO_ROOT), env=_env(), check=True, timeout=600
    )


def ensure_set(root: Path, ranks: int, args: argparse.Namespace) -> tuple[Path, dict, bool]:
    """Reuse the cached set for ``ranks`` if its truth.json matches the request, else generate it."""
    out = root / f"ranks_{ranks}"
    want = {
        "world_size": ranks,
        "entries": args.entries,
        "fault": args.fault,
        "seed": args.seed,
        "format": "pickle",
    }
    truth_path = out / TRUTH_FILE
    if truth_path.exists():
        truth = json.loads(truth_path.read_text())
        same = all(truth.get(k) == v for k, v in want.items())
        if args.culprit is not None and args.fault == "stuck":
            same = same and truth.get("culprit") == [args.culprit]
        if same and len(dump_files(str(out))) == ranks:
            return out, truth, True
    culprit = args.culprit if args.culprit is None or args.culprit < ranks else None
    truth = write_dump_set(
        out,
        ranks,
        entries=args.entries,
        culprit=culprit,
        fault=args.fault,
        seed=args.seed,
    )
    return out, truth, False


def warm_page_cache(files: list[str]) -> int:
    """Read every file once so all tools are timed against a warm page cache."""
    total = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(1 << 22):
                total += len(chunk)
    return total


def _named(culprit: list[int], named: list[int]) -> str:
    if not culprit:
        return "yes (none)" if not named else f"no (named {len(named)})"
    if any(c in named for c in culprit):
        others = len(set(named) - set(culprit))
        return "yes" if not others else f"yes (+{others} others)"
    return "no"


def bench_floor(dump_dir: Path, procs: int, timeout_s: float, collector: bool = False) -> RunResult:
    """The floor with ``procs`` processes, the garbage collector off while unpickling (or on: the old floor)."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.floor",
        str(dump_dir),
        "--procs",
        str(procs),
        "--gc",
        "on" if collector else "off",
    ]
    return run_measured(cmd, cwd=str(flightdeck.REPO_ROOT), env=_env(), timeout_s=timeout_s)


def bench_flightdeck(
    dump_dir: Path, truth: dict, timeout_s: float, cache_dir: str, workers: int | None = None
) -> tuple[RunResult, flightdeck.Verdict, str]:
    """One end-to-end run with its tables cache in ``cache_dir`` (empty: a cold run)."""
    run = run_measured(
        flightdeck.command(str(dump_dir), workers=workers),
        cwd=str(flightdeck.REPO_ROOT),
        env={**_env(), "FLIGHTDECK_CACHE_DIR": cache_dir},
        timeout_s=timeout_s,
    )
    verdict = flightdeck.read_verdict(run)
    named = _named(truth["culprit"], verdict.suspect_ranks) if verdict.ok else "error"
    return run, verdict, named


def bench_frtrace(
    dump_dir: Path,
    ranks: int,
    dump_bytes: int,
    truth: dict,
    seen: list[tuple[int, int]],
    args: argparse.Namespace,
) -> dict:
    """Run fr_trace under the memory guard, or explain why it was skipped."""
    limit = int(args.frtrace_mem_limit_gb * GB)
    avail = memory_available()
    if avail:
        limit = min(limit, int(avail * 0.9))
    predicted = frtrace.predict_peak_rss(dump_bytes, seen)
    basis = f"{len(seen)} smaller run(s) here" if seen else "a default 12x dump size"
    if ranks > args.skip_frtrace_above or predicted > limit:
        why = f"> --skip-frtrace-above {args.skip_frtrace_above}" if ranks > args.skip_frtrace_above else "guard"
        note = f"skipped ({why}; predicted peak {predicted / GB:.0f} GB from {basis}, limit {limit / GB:.0f} GB)"
        return {
            "frtrace_s_note": "skipped",
            "frtrace_named": "-",
            "frtrace_detail": note,
        }
    run = run_measured(
        frtrace.command(str(dump_dir)),
        cwd=str(flightdeck.REPO_ROOT),
        env=_env(),
        timeout_s=args.frtrace_timeout,
        rss_limit=limit,
    )
    log = run.stdout + run.stderr
    named = frtrace.named_ranks(log)
    detail = [f"rc {run.rc}"]
    if run.killed:
        detail.append(f"killed: {run.killed}")
    if frtrace.aborted(log):
        detail.append("aborted after too many mismatches")
    detail.append(f"named ranks {named[:10]}{' ...' if len(named) > 10 else ''}")
    if run.rc not in (0, None) and not run.killed:
        detail.append("last line: " + (log.strip().splitlines() or [""])[-1][:200])
    row = {
        "frtrace_s": run.wall_s,
        "frtrace_rss_gb": run.peak_rss / GB,
        "frtrace_main_rss_gb": run.peak_rss_main / GB,
        "frtrace_named": _named(truth["culprit"], named) if not run.killed else "killed",
        "frtrace_detail": "; ".join(detail),
    }
    if not run.killed:
        seen.append((dump_bytes, run.peak_rss))
    return row


def _loadavg() -> float | None:
    """1-minute load average: timings on a busy machine are not comparable."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError):
        return None


def _peaks(row: dict, key: str, run: RunResult) -> None:
    """Keep the largest peak over the process tree (``key``) and of the top process alone."""
    row[key + "_rss_gb"] = max(row.get(key + "_rss_gb", 0.0), run.peak_rss / GB)
    row[key + "_main_rss_gb"] = max(row.get(key + "_main_rss_gb", 0.0), run.peak_rss_main / GB)
    row[key + "_procs"] = max(row.get(key + "_procs", 0), run.processes)


def bench_size(ranks: int, args: argparse.Namespace, seen: list[tuple[int, int]]) -> dict:
    """All measurements for one world size."""
    root = Path(args.dir)
    _log(f"{ranks} ranks: preparing dump set")
    dump_dir, truth, cached = ensure_set(root, ranks, args)
    files = dump_files(str(dump_dir))
    dump_bytes = warm_page_cache(files)
    row: dict = {
        "ranks": ranks,
        "entries": args.entries,
        "culprit": truth["culprit"],
        "dump_gb": dump_bytes / GB,
        "gen_note": "reused cached set" if cached else f"generated in {truth['generate_s']:.1f}s",
        "loadavg_before": _loadavg(),
    }
    _log(f"{ranks} ranks: {row['gen_note']}, {dump_bytes / GB:.2f} GB")
    repeats = max(1, args.repeat or REPEAT_SMALL)
    procs = args.workers or 2
    row["repeats"], row["floor_procs"] = repeats, procs
    if not args.no_frtrace:
        row.update(bench_frtrace(dump_dir, ranks, dump_bytes, truth, seen, args))
        _log(f"{ranks} ranks: fr_trace {row.get('frtrace_s') or '-'}s: {row['frtrace_detail']}")
    runs: dict[str, list[float]] = {"fd": [], "floor": [], "floor_gc": []}
    ratios: list[str] = []
    cache_dir = ""
    # Interleaved (Flight Deck, floor, old floor; again ...) so that all three see the same machine.
    for attempt in range(1, repeats + 1):
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)
        cache_dir = tempfile.mkdtemp(prefix="fd-bench-cache-")  # empty: a cold run
        run, verdict, named = bench_flightdeck(dump_dir, truth, args.timeout, cache_dir, args.workers)
        if verdict.ok:
            runs["fd"].append(run.wall_s)
            _peaks(row, "fd", run)
        if attempt == 1:
            row.update(fd_named=named, fd_class=verdict.failure_class, fd_error=verdict.error)
            row["fd_suspects"] = verdict.suspect_ranks[:20]
        floor = bench_floor(dump_dir, procs, args.timeout)
        if floor.rc == 0:
            runs["floor"].append(floor.wall_s)
            _peaks(row, "floor", floor)
        else:
            row["floor_s_note"] = f"failed rc {floor.rc}"
        old = bench_floor(dump_dir, procs, args.timeout, collector=True)
        if old.rc == 0:
            runs["floor_gc"].append(old.wall_s)
        else:
            row["floor_gc_s_note"] = f"failed rc {old.rc}"
        if verdict.ok and floor.rc == 0:
            ratios.append(f"{run.wall_s / floor.wall_s:.2f}x")
        _log(
            f"{ranks} ranks, run {attempt}/{repeats}: Flight Deck {run.wall_s:.2f}s ({verdict.error or named}), "
            f"floor {floor.wall_s:.2f}s, old floor (collector on) {old.wall_s:.2f}s"
        )
    for key, values in runs.items():
        if values:
            row[key + "_s"] = statistics.median(values)
            row[key + "_runs"] = [round(v, 3) for v in values]
    if not runs["fd"]:
        row["fd_s_note"] = "error"
    if runs["fd"] and runs["floor"]:
        row["fd_ratio"] = row["fd_s"] / row["floor_s"]
    if runs["fd"] and runs["floor_gc"]:
        row["fd_ratio_gc"] = row["fd_s"] / row["floor_gc_s"]
    if len(ratios) > 1:
        row["fd_ratio_runs"] = ", ".join(ratios)
    run, verdict, _ = bench_flightdeck(dump_dir, truth, args.timeout, cache_dir, args.workers)  # from the last cache
    if verdict.ok:
        row["fd2_s"] = run.wall_s
        row["fd2_rss_gb"] = run.peak_rss / GB
    else:
        row["fd2_s_note"] = "error"
    _log(f"{ranks} ranks: Flight Deck from its cache: {run.wall_s:.1f}s, {verdict.error or 'ok'}")
    shutil.rmtree(cache_dir, ignore_errors=True)
    return row


def _meta(args: argparse.Namespace) -> dict:
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "cpus": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GB, 1),
        "python": platform.python_version(),
        "torch": importlib.metadata.version("torch"),
        "entries_per_rank": args.entries,
        "fault": args.fault,
        "page_cache": "warm (every file read once before timing)",
        "bytecode": "cached (compiled once before timing, as after a first run)",
        "frtrace_cmd": " ".join(frtrace.command("DIR", python="python")),
        "flightdeck_cmd": " ".join(flightdeck.command("DIR", python="python")),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,1024,4096", help="comma-separated world sizes")
    ap.add_argument("--entries", type=int, default=2000, help="entries per rank (ring buffer size)")
    ap.add_argument(
        "--dir",
        default="/tmp/fd-bench",
        help="where dump sets are cached and results written",
    )
    ap.add_argument(
        "--skip-frtrace-above",
        type=int,
        default=4096,
        help="do not run fr_trace above this size",
    )
    ap.add_argument(
        "--frtrace-mem-limit-gb",
        type=float,
        default=20.0,
        help="memory guard for fr_trace",
    )
    ap.add_argument("--frtrace-timeout", type=float, default=3600.0)
    ap.add_argument("--no-frtrace", action="store_true")
    ap.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="per-run limit for the floor and Flight Deck",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"cold runs of Flight Deck, each followed by the floor and the old floor, medians reported "
        f"(default {REPEAT_SMALL})",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes of the floor and Flight Deck's --workers (default: 2 for the floor, Flight Deck's own)",
    )
    ap.add_argument(
        "--plot",
        metavar="DIR",
        default=None,
        help="write scale.html (plotly) and scale.png (matplotlib) of time and peak memory against ranks to DIR",
    )
    ap.add_argument("--fault", choices=("stuck", "none"), default="stuck")
    ap.add_argument(
        "--culprit",
        type=int,
        default=None,
        help="culprit rank (default: chosen by --seed)",
    )
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows: list[dict] = []
    seen: list[tuple[int, int]] = []  # fr_trace (dump bytes, peak RSS), for the memory guard
    meta = _meta(args)
    warm_bytecode()
    for ranks in sizes:
        rows.append(bench_size(ranks, args, seen))
        report.write(Path(args.dir), rows, meta)
    print(report.text_table(rows))
    for line in report.notes(rows):
        print("  " + line)
    js, md = report.write(Path(args.dir), rows, meta)
    print(f"\nwrote {js} and {md}")
    if args.plot:
        from benchmarks import plot  # plotly and matplotlib, only when asked for

        html, png = plot.write(Path(args.plot), rows, meta)
        print(f"wrote {html} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
