import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
for p in (str(ROOT), str(TESTS)):
    if p not in sys.path:
        sys.path.insert(0, p)

SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"
SAMPLE_DUMPS = ROOT / "sample_dumps"
