#!/usr/bin/env bash
# start.sh — README command 1: set up, build, fetch the default model and
# open the app. Extra arguments go to petrel.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
python3 tools/fetch_model.py >/dev/null
exec build/petrel "$@"
