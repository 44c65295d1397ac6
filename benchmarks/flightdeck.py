"""How to call Flight Deck's CLI and read its JSON verdict, tolerating a broken or missing analyser."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.measure import RunResult

REPO_ROOT = Path(__file__).resolve().parents[1]
EXIT_MEANING = {0: "healthy", 1: "hang found", 2: "nothing analyzable"}


def command(dump_dir: str, python: str = sys.executable, workers: int | None = None) -> list[str]:
    cmd = [python, "-m", "analysis", dump_dir, "--json", "--quiet"]
    return cmd + ["--workers", str(workers)] if workers else cmd


@dataclass
class Verdict:
    """What one Flight Deck run concluded (or why it concluded nothing)."""

    ok: bool
    suspect_ranks: list[int]
    failure_class: str | None
    error: str | None


def read_verdict(run: RunResult) -> Verdict:
    """Parse stdout JSON; any crash, timeout or unexpected exit becomes an error string."""
    if run.killed:
        return Verdict(False, [], None, f"killed: {run.killed}")
    tail = (run.stderr.strip().splitlines() or ["no stderr"])[-1][:200]
    if run.rc not in EXIT_MEANING:
        return Verdict(False, [], None, f"exit {run.rc}: {tail}")
    try:
        data = json.loads(run.stdout)
    except ValueError:
        return Verdict(False, [], None, f"exit {run.rc}, stdout not JSON; {tail}")
    if not isinstance(data, dict):
        return Verdict(False, [], None, f"exit {run.rc}, JSON is not an object")
    suspects = [int(r) for r in data.get("suspect_ranks", []) if isinstance(r, int | str) and str(r).isdigit()]
    return Verdict(True, suspects, data.get("failure_class"), None)
