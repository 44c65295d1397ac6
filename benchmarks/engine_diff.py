"""The case-by-case diff of this checkout's diagnosis against a git revision's.

    python -m benchmarks.engine_diff [--base REV] [--jobs J] [--only SUBSTR] [--cases DIR ...] [--json FILE] [--fresh]

Every stored case (``tests/regressions``, ``tests/regressions_open``, the samples, the
shared NVIDIA sets where present, and any ``--cases`` folder of generated cases holding a
``truth.json``) is diagnosed by this checkout and by the revision ``--base`` (default
``HEAD``: what the uncommitted changes do; extracted with ``git archive`` into a temporary
folder and run from there). One line per case whose suspects, possible ranks or class
differ, with each side's grade where the case has a truth, then how many cases each side
passes. Both sides run in fresh interpreters, each importing its own ``analysis``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NVRX = REPO.parent / "shared" / "fixtures" / "nvrx"

WORKER = """
import json, sys
import analysis
from benchmarks.accuracy import grade_report
out = {}
for case in json.load(sys.stdin):
    truth = None
    try:
        with open(case + "/truth.json") as f:
            truth = json.load(f)
    except OSError:
        pass
    report = analysis.analyze(case, use_cache=False).to_dict()
    seen = {
        "suspects": report["suspect_ranks"],
        "possible": sorted(p["rank"] for p in report["possible_ranks"]),
        "class": report["failure_class"],
    }
    if truth is not None and not truth.get("not_gradable"):
        seen["pass"] = all(grade_report(truth, report))
    out[case] = seen
json.dump(out, sys.stdout)
"""


def stored_cases(extra: list[Path]) -> list[Path]:
    """Every folder of dumps this checkout keeps, and the generated cases of ``extra``."""
    found: list[Path] = []
    for root in (REPO / "tests" / "regressions", REPO / "tests" / "regressions_open", *extra):
        if root.is_dir():
            found += sorted(p for p in root.iterdir() if (p / "truth.json").is_file())
    found += sorted(p for p in (REPO / "sample_dumps").iterdir() if p.is_dir())
    if NVRX.is_dir():
        found += sorted(p for p in NVRX.iterdir() if p.is_dir())
    return found


def checkout_of(rev: str, into: Path) -> Path:
    """The files of revision ``rev`` of this repository, written under ``into``."""
    archive = into / "rev.tar"
    with archive.open("wb") as f:
        subprocess.run(["git", "-C", str(REPO), "archive", rev], stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "src", filter="data")
    return into / "src"


def diagnose_all(checkout: Path, cases: list[Path], jobs: int, timeout_s: float) -> dict[str, dict[str, Any]]:
    """Each case's suspects, possible ranks, class and grade by the ``analysis`` of
    ``checkout``; every worker is killed, and the run stops, past ``timeout_s``."""
    chunks = [cases[i::jobs] for i in range(jobs)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER], cwd=checkout, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in chunks
    ]
    deadline = time.monotonic() + timeout_s
    out: dict[str, dict[str, Any]] = {}
    try:
        for proc, chunk in zip(procs, chunks):
            text, _ = proc.communicate(json.dumps([str(c) for c in chunk]), timeout=max(deadline - time.monotonic(), 0))
            if proc.returncode != 0:
                raise SystemExit(f"the diagnosis in {checkout} failed (exit {proc.returncode})")
            out.update(json.loads(text or "{}"))
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the diagnosis in {checkout} took over {timeout_s:.0f} s; its workers were stopped") from None
    finally:
        for proc in procs:
            proc.kill()
    return out


def base_results(rev: str, cases: list[Path], jobs: int, timeout_s: float, fresh: bool = False) -> dict[str, dict]:
    """Each case's result by revision ``rev``: a commit's diagnosis never changes, so the
    results are kept in the temporary folder by commit and only cases not seen there are
    diagnosed (all of them with ``fresh``)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", rev], capture_output=True, text=True, check=True)
    kept = Path(tempfile.gettempdir()) / f"flightdeck-engine-diff-{sha.stdout.strip()}.json"
    known: dict[str, dict] = {} if fresh or not kept.is_file() else json.loads(kept.read_text())
    missing = [c for c in cases if str(c) not in known]
    if missing:
        with tempfile.TemporaryDirectory(prefix="flightdeck-base-") as tmp:
            known.update(diagnose_all(checkout_of(rev, Path(tmp)), missing, jobs, timeout_s))
        kept.write_text(json.dumps(known))
    return {str(c): known[str(c)] for c in cases}


def _line(case: str, base: dict[str, Any], mine: dict[str, Any]) -> str:
    def one(name: str, x: dict[str, Any]) -> str:
        grade = "" if "pass" not in x else (" PASS" if x["pass"] else " FAIL")
        return f"{name}: {x['suspects']} possible {x['possible']} {x['class']}{grade}"

    shown = Path(case).relative_to(REPO) if Path(case).is_relative_to(REPO) else case
    return f"{shown}\n    {one('base', base)}\n    {one('this', mine)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD", help="the git revision to compare with (default HEAD)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="cases whose path contains this")
    ap.add_argument("--cases", type=Path, action="append", default=[], help="a folder of generated cases")
    ap.add_argument("--json", type=Path, help="write every case's result here")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds each side may take (default 3600)")
    ap.add_argument("--fresh", action="store_true", help="diagnose every case by the base again (see base_results)")
    args = ap.parse_args(argv)
    cases = [c.resolve() for c in stored_cases(args.cases) if args.only in str(c)]
    base = base_results(args.base, cases, args.jobs, args.timeout, fresh=args.fresh)
    mine = diagnose_all(REPO, cases, args.jobs, args.timeout)
    differ = [str(c) for c in cases if base[str(c)] != mine[str(c)]]
    for c in differ:
        print(_line(c, base[c], mine[c]))
    graded = [str(c) for c in cases if "pass" in mine[str(c)]]
    print(
        f"\n{len(cases)} cases, {len(differ)} differ; of {len(graded)} with a truth: "
        f"base ({args.base}) passes {sum(base[c].get('pass', False) for c in graded)}, "
        f"this checkout passes {sum(mine[c]['pass'] for c in graded)}"
    )
    if args.json:
        args.json.write_text(json.dumps({"base": base, "this": mine}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
