"""The package's layers hold: no import runs from a lower layer of ``analysis`` to a
higher one, ``analysis`` never imports the dashboard or Streamlit, and only the Dask
engine imports Dask (the contracts are in pyproject.toml, checked by import-linter)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from locations import ROOT


def _lint_imports(repo: Path) -> subprocess.CompletedProcess:
    """import-linter on the packages in ``repo``: it puts its working folder first on the path,
    so a copy's packages are read before the installed ones."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(exe), "--no-cache"], check=False, cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


def test_import_contracts_are_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: a copy of the package where the model imports the report is refused."""
    for package in ("analysis", "dashboard"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    groups = tmp_path / "analysis" / "model" / "groups.py"
    groups.write_text(groups.read_text() + "\nfrom ..report import report as _upward  # noqa: E402,F401\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "analysis.model.groups -> analysis.report" in result.stdout


def test_importing_dask_outside_its_engine_breaks_the_contract(tmp_path: Path) -> None:
    for package in ("analysis", "dashboard"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    load = tmp_path / "analysis" / "tables" / "load.py"
    load.write_text(load.read_text() + "\nimport distributed as _eager  # noqa: E402,F401\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "analysis.tables.load -> distributed" in result.stdout
