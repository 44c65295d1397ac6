import os
import sys
import tempfile
from pathlib import Path

# Keep the tables cache of test runs away from the user's own cache.
os.environ.setdefault("FLIGHTDECK_CACHE_DIR", tempfile.mkdtemp(prefix="flightdeck-test-cache-"))

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
for p in (str(ROOT), str(TESTS)):
    if p not in sys.path:
        sys.path.insert(0, p)
