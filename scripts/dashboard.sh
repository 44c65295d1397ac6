#!/usr/bin/env bash
# Set up the runtime on a fresh machine, then open the dashboard on the bundled sample dumps.
# Extra arguments go to the app, e.g.:  scripts/dashboard.sh --dumps /path/to/dumps
# (add --dask tcp://host:8786 or --dask local:N to read them on a Dask cluster; see README)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run dashboard/app.py -- "$@"
