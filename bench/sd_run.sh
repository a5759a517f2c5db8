#!/usr/bin/env bash
# sd_run.sh — the one command: petrel imagine vs stable-diffusion.cpp side by
# side (bench/sd_compare.py builds both, makes the checkpoint and the
# tokenizer folder, runs them alternating, writes the image part of
# bench/RESULTS.md). Options: python3 bench/sd_compare.py --help; e.g.
# --only sd.cpp (the peer alone), --sizes 256, --rounds 1.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/sd_compare.py "$@"
