"""The case-by-case diff of the two engines (issue 26, ``docs/one-model.md``).

    python -m benchmarks.engine_diff [--jobs J] [--only SUBSTR] [--cases DIR ...] [--json FILE]

Every stored case (``tests/regressions``, ``tests/regressions_open``, the samples, the
shared NVIDIA sets where present, any ``--cases`` folder of generated cases that hold a
``truth.json``) is loaded once and diagnosed by both engines (``rules``: the tie-break
chain; ``model``: the departures from the program). One line per case whose suspects,
possible ranks or class differ, with each engine's grade where the case has a truth, then
the totals: how many cases each engine passes.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NVRX = REPO.parent / "shared" / "fixtures" / "nvrx"
ENGINES = ("rules", "model")


def stored_cases(extra: list[Path]) -> list[Path]:
    """Every folder of dumps this checkout keeps, and the generated cases of ``extra``."""
    found: list[Path] = []
    for root in (REPO / "tests" / "regressions", REPO / "tests" / "regressions_open", *extra):
        if root.is_dir():
            found += sorted(p for p in root.iterdir() if (p / "truth.json").is_file())
    samples = REPO / "sample_dumps"
    found += sorted(p for p in samples.iterdir() if p.is_dir())
    if NVRX.is_dir():
        found += sorted(p for p in NVRX.iterdir() if p.is_dir())
    return found


def diagnose_both(case: Path) -> dict[str, Any]:
    """Both engines' reports of one case, graded where it holds a truth."""
    import analysis
    from analysis.report.build import analyze_dumps
    from benchmarks.accuracy import grade_report

    truth_file = case / "truth.json"
    truth = json.loads(truth_file.read_text()) if truth_file.is_file() else None
    dumps = analysis.load(case, use_cache=False)
    out: dict[str, Any] = {"case": str(case.relative_to(case.parents[1])), "truth": None}
    if truth is not None and not truth.get("not_gradable"):
        out["truth"] = {"culprits": truth["culprit_ranks"], "classes": truth["accepted_classes"]}
    for engine in ENGINES:
        report = analyze_dumps(dumps, engine=engine).to_dict()
        seen = {
            "suspects": report["suspect_ranks"],
            "possible": sorted(p["rank"] for p in report["possible_ranks"]),
            "class": report["failure_class"],
        }
        if out["truth"] is not None:
            seen["pass"] = all(grade_report(truth, report))
        out[engine] = seen
    return out


def _line(r: dict[str, Any]) -> str:
    def one(e: str) -> str:
        x = r[e]
        grade = "" if "pass" not in x else (" PASS" if x["pass"] else " FAIL")
        return f"{e}: {x['suspects']} possible {x['possible']} {x['class']}{grade}"

    truth = "" if r["truth"] is None else f"  (truth {r['truth']['culprits']} {'/'.join(r['truth']['classes'])})"
    return f"{r['case']}{truth}\n    {one('rules')}\n    {one('model')}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="cases whose path contains this")
    ap.add_argument("--cases", type=Path, action="append", default=[], help="a folder of generated cases")
    ap.add_argument("--json", type=Path, help="write every case's result here")
    args = ap.parse_args(argv)
    cases = [c for c in stored_cases(args.cases) if args.only in str(c)]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(diagnose_both, cases))
    differ = [r for r in results if {k: v for k, v in r["rules"].items()} != r["model"]]
    for r in differ:
        print(_line(r))
    graded = [r for r in results if r["truth"] is not None]
    passes = {e: sum(r[e]["pass"] for r in graded) for e in ENGINES}
    print(
        f"\n{len(results)} cases, {len(differ)} differ; of {len(graded)} with a truth: "
        + ", ".join(f"{e} passes {n}" for e, n in passes.items())
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
