#!/usr/bin/env bash
# Set up the runtime on a fresh machine, then open the dashboard on the bundled sample dumps.
# Arguments go to `flightdeck-dashboard`, from the folder this script was started in, e.g.:
#   scripts/dashboard.sh --dumps /path/to/dumps [--server.port 8502]
# (add --dask tcp://host:8786 or --dask local:N to read them on a Dask cluster; see README)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
exec "$ROOT/.venv/bin/flightdeck-dashboard" "$@"
