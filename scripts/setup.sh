#!/usr/bin/env bash
# Create ./.venv with everything Flight Deck needs, and install Flight Deck itself into it
# (editable), so that every process of that venv imports it from any folder: the commands
# `flightdeck` and `flightdeck-dashboard`, `python -m analysis`, streamlit, dask workers.
# Idempotent: reruns only install what changed.
#   scripts/setup.sh          runtime (analysis + dashboard)
#   scripts/setup.sh --dev    plus tests: torch (CPU), pytest, playwright, Dask, and Debian's chromium
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if [ "${1:-}" = "--dev" ]; then
    .venv/bin/python -m pip install -q -r requirements-dev.txt
    .venv/bin/python -m pip install -q -r requirements-dask.txt
    if [ ! -x /usr/bin/chromium ]; then
        echo "installing Debian's chromium for the browser tests" >&2
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium >/dev/null
    fi
else
    .venv/bin/python -m pip install -q -r requirements.txt
fi
# Flight Deck itself, editable: the package's files are these. The versions pinned above are
# already there, so nothing more is fetched. The install compiles the native pickle scanner
# (analysis/ingest/_frscan.c) in place when a C compiler is there; without one, everything
# works on the pure-Python reader. Redone only when the build's inputs change.
STAMP=.venv/flightdeck-install.stamp
INPUTS=$(cat pyproject.toml setup.py analysis/ingest/_frscan.c | sha256sum | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$INPUTS" ] || ! .venv/bin/python -I -c "import analysis, dashboard" 2>/dev/null \
        || [ ! -x .venv/bin/flightdeck ]; then
    .venv/bin/python -m pip install -q --no-build-isolation --no-deps -e . >.venv/install.log 2>&1 \
        || { cat .venv/install.log >&2; exit 1; }
    echo "$INPUTS" >"$STAMP"
fi
if ! .venv/bin/python -I -c "import analysis.ingest._frscan" 2>/dev/null; then
    echo "note: the native scanner was not built (see .venv/install.log); using the pure-Python reader" >&2
fi
