#!/usr/bin/env bash
# Set up everything on a fresh machine, then run the whole test suite (browser and slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
exec .venv/bin/python -m pytest "$@"
