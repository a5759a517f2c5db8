#!/usr/bin/env bash
# quality_table.sh — the KL-divergence table of docs/quality.md: SmolLM2-
# 135M-Instruct quantized by `petrel quantize` to each type, measured by
# llama-perplexity and by `petrel perplexity` against one reference.
#
#   bench/quality_table.sh [WORKDIR]     (default /tmp/petrel-quality)
#
# Steps (files and logs stay in WORKDIR; a step whose output exists is
# skipped, so an interrupted run resumes):
#   1. F16.gguf: the shipped Q4_1 file dequantized to F16 (petrel quantize
#      --allow-requantize): no float checkpoint of SmolLM2 is reachable
#      from the project's machines, so the Q4_1 weights ARE the reference.
#   2. TYPE.gguf for each of $TYPES: petrel quantize F16.gguf TYPE.
#   3. base.bin: llama-perplexity's log-probabilities of F16.gguf on
#      tests/data/perplexity_text.txt (-c $CTX, the first $CHUNKS chunks).
#   4. For F16 and every TYPE, --kl-divergence against base.bin by
#      llama-perplexity and by petrel (its default kernels: int8
#      activations for the Q8_0 / Q4_0 / Q4_1 matrices); for $REF_TYPES
#      also by petrel with PETREL_CPU=ref (the plain C kernels: float
#      activations everywhere). The other types' matrices (Q5_0, Q5_1,
#      the K types) have no int8 kernel: petrel runs them on float
#      activations either way.
#   5. The markdown table on stdout.
# Environment: PETREL_BIN (default build/petrel), PETREL_SMOLLM2 (default
# tools/fetch_model.py's path), CTX (512), CHUNKS (3: the measured positions
# are CHUNKS * (CTX/2 - 1)), THREADS (all cores), TYPES, REF_TYPES.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PETREL_BIN:-build/petrel}
MODEL=${PETREL_SMOLLM2:-$(python3 tools/fetch_model.py)}
LP=$(bash bench/build_llamacpp.sh llama-perplexity)
TEXT=tests/data/perplexity_text.txt
W=${1:-/tmp/petrel-quality}
CTX=${CTX:-512}
CHUNKS=${CHUNKS:-3}
T=${THREADS:-$(nproc)}
TYPES=${TYPES:-"Q8_0 Q6_K Q5_K_M Q5_0 Q4_K_M Q4_1 Q4_0"}
REF_TYPES=${REF_TYPES:-"Q8_0 Q4_1 Q4_0"}
mkdir -p "$W"
log() { echo "quality_table: $*" >&2; }

[ -s "$W/F16.gguf" ] || { log "F16 from $MODEL"; "$BIN" quantize --allow-requantize -t "$T" "$MODEL" "$W/F16.gguf" F16 >&2; }
for t in $TYPES; do
    [ -s "$W/$t.gguf" ] || { log "quantize $t"; "$BIN" quantize -t "$T" "$W/F16.gguf" "$W/$t.gguf" "$t" >&2; }
done
if [ ! -s "$W/base.bin" ]; then
    log "llama-perplexity base (F16, -c $CTX, $CHUNKS chunks)"
    "$LP" -m "$W/F16.gguf" -f "$TEXT" -c "$CTX" -b "$CTX" -t "$T" --chunks "$CHUNKS" --kl-divergence-base "$W/base.bin" \
        >"$W/base.log" 2>&1
fi

# run NAME COMMAND...: the command's stdout+stderr to NAME.log unless done
run() {
    local name=$1
    shift
    if ! grep -q '^Same top p' "$W/$name.log" 2>/dev/null; then
        log "$name"
        "$@" >"$W/$name.log.tmp" 2>&1 && mv "$W/$name.log.tmp" "$W/$name.log"
    fi
}
for t in F16 $TYPES; do
    run "$t.llama" "$LP" -m "$W/$t.gguf" -c "$CTX" -b "$CTX" -t "$T" --kl-divergence-base "$W/base.bin" --kl-divergence
    run "$t.petrel" "$BIN" perplexity -m "$W/$t.gguf" -c "$CTX" -b "$CTX" -t "$T" --kl-divergence-base "$W/base.bin" \
        --kl-divergence
done
for t in $REF_TYPES; do
    run "$t.petrel_ref" env PETREL_CPU=ref "$BIN" perplexity -m "$W/$t.gguf" -c "$CTX" -b "$CTX" -t "$T" \
        --kl-divergence-base "$W/base.bin" --kl-divergence
done

# field LOG PATTERN: "value ± unc" after the pattern's colon
field() { sed -n "s/^$2 *: *\([-0-9.]*\) *± *\([0-9.nan-]*\).*/\1 ± \2/p" "$1" | head -1; }
echo "SmolLM2-135M-Instruct, reference: llama-perplexity on F16.gguf, -c $CTX, $CHUNKS chunks of tests/data/perplexity_text.txt"
echo
echo "| type | MiB | PPL (llama.cpp) | KLD llama.cpp | top-1 llama.cpp | KLD petrel | top-1 petrel | KLD petrel float act. | top-1 petrel float act. |"
echo "|------|----:|----:|----:|----:|----:|----:|----:|----:|"
for t in F16 $TYPES; do
    mib=$(awk -v b="$(stat -c %s "$W/$t.gguf")" 'BEGIN { printf "%.1f", b / 1048576 }')
    ppl=$(field "$W/$t.llama.log" 'Mean PPL(Q)')
    row="| $t | $mib | $ppl"
    for k in llama petrel petrel_ref; do
        if [ -f "$W/$t.$k.log" ]; then
            row="$row | $(field "$W/$t.$k.log" 'Mean    KLD') | $(field "$W/$t.$k.log" 'Same top p') %"
        else
            row="$row | — | —" # no int8 path to switch off: as petrel
        fi
    done
    echo "$row |"
done
