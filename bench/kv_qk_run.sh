#!/usr/bin/env bash
# kv_qk_run.sh — decode speed of the int8 Q·K path (issue 15) against
# float keys for the int8-key KV types, side by side with llama.cpp's
# q8_0 KV cache, printed as a markdown table with ratios.
#
#   bench/kv_qk_run.sh [-m MODEL] [-d "4096 8192"] [-k "q8 q8f8"] [-n N_GEN]
#                      [-R ROUNDS] [-t THREADS] [-L] [-s "64x3 128x6"]
#                      [-a "256 1024 4096 8192"]
#
# Per type and depth, bench/kv_qk (one process): two contexts filled with
# the same DEPTH tokens, --kv-qk float and --kv-qk int8, decoding N_GEN
# tokens each, one call a token, alternately for ROUNDS rounds (the
# median round's int8 / float is the ratio: a shared machine's changing
# load falls on both alike). Then llama-bench -ctk q8_0 -ctv q8_0 -fa 1
# -p 0 -n N_GEN -d DEPTH at each depth (run once per depth, after
# petrel's rounds; -L leaves llama.cpp out). Load average before and
# after goes with the table. Each petrel row is also printed to stderr
# as it completes.
#
# Then the attention step alone (bench/kv_qk_attend): one decode token's
# pt_kv_attend over one KV head at each depth of -a (default "256 1024
# 4096 8192"), float then int8 Q·K,
# alternated for 7 rounds of 20 calls on one thread, timed in the
# thread's CPU time (other jobs' time slices not counted: the steady
# figure on a shared machine), for each shape HEAD_DIMxGROUP of -s
# (SmolLM2-135M 64x3; Qwen2.5-1.5B 128x6); the ratio is the best float
# round over the best int8 round. -s "" skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${PETREL_SMOLLM2:-$HOME/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf}
DEPTHS="4096 8192" TYPES="q8 q8f8" NG=16 ROUNDS=5 TH=2 NOLLAMA= SHAPES="64x3 128x6" ADEPTHS="256 1024 4096 8192"
while getopts "m:d:k:n:R:t:Ls:a:" o; do
    case $o in
    m) MODEL=$OPTARG ;; d) DEPTHS=$OPTARG ;; k) TYPES=$OPTARG ;; n) NG=$OPTARG ;; R) ROUNDS=$OPTARG ;; t) TH=$OPTARG ;;
    L) NOLLAMA=1 ;; s) SHAPES=$OPTARG ;; a) ADEPTHS=$OPTARG ;;
    *) echo "usage: $0 [-m MODEL] [-d DEPTHS] [-k TYPES] [-n N_GEN] [-R ROUNDS] [-t THREADS] [-L]" >&2; exit 2 ;;
    esac
done
BIN=${PETREL_BIN:-build/petrel}
QK=${KV_QK_BIN:-$(dirname "$BIN")/bench/kv_qk}
[ -x "$QK" ] || { echo "build bench/kv_qk first (cmake --build build --target kv_qk)" >&2; exit 1; }
LB=
[ -n "$NOLLAMA" ] || LB=$(bash bench/build_llamacpp.sh llama-bench 2>/dev/null) || LB=
if [ -n "$NOLLAMA" ]; then LLNAME="left out (-L)"; else LLNAME=${LB:-not built}; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
llama_tps() {
    [ -n "$LB" ] || { echo -; return; }
    "$LB" -m "$MODEL" -p 0 -n "$NG" -d "$1" -r 2 -t "$TH" -ctk q8_0 -ctv q8_0 -fa 1 -o jsonl >"$TMP/l" 2>/dev/null \
        || { echo -; return; }
    python3 -c 'import json,sys; print("%.2f" % json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["avg_ts"])' "$TMP/l"
}

echo "model: $(basename "$MODEL"); threads $TH; $ROUNDS alternate rounds of $NG tokens after DEPTH, one call a token"
echo "petrel: git $(git rev-parse --short HEAD 2>/dev/null || echo ?); llama.cpp: $LLNAME; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
rows=()
for t in $TYPES; do
    for d in $DEPTHS; do
        "$QK" "$MODEL" "$d" "$NG" "$TH" "$t" "$ROUNDS" >"$TMP/out" 2>"$TMP/err" \
            || { rows+=("| $t | $d | kv_qk failed: $(tail -1 "$TMP/err") | | | | | | |"); continue; }
        f=$(sed -n 's/^float_tps //p' "$TMP/out") i=$(sed -n 's/^int8_tps //p' "$TMP/out")
        r=$(sed -n 's/^ratio_median //p' "$TMP/out") b=$(sed -n 's/^best_ratio //p' "$TMP/out")
        rounds=$(sed -n 's/^round [0-9]* float_tps \([0-9.]*\) int8_tps \([0-9.]*\)$/\2\/\1/p' "$TMP/out" | paste -sd' ')
        rows+=("| $t | $d | $f | $i | $r | $b | $rounds | LL$d | $i |")
        echo "${rows[-1]}" >&2
    done
done
declare -A LL
for d in $DEPTHS; do LL[$d]=$(llama_tps "$d"); done
echo "| KV | depth | float Q.K t/s | int8 Q.K t/s | int8 / float (median round) | int8 / float (best rounds) | rounds (int8/float t/s) | llama.cpp q8_0 t/s | petrel int8 / llama |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
for row in "${rows[@]}"; do
    d=$(echo "$row" | cut -d'|' -f3 | tr -d ' ')
    i=$(echo "$row" | cut -d'|' -f10 | tr -d ' ')
    l=${LL[$d]:--}
    echo "$row" | sed "s/| LL$d | $i |\$/| $l | $(ratio "$i" "$l") |/"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$SHAPES" ] || exit 0
AT=$(dirname "$QK")/kv_qk_attend
[ -x "$AT" ] || { echo "(bench/kv_qk_attend not built: cmake --build build --target kv_qk_attend)"; exit 0; }
echo
echo "Attention step alone (bench/kv_qk_attend: one token, one KV head, one thread, thread CPU time; best of 7 alternated rounds of 20 calls)"
echo
echo "| KV | head_dim x group | depth | float Q.K us | int8 Q.K us | float / int8 |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for t in $TYPES; do
    for s in $SHAPES; do
        for d in $ADEPTHS; do
            "$AT" "$d" "${s%x*}" "${s#*x}" "$t" 7 20 >"$TMP/a" 2>&1 || { echo "| $t | $s | $d | failed | | |"; continue; }
            echo "| $t | $s | $d | $(sed -n 's/^best_float_us //p' "$TMP/a") | $(sed -n 's/^best_int8_us //p' "$TMP/a") | $(sed -n 's/^ratio //p' "$TMP/a") |"
        done
    done
done
echo
echo "kernel variant: $(sed -n 's/^variant \([a-z0-9]*\),.*/\1/p' "$TMP/a")"
