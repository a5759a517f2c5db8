#!/usr/bin/env bash
# test.sh — README command 2: set up, build, fetch the default model and
# run the whole test suite (ctest). Also used by CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --test
PETREL_SMOLLM2=$(python3 tools/fetch_model.py)
export PETREL_SMOLLM2
ctest --test-dir build --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
