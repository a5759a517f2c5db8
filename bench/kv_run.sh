#!/usr/bin/env bash
# kv_run.sh — decode speed with each KV cache type at several context
# depths, with and without a RAM budget that puts most of the cache on
# disk, side by side with llama.cpp's q8_0 KV cache (llama-bench -ctk q8_0
# -ctv q8_0 at the same depths), printed as a markdown table with ratios.
#
#   bench/kv_run.sh [-m MODEL] [-d "1024 4096 8192"] [-n N_GEN] [-r REPS]
#                   [-t THREADS] [-b BUDGET_MB] [-k "f32 f16 q8 q8f8"]
#                   [-c "q8f8"] [-C "4096"] [-R ROUNDS]
#
# Per type and depth: petrel bench -p 0 -n N_GEN -d DEPTH (decode t/s after
# DEPTH tokens of context), without a budget and with --kv-ram BUDGET_MB
# (default 2: a few pages of the cache; at 1k tokens of f32 that is under
# a tenth of it) in a fresh spill directory; the prefetch hit rate is
# hits / (hits + stalls) over the whole run (depth prefill included), from
# the engine's counters (bench's "kv" line on stderr); peak RSS is
# /usr/bin/time's maximum resident set of the bench process (model,
# scratch and cache together). Load average before and after goes with the
# table: the machine may be shared, and decode speed moves with its load.
#
# Then the cold page cache (bench/kv_cold.c, types -c at depths -C): one
# process fills a context with the budget and one without, decodes on
# them alternately for ROUNDS rounds of N_GEN tokens (-R, default 3: the
# warm / none ratio is the median round's, so a shared machine's load
# changes fall on both alike), then decodes with the budget where the page
# cache is dropped before every token, so each spilled page comes from
# the storage device. With the warm figures go the bytes a warm token
# moved through read and write calls (the spill file's read-backs and
# write-outs; pages read in place through the mapping are not counted),
# which the machine's load does not change. Dropping the page cache needs root; without it that
# table says so. -k "" skips the first table (and llama-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${PETREL_SMOLLM2:-$HOME/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf}
DEPTHS="1024 4096 8192" NG=32 REPS=2 TH=2 BUDGET=2 TYPES="f32 f16 q8 q8f8" COLD_TYPES="q8f8" COLD_DEPTH=4096 ROUNDS=3
while getopts "m:d:n:r:t:b:k:c:C:R:" o; do
    case $o in
    m) MODEL=$OPTARG ;; d) DEPTHS=$OPTARG ;; n) NG=$OPTARG ;; r) REPS=$OPTARG ;;
    t) TH=$OPTARG ;; b) BUDGET=$OPTARG ;; k) TYPES=$OPTARG ;; c) COLD_TYPES=$OPTARG ;; C) COLD_DEPTH=$OPTARG ;; R) ROUNDS=$OPTARG ;;
    *) echo "usage: $0 [-m MODEL] [-d DEPTHS] [-n N_GEN] [-r REPS] [-t THREADS] [-b BUDGET_MB] [-k TYPES] [-c COLD_TYPES] [-C COLD_DEPTHS] [-R ROUNDS]" >&2; exit 2 ;;
    esac
