#!/usr/bin/env bash
# test.sh — README command 2: set up, build, fetch the default model and run
# the three test stages. Also used by CI (.ci/run).
#   1. normal:   the whole ctest suite on the Release build (build/)
#   2. sanitize: the whole ctest suite again on an ASan+UBSan build
#                (build-asan/, -DPETREL_SANITIZE=ON)
#   3. fuzz:     every libFuzzer target for FUZZ_SECONDS (default 30) each
#                (tools/fuzz.sh, build-fuzz/)
# usage: tools/test.sh [--only normal|sanitize|fuzz] [CTEST_ARGS...]
# Each stage's wall time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

only=""
if [ "${1:-}" = "--only" ]; then
    only=${2:?"--only wants normal, sanitize or fuzz"}
    shift 2
fi
case "$only" in ""|normal|sanitize|fuzz) ;; *) echo "test.sh: unknown stage '$only'" >&2; exit 2 ;; esac
jobs=$(nproc 2>/dev/null || echo 2)

bash tools/setup.sh --test
# numpy for the tests' python3 (test_demo_eval's shape detector). Debian's
# python3-numpy (tools/setup.sh --test) serves /usr/bin/python3; a python3
# earlier on PATH without it (pyenv, a venv) gets it from PyPI.
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy ||
    echo "test.sh: numpy could not be installed for python3; test_demo_eval will fail" >&2
PETREL_SMOLLM2=$(python3 tools/fetch_model.py)
export PETREL_SMOLLM2
PETREL_GEMMA3=$(python3 tools/fetch_gemma3.py)
export PETREL_GEMMA3
# The peer: tests that compare with llama.cpp itself (convert's files
# load in it, perplexity and KL divergence agree with it) get its tools
# from bench/build_llamacpp.sh; built once here (about 10 minutes on 2
# cores, then cached) so that tests running side by side never race to
# build it.
bash bench/build_llamacpp.sh llama-simple >/dev/null

timings=""
run_stage() { # name command...
    local name=$1 start=$SECONDS
    shift
    [ -z "$only" ] || [ "$only" = "$name" ] || return 0
    echo "== test stage: $name"
    "$@"
    timings="$timings$name: $((SECONDS - start))s\n"
}

normal_suite() {
    ctest --test-dir build --output-on-failure -j"$jobs" "$@"
}

# Sanitizer reports end the run (leaks included) with a stack; the
# shell tests' petrel binary runs under the same options.
sanitize_suite() {
    cmake -S . -B build-asan -DPETREL_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build-asan -j"$jobs"
    ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_stack_use_after_return=0 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ctest --test-dir build-asan --output-on-failure -j"$jobs" "$@"
}

fuzz_smoke() {
    # a fixed seed: the smoke run is reproducible (tools/fuzz.sh); random
    # seeds and long runs are docs/fuzzing.md's campaigns
    FUZZ_SEED=${FUZZ_SEED:-1} bash tools/fuzz.sh "${FUZZ_SECONDS:-30}"
}

run_stage normal normal_suite "$@"
run_stage sanitize sanitize_suite "$@"
run_stage fuzz fuzz_smoke
printf "== test stage times\n$timings"
