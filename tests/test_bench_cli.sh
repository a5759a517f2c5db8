#!/usr/bin/env bash
# test_bench_cli.sh — `petrel bench` on SmolLM2 with tiny sizes: llama-bench's
# markdown table (header, separator, one row per test, footer), its JSON and
# JSONL fields and their internal consistency (tools/check_bench_json.py),
# CSV header, list/range arguments, -pg, -d, -b/-ub, and usage errors (exit 2,
# one "petrel: " line). The header strings below are llama-bench's own for a
# CPU backend (tools/llama-bench/llama-bench.cpp of the llama.cpp pinned in
# bench/build_llamacpp.sh), copied here so the test needs no llama.cpp.
set -u
SRC=${PETREL_SOURCE_DIR:?PETREL_SOURCE_DIR not set}
source "$(dirname "$0")/cli_lib.sh"
CHECK="python3 $SRC/tools/check_bench_json.py"
# line N of $TMP/out equals the string
line_is() {
    local n=$1 want=$2 got
    got=$(sed -n "${n}p" "$TMP/out")
    if [ "$got" = "$want" ]; then ok; else bad "line $n: got '$got' want '$want'"; fi
}

HDR='| model                          |       size |     params | backend    | threads |            test |                  t/s |'
SEP='| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |'
# A row: the model's llama.cpp-style description, size, params, CPU, the
# threads, the test, "mean ± sd" right-aligned in 20 columns.
row_re() { # TEST THREADS
    printf '^| llama 135M Q4_1                |  92\\.10 MiB |   134\\.52 M | CPU        | %7s | %15s | +[0-9]+\\.[0-9]{2} ± [0-9]+\\.[0-9]{2} \\|$' "$2" "$1"
}

