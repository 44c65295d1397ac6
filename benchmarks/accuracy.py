"""Accuracy of the diagnosis on fresh corpus cases, beside torch's fr_trace on the same dumps.

    python -m benchmarks.accuracy --cases N [--seed S] [--jobs J] [--misses DIR]
                                  [--families a,b] [--kinds gloo,nccl] [--shapes megatron,fsdp]
                                  [--keep DIR] [--json FILE]

Makes N cases (``benchmarks.corpus``), balanced over every (kind, family)
pair, with case seeds drawn from S (a new random S is printed when none is
given, so any run can be repeated). Each case's program shape (``megatron``
or ``fsdp``) is drawn from its seed; ``--shapes`` with one shape forces it
(the families that shape cannot make are left out). Each case is graded on
``analysis.analyze(path, use_cache=False)``:

* ``exact``: the report's ``suspect_ranks`` equal the truth's culprits
  (``class_and_group`` families: the suspects are a subset of the culprits and
  the wavefront is the truth's group and seq);
* ``class``: the report's ``failure_class`` is one the truth accepts (healthy
  cases: verdict ``healthy``);
* ``pass``: both.

fr_trace gets the same columns: its named ranks (every ``missing ranks`` and
``Culprit rank`` of its log) against the culprits, and the class of its first
finding. It reads only pickle dumps; a JSON case or a crash counts as not
named. A case that fails to generate, or whose dumps cannot show its fault,
is reported and skipped, never counted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks import frtrace
from benchmarks.corpus import FAMILIES, KINDS, SHAPES, CaseSkipped, generate_case

REPO_ROOT = Path(__file__).resolve().parents[1]
FRTRACE_TIMEOUT_S = 180


@dataclass
class CaseResult:
    kind: str
    family: str
    seed: int
    status: str  # graded / skipped / error
    reason: str = ""
    shape: str = ""
    culprits: list[int] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    grading: str = "exact_ranks"
    world_size: int = 0
    variants: list[str] = field(default_factory=list)
    suspects: list[int] = field(default_factory=list)
    possible: list[int] | None = None
    failure_class: str | None = None
    verdict: str | None = None
    wavefront: dict[str, Any] | None = None
    exact: bool = False
    klass: bool = False
    fr_named: list[int] | None = None
    fr_class: str | None = None
    fr_exact: bool = False
    fr_klass: bool = False
    fr_note: str = ""
    gen_s: float = 0.0
    analysis_s: float = 0.0
    frtrace_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.exact and self.klass

    @property
    def fr_passed(self) -> bool:
        return self.fr_exact and self.fr_klass


def case_list(
    n: int, seed: int, families: list[str], kinds: list[str], shapes: list[str] | None = None
) -> list[tuple[str, str, int]]:
    """(kind, family, case seed) for n cases, round-robin over the shuffled (kind, family) pairs.

    ``shapes``: only the families that can make one of these program shapes.
    """
    pairs = [
        (k, f)
        for f in families
        for k in kinds
        if k in FAMILIES[f].kinds and (shapes is None or set(shapes) & set(FAMILIES[f].shapes))
    ]
    if not pairs:
        raise SystemExit("no (kind, family) pair matches --families/--kinds")
    rng = random.Random(seed)
    rng.shuffle(pairs)
    return [(*pairs[i % len(pairs)], rng.randrange(1_000_000)) for i in range(n)]


def grade_report(truth: dict[str, Any], report: dict[str, Any]) -> tuple[bool, bool]:
    """(exact suspects, accepted class) of one report against the truth."""
    culprits = sorted(truth["culprit_ranks"])
    suspects = sorted(int(r) for r in report.get("suspect_ranks", []))
    klass = report.get("failure_class") in truth["accepted_classes"]
    if truth["family"] == "healthy":
        klass = klass and report.get("verdict") == "healthy"
    if truth["grading"] == "class_and_group":
        where = truth["diverged_at"][0]
        wf = report.get("wavefront") or {}
        same_place = str(wf.get("pg_name")) == str(where["pg_name"]) and wf.get("collective_seq_id") == where["seq"]
        return set(suspects) <= set(culprits) and same_place, klass
    return suspects == culprits, klass


def grade_frtrace(truth: dict[str, Any], named: list[int], klass: str) -> tuple[bool, bool]:
    culprits = set(truth["culprit_ranks"])
    ok_class = klass in truth["accepted_classes"]
    if truth["grading"] == "class_and_group":  # fr_trace names no wavefront: class and subset only
        return set(named) <= culprits, ok_class
    return set(named) == culprits, ok_class


def run_frtrace(case_dir: Path, truth: dict[str, Any]) -> tuple[list[int] | None, str | None, str, float]:
    """(named ranks, class of the first finding, note, seconds); None when it could not run."""
    if truth["variant_settings"]["dump_format"] == "json":
        return None, None, "reads pickle dumps only", 0.0
    work = Path(tempfile.mkdtemp(prefix="fr_trace_"))
    try:
        for f in case_dir.iterdir():  # fr_trace takes every file of the folder whose name holds the prefix
            if f.name.startswith(truth["file_prefix"]):
                os.symlink(f.resolve(), work / f.name)
        cmd = frtrace.command(
            str(work), prefix=truth["file_prefix"], allow_incomplete=bool(truth["observed"]["dumps_missing"])
        )
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, check=False, capture_output=True, text=True, timeout=FRTRACE_TIMEOUT_S, cwd=str(work)
            )
        except subprocess.TimeoutExpired:
            return None, None, f"timed out after {FRTRACE_TIMEOUT_S}s", time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            last = (log.strip().splitlines() or [""])[-1][:160]
            return None, None, f"exit {proc.returncode}: {last}", seconds
        note = "aborted after too many mismatches" if frtrace.aborted(log) else ""
        return frtrace.named_ranks(log), frtrace.first_class(log), note, seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_one(
    kind: str,
    family: str,
    seed: int,
    keep: str | None,
    misses: str | None,
    with_frtrace: bool,
    shape: str | None = None,
) -> CaseResult:
    """Generate, diagnose and grade one case (in whichever process calls it); ``shape`` forces its shape."""
    import analysis

    res = CaseResult(kind, family, seed, "error", shape=shape or "")
    base = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fd_accuracy_"))
    case_dir = base / (f"{kind}-{family}-{seed}" + (f"-{shape}" if shape else ""))
    try:
        t0 = time.perf_counter()
        try:
            truth = generate_case(kind, family, seed, case_dir, shape=shape)
        except CaseSkipped as exc:
            res.status, res.reason = "skipped", str(exc).splitlines()[0][:300]
            return res
        res.gen_s = time.perf_counter() - t0
        res.shape = truth["shape"]
        res.culprits, res.accepted, res.grading = truth["culprit_ranks"], truth["accepted_classes"], truth["grading"]
        res.world_size, res.variants = truth["layout"]["world_size"], truth["variants"]
        t0 = time.perf_counter()
        try:
            report = analysis.analyze(case_dir, use_cache=False)
            rep = report.to_dict()
            possible = getattr(report, "possible_ranks", None)
            if possible is not None:
                rep.setdefault("possible_ranks", list(possible))
        except Exception as exc:  # noqa: BLE001 - an analyser crash on a valid case is a miss
            rep = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
        res.analysis_s = time.perf_counter() - t0
        res.status = "graded"
        res.suspects = sorted(int(r) for r in rep.get("suspect_ranks", []))
        res.possible = rep.get("possible_ranks")
        res.failure_class, res.verdict, res.wavefront = (
            rep.get("failure_class"),
            rep.get("verdict"),
            rep.get("wavefront"),
        )
        if "error" in rep:
            res.failure_class = "error: " + rep["error"][:200]
        res.exact, res.klass = grade_report(truth, rep) if "error" not in rep else (False, False)
        if with_frtrace:
            named, fr_class, note, res.frtrace_s = run_frtrace(case_dir, truth)
            res.fr_named, res.fr_class, res.fr_note = named, fr_class, note
            if named is not None and fr_class is not None:
                res.fr_exact, res.fr_klass = grade_frtrace(truth, named, fr_class)
        if not res.passed and misses:
            dest = Path(misses) / (f"{family}-{seed}" + (f"-{shape}" if shape else ""))
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(case_dir, dest)
            (dest / "report.json").write_text(json.dumps(rep, indent=1, default=str) + "\n")
        return res
    except Exception as exc:  # noqa: BLE001 - reported as a skipped case, never as a pass or a miss
        res.status, res.reason = "skipped", f"harness error: {type(exc).__name__}: {exc}"[:300]
        return res
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def table(results: list[CaseResult]) -> str:
    """One row per (family, kind), one per family (both kinds), a total per kind and overall."""
    graded = [r for r in results if r.status == "graded"]
    head = (
        f"{'family':18s} {'kind':5s} {'cases':>5s} {'exact':>11s} {'class':>11s} {'pass':>11s}"
        f" | {'fr exact':>11s} {'fr class':>11s} {'fr pass':>11s} {'skipped':>7s}"
    )
    lines = [head, "-" * len(head)]

    def row(label: str, kind: str, rs: list[CaseResult], skipped: int) -> str:
        n = len(rs)
        return (
            f"{label:18s} {kind:5s} {n:5d} {_pct(sum(r.exact for r in rs), n):>11s}"
            f" {_pct(sum(r.klass for r in rs), n):>11s} {_pct(sum(r.passed for r in rs), n):>11s}"
            f" | {_pct(sum(r.fr_exact for r in rs), n):>11s} {_pct(sum(r.fr_klass for r in rs), n):>11s}"
            f" {_pct(sum(r.fr_passed for r in rs), n):>11s} {skipped:7d}"
        )

    for family in FAMILIES:
        for kind in KINDS:
            rs = [r for r in graded if r.family == family and r.kind == kind]
            sk = sum(1 for r in results if r.family == family and r.kind == kind and r.status != "graded")
            if rs or sk:
                lines.append(row(family, kind, rs, sk))
    lines.append("-" * len(head))
    for family in FAMILIES:
        rs = [r for r in graded if r.family == family]
        sk = sum(1 for r in results if r.family == family and r.status != "graded")
        if rs or sk:
            lines.append(row(family, "both", rs, sk))
    lines.append("-" * len(head))
    for kind in KINDS:
        rs = [r for r in graded if r.kind == kind]
        sk = sum(1 for r in results if r.kind == kind and r.status != "graded")
        if rs or sk:
            lines.append(row("all", kind, rs, sk))
    if len({r.shape for r in results}) > 1:
        for shape in SHAPES:
            rs = [r for r in graded if r.shape == shape]
            sk = sum(1 for r in results if r.shape == shape and r.status != "graded")
            if rs or sk:
                lines.append(row(f"all {shape}", "", rs, sk))
    lines.append(row("overall", "", graded, sum(1 for r in results if r.status != "graded")))
    return "\n".join(lines)


def miss_line(r: CaseResult) -> str:
    said = f"{r.suspects} {r.failure_class} (verdict {r.verdict})"
    if r.possible is not None:
        said += f", possible {r.possible}"
    if r.grading == "class_and_group" and r.wavefront:
        said += f", wavefront group {r.wavefront.get('pg_name')} seq {r.wavefront.get('collective_seq_id')}"
    return (
        f"MISS {r.family} ({r.kind}, {r.shape}, {r.world_size} ranks{', ' + ','.join(r.variants) if r.variants else ''}) "
        f"seed {r.seed}: culprits {r.culprits} {'/'.join(r.accepted)} -> said {said}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None, help="seed of the case list (default: a new one, printed)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run in parallel (each gloo case forks its ranks)")
    ap.add_argument("--misses", default=None, help="copy every missed case here as <family>-<seed>/")
    ap.add_argument("--families", default=None, help="comma-separated subset of: " + ",".join(FAMILIES))
    ap.add_argument("--kinds", default=",".join(KINDS), help="gloo (real torch runs), nccl (synthetic), or both")
    ap.add_argument(
        "--shapes",
        default=",".join(SHAPES),
        help="program shapes: megatron, fsdp, or both (default: each case's seed draws it); one shape forces it",
    )
    ap.add_argument("--keep", default=None, help="keep every case's dumps here as <kind>-<family>-<seed>/")
    ap.add_argument("--json", default=None, help="write per-case results to this file")
    ap.add_argument("--no-frtrace", action="store_true", help="skip torch's fr_trace columns")
    args = ap.parse_args(argv)

    families = args.families.split(",") if args.families else list(FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    kinds = args.kinds.split(",")
    shapes = sorted(set(args.shapes.split(",")), key=SHAPES.index) if args.shapes else list(SHAPES)
    if unknown or any(k not in KINDS for k in kinds) or any(s not in SHAPES for s in shapes):
        ap.error(f"unknown family, kind or shape: {unknown or kinds + shapes}")
    forced = shapes[0] if len(shapes) == 1 else None
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    cases = case_list(args.cases, seed, families, kinds, [forced] if forced else None)
    print(f"accuracy: {len(cases)} cases, seed {seed} (repeat with --seed {seed})", flush=True)
    os.environ.setdefault("FLIGHTDECK_CACHE_DIR", tempfile.mkdtemp(prefix="fd_accuracy_cache_"))
    for d in (args.keep, args.misses):
        if d:
            Path(d).mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    results: list[CaseResult] = []

    def report(r: CaseResult) -> None:
        results.append(r)
        n = len(results)
        if r.status != "graded":
            print(f"[{n}/{len(cases)}] {r.kind} {r.family} seed {r.seed}: SKIPPED ({r.reason})", flush=True)
            return
        fr = "fr_trace n/a" if r.fr_named is None else f"fr_trace {r.fr_named} {r.fr_class}"
        print(
            f"[{n}/{len(cases)}] {r.kind} {r.family} seed {r.seed} ({r.shape}, {r.world_size} ranks): "
            f"{'pass' if r.passed else 'MISS'} culprits {r.culprits} said {r.suspects} {r.failure_class}; {fr} "
            f"(gen {r.gen_s:.1f}s, analysis {r.analysis_s:.1f}s)",
            flush=True,
        )

    job_args = [(k, f, s, args.keep, args.misses, not args.no_frtrace, forced) for k, f, s in cases]
    if args.jobs <= 1:
        for a in job_args:
            report(run_one(*a))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            for fut in as_completed([pool.submit(run_one, *a) for a in job_args]):
                report(fut.result())
    wall = time.perf_counter() - t0

    graded = [r for r in results if r.status == "graded"]
    print()
    print(table(results))
    print()
    print(
        f"time: {wall:.0f}s wall for {len(results)} cases; generation {sum(r.gen_s for r in graded):.0f}s, "
        f"analysis {sum(r.analysis_s for r in graded):.1f}s "
        f"(mean {sum(r.analysis_s for r in graded) / max(1, len(graded)):.2f}s), "
        f"fr_trace {sum(r.frtrace_s for r in graded):.1f}s"
    )
    skipped = [r for r in results if r.status != "graded"]
    for r in skipped:
        print(f"SKIPPED {r.family} ({r.kind}) seed {r.seed}: {r.reason}")
    for r in sorted((r for r in graded if not r.passed), key=lambda r: (r.family, r.kind, r.seed)):
        print(miss_line(r))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"seed": seed, "cases": [r.__dict__ for r in results], "wall_s": wall}, indent=1, default=str)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
