"""Flight Deck dashboard.

streamlit run dashboard/app.py                      # the bundled sample dumps
streamlit run dashboard/app.py -- --dumps /path/to/dumps
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run` puts only dashboard/ on the path
    sys.path.insert(0, str(_ROOT))

from dashboard.main import run


def main() -> None:
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
