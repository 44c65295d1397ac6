"""Where the tests find the repository, its sample dumps and the shared fixtures.

A plain module, not conftest: two conftest.py files (here and in browser/) share one
module name, so ``from conftest import ...`` reads whichever pytest imported last.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
SAMPLE_DUMPS = ROOT / "sample_dumps"
TESTS = ROOT / "tests"