done
BIN=${PETREL_BIN:-build/petrel}
[ -x "$BIN" ] || { echo "build petrel first ($BIN)" >&2; exit 1; }
LB=$(bash bench/build_llamacpp.sh llama-bench 2>/dev/null) || LB=
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ts_of() { python3 -c 'import json,sys; print("%.2f" % json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["avg_ts"])' "$1"; }
rss_of() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }
# one petrel run: TYPE DEPTH [BUDGET] -> "t/s rss_kb hit%"
petrel_run() {
    local extra=()
    [ -n "${3:-}" ] && { rm -rf "$TMP/spill"; extra=(--kv-ram "$3" --kv-spill-dir "$TMP/spill"); }
    /usr/bin/time -v "$BIN" bench -m "$MODEL" -p 0 -n "$NG" -d "$2" -r "$REPS" -t "$TH" -o jsonl \
        --kv-type "$1" "${extra[@]}" >"$TMP/out" 2>"$TMP/err" || { echo "petrel failed: $(tail -2 "$TMP/err")" >&2; echo "- - -"; return; }
    local hit=-
    if [ -n "${3:-}" ]; then
        hit=$(sed -n 's/.* hits \([0-9]*\) stalls \([0-9]*\)$/\1 \2/p' "$TMP/err" | tail -1 |
              awk '{ t = $1 + $2; if (t) printf "%.1f", 100 * $1 / t; else print "-" }')
    fi
    echo "$(ts_of "$TMP/out") $(rss_of "$TMP/err") $hit"
}
llama_run() {
    [ -n "$LB" ] || { echo "- -"; return; }
    /usr/bin/time -v "$LB" -m "$MODEL" -p 0 -n "$NG" -d "$1" -r "$REPS" -t "$TH" -ctk q8_0 -ctv q8_0 -fa 1 \
        -o jsonl >"$TMP/lout" 2>"$TMP/lerr" || { echo "- -"; return; }
    echo "$(ts_of "$TMP/lout") $(rss_of "$TMP/lerr")"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
mib() { awk -v k="$1" 'BEGIN { if (k + 0 > 0) printf "%.0f", k / 1024; else print "-" }'; }

load0=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -z "$TYPES" ]; then DEPTHS=; fi
echo "model: $(basename "$MODEL"); threads $TH; decode of $NG tokens after DEPTH, $REPS reps; budget $BUDGET MiB"
echo "petrel: git $(git rev-parse --short HEAD 2>/dev/null || echo ?); llama.cpp: ${LB:-not built}"
echo
echo "| KV | depth | petrel t/s | petrel t/s, --kv-ram $BUDGET | spill / none | prefetch hits | peak RSS MiB (none / budget) | llama.cpp q8_0 t/s | llama RSS MiB | petrel / llama (none) | petrel / llama (budget) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
declare -A LL
for d in $DEPTHS; do LL[$d]=$(llama_run "$d"); done
for t in $TYPES; do
    for d in $DEPTHS; do
        read -r ts0 rss0 _ <<<"$(petrel_run "$t" "$d")"
        read -r ts1 rss1 hit <<<"$(petrel_run "$t" "$d" "$BUDGET")"
        read -r lts lrss <<<"${LL[$d]}"
        echo "| $t | $d | $ts0 | $ts1 | $(ratio "$ts1" "$ts0") | ${hit}% | $(mib "$rss0") / $(mib "$rss1") | $lts | $(mib "$lrss") | $(ratio "$ts0" "$lts") | $(ratio "$ts1" "$lts") |"
    done
done
echo
echo "load average (1, 5, 15 min): $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"

[ -n "$COLD_TYPES" ] || exit 0
COLD=${KV_COLD_BIN:-$(dirname "$BIN")/bench/kv_cold}
echo
echo "Warm and cold page cache: $ROUNDS alternate rounds of $NG tokens with and without budget $BUDGET MiB, then $NG with the page cache dropped before each token, one call a token (bench/kv_cold)"
echo
if [ ! -x "$COLD" ]; then echo "(bench/kv_cold not built: cmake --build build --target kv_cold)"; exit 0; fi
if [ ! -w /proc/sys/vm/drop_caches ]; then echo "(not measured: dropping the page cache needs root)"; exit 0; fi
echo "| KV | depth | t/s, no budget | t/s, spilled, page cache warm | warm / none (median round) | rounds' warm / none | KiB read / written a warm token | t/s, spilled, page cache dropped before each token | cold / none | first cold token ms | prefetch hits |"
echo "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
for d in $COLD_DEPTH; do
    for t in $COLD_TYPES; do
        rm -rf "$TMP/spill"; mkdir -p "$TMP/spill"
        "$COLD" "$MODEL" "$d" "$NG" "$TH" "$BUDGET" "$t" "$TMP/spill" "$ROUNDS" >"$TMP/cold" 2>"$TMP/cerr" \
            || { echo "| $t | $d | kv_cold failed: $(tail -1 "$TMP/cerr") | | | | | | | | |"; continue; }
        w=$(sed -n 's/^warm_tps //p' "$TMP/cold") c=$(sed -n 's/^cold_tps //p' "$TMP/cold")
        n=$(sed -n 's/^none_tps //p' "$TMP/cold") f=$(sed -n 's/^cold_first_ms //p' "$TMP/cold")
        med=$(sed -n 's/^ratio_median //p' "$TMP/cold")
        rr=$(awk '/^round / { printf "%s%.2f", s, $4 / $6; s = " " }' "$TMP/cold")
        io=$(awk '/^warm_io_per_token / { if ($2 < 0) print "-"; else printf "%.0f / %.0f", $2 / 1024, $3 / 1024 }' "$TMP/cold")
        hit=$(sed -n 's/.* hits \([0-9]*\) stalls \([0-9]*\)$/\1 \2/p' "$TMP/cold" |
              awk '{ t = $1 + $2; if (t) printf "%.1f%%", 100 * $1 / t; else print "-" }')
        echo "| $t | $d | $n | $w | $med | $rr | ${io:--} | $c | $(ratio "$c" "$n") | $f | $hit |"
    done
done
echo
echo "load average (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg) at the end"