# ---- markdown (default output) ----------------------------------------------
expect_exit 0 "md" -- "$BIN" bench -m "$MODEL" -p 8 -n 4 -r 2 -t 1
line_is 1 "$HDR"
line_is 2 "$SEP"
sed -n 3p "$TMP/out" | grep -Eq "$(row_re pp8 1)" && ok || bad "md row pp8: $(sed -n 3p "$TMP/out")"
sed -n 4p "$TMP/out" | grep -Eq "$(row_re tg4 1)" && ok || bad "md row tg4: $(sed -n 4p "$TMP/out")"
line_is 5 ""
sed -n 6p "$TMP/out" | grep -Eq '^build: .+ \([0-9]+\)$' && ok || bad "md footer: $(sed -n 6p "$TMP/out")"
[ "$(wc -l <"$TMP/out")" -eq 6 ] && ok || bad "md has $(wc -l <"$TMP/out") lines, want 6"
# every row is as wide as the header (in characters: "±" counted as one)
sed 's/±/+/' "$TMP/out" | awk -v w=${#HDR} 'NR<=4 && length($0) != w {exit 1}' && ok || bad "md rows not aligned with the header"

# ---- JSON: llama-bench's fields, one object per test --------------------------
expect_exit 0 "json" -- "$BIN" bench -m "$MODEL" -p 8 -n 4 -r 2 -t 1 -o json
$CHECK "$TMP/out" --reps 2 --tests pp8,tg4 --field n_threads=1 --field n_batch=2048 --field n_ubatch=512 \
    --field model_type="llama 135M Q4_1" --field model_filename="$MODEL" --field model_size=96576768 \
    --field model_n_params=134515008 --field n_depth=0 >"$TMP/check" && ok || bad "json: $(cat "$TMP/check")"
# the pp test has n_gen 0 and the tg test n_prompt 0 (checked through the
# test names above); spot-check the raw text too
grep -q '"n_prompt": 8,' "$TMP/out" && grep -q '"n_gen": 4,' "$TMP/out" && ok || bad "json lacks n_prompt 8 / n_gen 4"

# The checker recomputes avg_ts/stddev_ts from the exact samples_ns, not from
# samples_ts (6 significant digits, as llama-bench prints them): two samples
# 3 ns apart print as the same samples_ts, yet their true stddev is not 0.
# Deterministic stand-in for the run-to-run flake (about one run in six).
python3 - "$TMP/out" >"$TMP/rounded.json" <<'PY'
import json, statistics, sys
o = json.load(open(sys.argv[1]))[0]
o["samples_ns"] = [1000003, 1000000]
ts = [8e9 / n for n in o["samples_ns"]]
o["samples_ts"] = [float(f"{t:g}") for t in ts]
o["avg_ns"] = int(statistics.fmean(o["samples_ns"]))
o["stddev_ns"] = int(statistics.stdev(o["samples_ns"]))
o["avg_ts"] = float(f"{statistics.fmean(ts):f}")
o["stddev_ts"] = float(f"{statistics.stdev(ts):f}")
json.dump([o], sys.stdout, indent=1)
PY
$CHECK "$TMP/rounded.json" --reps 2 --tests pp8 >"$TMP/check" && ok || bad "checker vs rounded samples_ts: $(cat "$TMP/check")"

# ---- JSONL + CSV on stderr, -pg, -b/-ub splitting, list and range syntax ------
expect_exit 0 "jsonl" -- "$BIN" bench -m "$MODEL" -p 0 -n 0 -pg 5,2 -b 3 -ub 2 -t 1,2 -r 3 -o jsonl -oe csv
$CHECK "$TMP/out" --jsonl --reps 3 --tests pp5+tg2,pp5+tg2 --field n_batch=3 --field n_ubatch=2 \
    >"$TMP/check" && ok || bad "jsonl: $(cat "$TMP/check")"
head -1 "$TMP/err" | grep -q '^build_commit,build_number,cpu_info,gpu_info,backends,model_filename,model_type,model_size,model_n_params,n_batch,n_ubatch,n_threads,' \
    && ok || bad "csv header: $(head -1 "$TMP/err")"
[ "$(grep -c '^"' "$TMP/err")" -eq 2 ] && ok || bad "csv rows: $(cat "$TMP/err")"
grep -q '"n_threads": 1,.*"n_threads": 2,' <(tr -d '\n' <"$TMP/out") && ok || bad "jsonl threads 1 then 2"

expect_exit 0 "ranges" -- "$BIN" bench -m "$MODEL" -p 2-8*2 -n 0 -d 3 -r 1 -t 1 -o json
$CHECK "$TMP/out" --reps 1 --tests "pp2 @ d3,pp4 @ d3,pp8 @ d3" >"$TMP/check" && ok || bad "ranges: $(cat "$TMP/check")"

expect_exit 0 "md with n_batch column" -- "$BIN" bench -m "$MODEL" -p 4 -n 0 -b 2 -r 1 -t 1
head -1 "$TMP/out" | grep -q '| threads | n_batch |            test |' && ok || bad "md n_batch column: $(head -1 "$TMP/out")"

expect_exit 0 "--help" -- "$BIN" bench --help
grep -q -- '-pg PP,TG' "$TMP/out" && ok || bad "bench --help lacks -pg"

# ---- usage errors: exit 2, one line -------------------------------------------
for args in "-p abc" "-p 8," "-p 8-4" "-n -1" "-o xml" "-pg 5" "-pg 5,x" "-r 0" "-t 0" "-b 0" "--frobnicate" "-p" "stray" "-n 1-16777216" "-p 1-1025"; do
    # shellcheck disable=SC2086
    expect_exit 2 "bench $args" -- "$BIN" bench -m "$MODEL" $args
    one_line_error "bench $args"
done
# a cross product of lists past 65536 tests (found by tests/fuzz/fuzz_args.c)
expect_exit 1 "too many tests" -- "$BIN" bench -m "$MODEL" -p 1-1024 -n 0 -t 1-1024 -r 1
one_line_error "too many tests"
expect_exit 1 "missing model" -- "$BIN" bench -m "$TMP/nope.gguf" -p 8 -n 0 -r 1
one_line_error "missing model"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
