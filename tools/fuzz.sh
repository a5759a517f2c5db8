#!/usr/bin/env bash
# fuzz.sh — build the libFuzzer targets (tests/fuzz) in build-fuzz/ with
# clang and run each for SECONDS (default 60), one after another, with its
# committed seed corpus and dictionary. Fails on any crash, sanitizer
# report, leak, timeout or out-of-memory. docs/fuzzing.md has the long runs.
#   usage: tools/fuzz.sh [SECONDS] [TARGET...]
#   FUZZ_OUT   where new corpus entries and crash files go
#              (default build-fuzz/fuzz-out: TARGET/corpus, TARGET/crashes)
#   FUZZ_CC    the clang to build with (default clang-14, else clang)
#   FUZZ_SEED  libFuzzer's -seed (default 0: a random one). With a fixed
#              seed and a fresh FUZZ_OUT a run is one fixed sequence of
#              inputs, and a shorter run (a slower machine) is a prefix of
#              a longer one: tools/test.sh fixes it, so CI replays inputs
#              a longer local run with the same seed has already passed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=build-fuzz
out=${FUZZ_OUT:-$build/fuzz-out}

cc=${FUZZ_CC:-}
if [ -z "$cc" ]; then
    if command -v clang-14 >/dev/null; then cc=clang-14; else cc=clang; fi
fi
CC=$cc cmake -S . -B "$build" -DPETREL_FUZZ=ON -DPETREL_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for src in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
fi
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

# Leaks and every UBSan finding end the run with a report and a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

status=0
for t in "${targets[@]}"; do
    name=${t#fuzz_}
    mkdir -p "$out/$t/corpus" "$out/$t/crashes"
    args=(-max_total_time="$seconds" -seed="${FUZZ_SEED:-0}" -timeout=25 -rss_limit_mb=2048 -max_len=262144
          -print_final_stats=1 -artifact_prefix="$out/$t/crashes/")
    [ -f "tests/fuzz/dict/$name.dict" ] && args+=(-dict="tests/fuzz/dict/$name.dict")
    # Extra libFuzzer flags of one target, e.g. fuzz_args closes the stderr
    # its usage errors go to (libFuzzer still reports crashes).
    [ -f "tests/fuzz/options/$name.txt" ] && read -r -a extra <"tests/fuzz/options/$name.txt" && args+=("${extra[@]}")
    echo "fuzz: $t for ${seconds}s (new inputs: $out/$t/corpus, crashes: $out/$t/crashes)"
    start=$(date +%s)
    # New inputs go to the scratch corpus; the committed seeds are read only.
    if ! "$build/tests/fuzz/$t" "${args[@]}" "$out/$t/corpus" "tests/fuzz/corpus/$t" \
        >"$out/$t/log" 2>&1; then
        echo "fuzz: $t FAILED after $(( $(date +%s) - start ))s; log: $out/$t/log" >&2
        grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)" \
            "$out/$t/log" | head -20 >&2 || true
        status=1
    else
        echo "fuzz: $t ok ($(grep -E '^stat::number_of_executed_units' "$out/$t/log" | awk '{print $2}') runs)"
    fi
done
exit $status
