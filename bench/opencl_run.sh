#!/usr/bin/env bash
# opencl_run.sh — petrel on OpenCL against petrel on the CPU (and against
# llama.cpp's CUDA backend when asked), side by side in one run, printed
# as ratios. For the lent GPU machine; with PoCL and a tiny model it is a
# smoke check of the same path.
#
#   bench/opencl_run.sh [MODEL.gguf ...]
#
# Models: the arguments, else the Qwen2.5-1.5B-shaped random-weight Q4_0
# and Q8_0 files of tools/gen_bench_models.py (made on first use; needs
# numpy and gguf). Environment:
#   PETREL_BIN    petrel to run (default build/petrel)
#   PP, TG        prompt and generation lengths (default 512 and 128)
#   REPS          repetitions per test (default 3)
#   DEVICE        the OpenCL device (default opencl:0)
#   THREADS       CPU threads for petrel's CPU run (default: all cores)
#   SKIP_CPU=1    leave out petrel's CPU run (slow for pp512 on small CPUs)
#   LLAMA_CUDA=1  also run llama.cpp's llama-bench with -DGGML_CUDA=ON, built
#                 here once by `LLAMA_CUDA=1 bench/build_llamacpp.sh` (into
#                 $PETREL_BENCH_CACHE, default ~/.cache/petrel-bench; needs
#                 nvcc), all layers on the GPU (-ngl 99), its defaults
#                 otherwise; LLAMA_CUDA_BENCH=PATH uses that binary.
# NVIDIA's OpenCL: when no platform is registered and libnvidia-opencl.so.1
# is present, an ICD file naming it is written to a temporary folder given
# to the loader through OCL_ICD_VENDORS.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PETREL_BIN:-build/petrel}
PP=${PP:-512} TG=${TG:-128} REPS=${REPS:-3} DEVICE=${DEVICE:-opencl:0}
[ -x "$BIN" ] || { echo "opencl_run: $BIN is not built (cmake --build build)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ -z "${OCL_ICD_VENDORS:-}" ] && "$BIN" info --devices | grep -q '^no OpenCL devices'; then
    lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
    if [ -n "$lib" ]; then
        mkdir -p "$TMP/icd"
        echo "$lib" > "$TMP/icd/nvidia.icd"
        export OCL_ICD_VENDORS="$TMP/icd"
        echo "opencl_run: registered NVIDIA's OpenCL ($lib) through OCL_ICD_VENDORS" >&2
    fi
fi
"$BIN" info --devices | head -8 >&2

MODELS=("$@")
if [ ${#MODELS[@]} -eq 0 ]; then
    mapfile -t MODELS < <(python3 tools/gen_bench_models.py qwen2.5-1.5b-q4_0 qwen2.5-1.5b-q8_0)
fi

LLAMA=""
if [ -n "${LLAMA_CUDA_BENCH:-}" ]; then
    LLAMA=$LLAMA_CUDA_BENCH
elif [ "${LLAMA_CUDA:-}" = 1 ]; then
    LLAMA=$(LLAMA_CUDA=1 bash bench/build_llamacpp.sh)
fi

# t/s of pp and tg from a llama-bench style JSON array on stdin: "PP TG"
ts() {
    python3 -c '
import json, sys
rows = json.load(sys.stdin)
pp = [r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0]
tg = [r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0]
print("%.2f %.2f" % (pp[0] if pp else 0, tg[0] if tg else 0))'
}

# a / b as "1.23x", "-" when b was not measured
ratio() { python3 -c "import sys; a, b = sys.argv[1], sys.argv[2]; print('%.2fx' % (float(a) / float(b)) if b != '-' and float(b) > 0 else '-')" "$1" "$2"; }

printf '%-28s %-6s %12s %12s %12s %10s %10s\n' model test "OpenCL t/s" "CPU t/s" "CUDA t/s" "OCL/CPU" "OCL/CUDA"
for m in "${MODELS[@]}"; do
    name=$(basename "$m" .gguf)
    "$BIN" bench -m "$m" -p "$PP" -n "$TG" -r "$REPS" --device "$DEVICE" -o json 2>"$TMP/err" | ts > "$TMP/ocl" ||
        { echo "opencl_run: petrel --device $DEVICE failed: $(cat "$TMP/err")" >&2; exit 1; }
    if grep -q 'OpenCL unavailable' "$TMP/err"; then
        echo "opencl_run: $(cat "$TMP/err")" >&2
        exit 1
    fi
    read -r o_pp o_tg < "$TMP/ocl"
    c_pp=- c_tg=-
    if [ "${SKIP_CPU:-}" != 1 ]; then
        t=()
        [ -n "${THREADS:-}" ] && t=(-t "$THREADS")
        read -r c_pp c_tg < <("$BIN" bench -m "$m" -p "$PP" -n "$TG" -r "$REPS" "${t[@]}" -o json | ts)
    fi
    l_pp=- l_tg=-
    if [ -n "$LLAMA" ]; then
        read -r l_pp l_tg < <("$LLAMA" -m "$m" -p "$PP" -n "$TG" -r "$REPS" -ngl 99 -o json 2>/dev/null | ts)
    fi
    printf '%-28s %-6s %12s %12s %12s %10s %10s\n' "$name" "pp$PP" "$o_pp" "$c_pp" "$l_pp" "$(ratio "$o_pp" "$c_pp")" "$(ratio "$o_pp" "$l_pp")"
    printf '%-28s %-6s %12s %12s %12s %10s %10s\n' "$name" "tg$TG" "$o_tg" "$c_tg" "$l_tg" "$(ratio "$o_tg" "$c_tg")" "$(ratio "$o_tg" "$l_tg")"
done
