"""Flight Deck dashboard: the script Streamlit runs.

flightdeck-dashboard                          # the bundled sample dumps
flightdeck-dashboard --dumps /path/to/dumps   # (or: streamlit run dashboard/app.py -- --dumps ...)
"""

from __future__ import annotations

import sys

from dashboard.main import run


def main() -> None:
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
