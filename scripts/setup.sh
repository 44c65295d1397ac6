#!/usr/bin/env bash
# Create ./.venv with everything Flight Deck needs. Idempotent: reruns only install what changed.
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
# The native scanner (analysis/ingest/_frscan.c) reads pickles several times faster; without a C
# compiler Flight Deck still works, on the pure-Python path.
if ! .venv/bin/python setup.py -q build_ext --inplace >.venv/native-build.log 2>&1; then
    echo "note: the native scanner was not built (see .venv/native-build.log); using the pure-Python reader" >&2
fi
