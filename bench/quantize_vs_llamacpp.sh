#!/usr/bin/env bash
# quantize_vs_llamacpp.sh — petrel quantize against llama.cpp's
# llama-quantize on the real SmolLM2-135M, type by type, and whether
# llama.cpp loads and runs petrel's files.
#
#   bench/quantize_vs_llamacpp.sh [TYPE...]     (default: every type petrel writes)
#
# The model petrel ships ($PETREL_SMOLLM2, else tools/fetch_model.py's) is
# Q4_1 already, so the float input both tools quantize is made first:
# llama-quantize --allow-requantize MODEL F16 (its dequantization of the
# Q4_1 blocks, rounded to F16; the tied token_embd is Q8_0 in that file,
# llama.cpp's own choice, and is converted by both from there). petrel
# quantize --allow-requantize makes the same F16 file, which is compared
# too. Then, for each TYPE, both tools quantize the F16 file; the files
# are compared whole (cmp) and, when they differ, tensor by tensor
# (tests/gguf_tensors.py). llama-bench then loads petrel's file and runs
# a short prefill and decode. Timings are wall-clock, threads = cores.
# Prints a table; exit 1 when a file differs or llama.cpp fails on one.
#
# Needs: the petrel build ($PETREL_BIN, default build/petrel) and
# llama.cpp (bench/build_llamacpp.sh builds llama-quantize and
# llama-bench into ~/.cache/petrel-bench the first time: ~10 min on 2
# cores). Work files (~1 GB) go to a temporary directory, removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
PETREL=${PETREL_BIN:-build/petrel}
MODEL=${PETREL_SMOLLM2:-$(python3 tools/fetch_model.py)}
LQ=$(bench/build_llamacpp.sh llama-quantize)
LB=$(bench/build_llamacpp.sh llama-bench)
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q6_K Q4_K_M Q4_K_S Q5_K_M Q5_K_S BF16)
nt=$(nproc)
work=$(mktemp -d "${TMPDIR:-/tmp}/petrel-qvl.XXXXXX")
trap 'rm -rf "$work"' EXIT

secs() { # secs CMD... : run quietly, print wall seconds; fail loudly
    local t0 t1
    t0=$(date +%s.%N)
    if ! "$@" >"$work/log" 2>&1; then
        echo "failed: $*" >&2
        tail -5 "$work/log" >&2
        return 1
    fi
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

compare() { # compare A B LABEL : "identical" or the per-tensor count
    if cmp -s "$1" "$2"; then
        echo "identical"
    else
        python3 - "$1" "$2" <<'EOF'
import sys
sys.path.insert(0, "tests")
import gguf_tensors as g
a, b = g.tensors(sys.argv[1])[0], g.tensors(sys.argv[2])[0]
same = sum(1 for x, y in zip(a, b) if x == y)
diff = [x[0] for x, y in zip(a, b) if x != y][:3]
print(f"DIFFERENT: {same} of {len(b)} tensors identical; first differing: {', '.join(diff)}")
EOF
        return 1
    fi
}

echo "model: $MODEL"
echo "llama-quantize: $LQ"
status=0
t_l=$(secs "$LQ" --allow-requantize "$MODEL" "$work/l_F16.gguf" F16 "$nt")
t_p=$(secs "$PETREL" quantize --allow-requantize "$MODEL" "$work/p_F16.gguf" F16 -t "$nt")
r=$(compare "$work/p_F16.gguf" "$work/l_F16.gguf") || status=1
printf '%-6s %-62s llama-quantize %6.2f s  petrel %6.2f s\n' "F16*" "$r" "$t_l" "$t_p"
for t in "${types[@]}"; do
    t_l=$(secs "$LQ" "$work/l_F16.gguf" "$work/l_$t.gguf" "$t" "$nt")
    t_p=$(secs "$PETREL" quantize "$work/l_F16.gguf" "$work/p_$t.gguf" "$t" -t "$nt")
    r=$(compare "$work/p_$t.gguf" "$work/l_$t.gguf") || status=1
    if "$LB" -m "$work/p_$t.gguf" -p 16 -n 4 -r 1 -t "$nt" >"$work/bench.log" 2>&1; then
        loads="llama.cpp runs it"
    else
        loads="LLAMA.CPP FAILS: $(tail -1 "$work/bench.log")"
        status=1
    fi
    printf '%-6s %-62s llama-quantize %6.2f s  petrel %6.2f s  %s\n' "$t" "$r" "$t_l" "$t_p" "$loads"
    rm -f "$work/l_$t.gguf" "$work/p_$t.gguf"
done
echo "(F16*: the float input, from the Q4_1 model with --allow-requantize, made by each tool)"
exit $status
