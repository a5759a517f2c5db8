#!/usr/bin/env bash
# run.sh — the one command: petrel vs llama.cpp side by side (bench/compare.py
# builds both, makes the models, runs them alternating, writes
# bench/RESULTS.md). Options: python3 bench/compare.py --help.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/compare.py "$@"
