"""Which rule decides each wait-for cycle, and whether it names the truth's ranks.

The one model (``docs/one-model.md``) replaces the rule chain of ``hang._component`` in
stages; this is how each stage measures what the chain still decides. Every case folder
given (or every stored case, as ``engine_diff`` lists them) is diagnosed once; for each
root component of its wait-for graph with 2 to 64 members (``--smallest 1``: a root alone
too), the ``return`` of
``_component`` that produced its findings is recorded (by its source line), with the
finding kinds, the ranks named and the truth's ranks among the members.

    python -m benchmarks.branch_trace [--cases DIR ...] [--smallest N] [--json FILE]

Prints one line per branch: cycles, named right, named wrong (graded where the case has a
``truth.json``), and the cases it got wrong.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

import analysis
from analysis.diagnosis import hang

from .engine_diff import stored_cases

LARGEST = 64
"""Cycles up to this many members are traced (the model's own limit in ``hang``)."""


class Trace:
    """Records the line ``hang._component`` returned from, for every component it explains."""

    def __init__(self) -> None:
        self.code = hang._component.__code__
        self.lines: list[int] = []

    def __call__(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not self.code:
            return None

        def local(frame: FrameType, event: str, arg: object) -> Any:
            if event == "return":
                self.lines.append(frame.f_lineno)
            return local

        return local


def trace_case(case: Path, smallest: int = 2) -> list[dict[str, Any]]:
    """The cycles of one case, each with the branch that decided it."""
    truth_file = case / "truth.json"
    truth = json.loads(truth_file.read_text()).get("culprit_ranks") if truth_file.exists() else None
    trace, found_by_comp = Trace(), []
    original = hang._component

    def component(w: Any, comp: list[int]) -> Any:
        trace.lines.clear()
        sys.settrace(trace)
        try:
            found, notes = original(w, comp)
        finally:
            sys.settrace(None)
        if smallest <= len(comp) <= LARGEST:
            named = sorted({r for f in found for r in f.ranks})
            inside = None if truth is None else sorted(set(truth) & set(comp))
            line = trace.lines[-1] if trace.lines else 0
            kinds = sorted({str(f.kind) for f in found})
            found_by_comp.append({"case": str(case), "members": len(comp), "line": line, "kinds": kinds,
                                  "named": named, "truth": inside})  # fmt: skip
        return found, notes

    hang._component = component
    try:
        analysis.analyze(case, use_cache=False, workers=1)
    except (OSError, ValueError) as e:  # a case the diagnosis cannot read is reported, not fatal
        print(f"{case}: {e}", file=sys.stderr)
    finally:
        hang._component = original
    return found_by_comp


def branch_name(line: int) -> str:
    """The source of ``_component``'s return at ``line``, shortened."""
    source, first = inspect.getsourcelines(hang._component)
    text = source[line - first].strip() if 0 <= line - first < len(source) else "?"
    return f"{line}: {text[:90]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=Path, action="append", default=[], help="a folder of generated cases")
    ap.add_argument("--json", type=Path, help="write every cycle's record here")
    ap.add_argument("--smallest", type=int, default=2, help="fewest members of a component traced (1: roots alone too)")
    args = ap.parse_args(argv)
    cases = stored_cases([]) + [p for root in args.cases for p in sorted(root.iterdir()) if p.is_dir()]
    cycles = [c for case in cases for c in trace_case(case, args.smallest)]
    if args.json:
        args.json.write_text(json.dumps(cycles))
    by_branch: Counter = Counter()
    graded: Counter = Counter()
    wrong: dict[str, list[str]] = defaultdict(list)
    for c in cycles:
        name = "the model: " + "+".join(c["kinds"]) if {"record_edit", "count_edit"} & set(c["kinds"]) else None
        name = name or branch_name(c["line"])
        by_branch[name] += 1
        if c["truth"]:
            graded[(name, c["named"] == c["truth"])] += 1
            if c["named"] != c["truth"]:
                wrong[name].append(Path(c["case"]).name)
    print(f"{len(cycles)} components of {args.smallest} to {LARGEST} members in {len(cases)} cases")
    print(f"{'cycles':>6} {'right':>5} {'wrong':>5}  branch")
    for name, n in by_branch.most_common():
        print(f"{n:>6} {graded[(name, True)]:>5} {graded[(name, False)]:>5}  {name}")
        if wrong[name]:
            print(f"{'':>19}wrong: {', '.join(wrong[name][:6])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
