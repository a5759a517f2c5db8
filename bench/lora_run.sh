#!/usr/bin/env bash
# lora_run.sh — LoRA adapters in petrel and llama.cpp side by side, printed
# as a markdown table with ratios (issue 16's benchmark):
#   - the time to switch the active set (pt_context_set_loras against
#     llama_set_adapters_lora): median and worst over SWITCHES switches;
#   - prefill (PROMPT tokens in one call) and decode (GEN tokens one by
#     one) tokens/s with 0, 1 and 2 active adapters, and petrel's float
#     path (pt_context_params.lora_f32) with 1;
#   - decode work: process CPU ms per token on one thread, the same
#     configurations (on a loaded machine wall time moves with the other
#     processes; one thread's CPU time much less);
#   - memory per adapter: the engine's report and the resident set
#     (/proc/self/statm) before and after loading each, on both sides.
# The adapters: two seeded random rank-16 GGUF LoRA adapters on all seven
# projections of every layer of the model (TARGETS=attn: on the four
# attention projections only, q k v output), made here by bench/gen_lora
# (the same files for both). Both sides on THREADS threads, the same token
# ids; bench/bench_lora.c and bench/llamacpp_lora_bench.c each report the
# median of ROUNDS rounds (every configuration in turn each round); the
# two run alternately REPS times and the table shows the median of their
# medians. The load average before and after is printed beside it: on a
# shared machine the figures move with it.
#
#   bench/lora_run.sh              (env: MODEL THREADS PROMPT GEN SWITCHES ROUNDS REPS BUILD TARGETS)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=${MODEL:-${PETREL_SMOLLM2:-$HOME/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf}}
THREADS=${THREADS:-2} PROMPT=${PROMPT:-128} GEN=${GEN:-64} SWITCHES=${SWITCHES:-100000} ROUNDS=${ROUNDS:-5} REPS=${REPS:-3}
[ -f "$MODEL" ] || { echo "lora_run: no model at $MODEL (set MODEL or PETREL_SMOLLM2)" >&2; exit 1; }
cmake --build "$BUILD" --target bench_lora gen_lora -j2 >&2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TARGETS=${TARGETS:-all}
"$BUILD/bench/gen_lora" "$MODEL" "$TMP/a.gguf" 16 1 32 0.04 "$TARGETS" >&2
"$BUILD/bench/gen_lora" "$MODEL" "$TMP/b.gguf" 16 2 32 0.04 "$TARGETS" >&2

# the peer's harness, against the llama.cpp build of build_llamacpp.sh
simple=$(bash bench/build_llamacpp.sh llama-simple)
LB=$(dirname "$(dirname "$simple")")
LSRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$LB/CMakeCache.txt")
cc -O2 -c bench/llamacpp_lora_bench.c -I"$LSRC/include" -I"$LSRC/ggml/include" -o "$TMP/lb.o"
c++ "$TMP/lb.o" "$LB/src/libllama.a" "$LB/ggml/src/libggml.a" "$LB/ggml/src/libggml-cpu.a" \
    "$LB/ggml/src/libggml-base.a" -fopenmp -lpthread -lm -o "$TMP/llamacpp_lora_bench"

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$REPS"); do
    "$BUILD/bench/bench_lora" "$MODEL" "$TMP/a.gguf" "$TMP/b.gguf" "$THREADS" "$PROMPT" "$GEN" "$SWITCHES" "$ROUNDS" \
        >"$TMP/petrel.$r"
    "$TMP/llamacpp_lora_bench" "$MODEL" "$TMP/a.gguf" "$TMP/b.gguf" "$THREADS" "$PROMPT" "$GEN" "$SWITCHES" "$ROUNDS" \
        >"$TMP/llama.$r"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

python3 - "$TMP" "$REPS" "$load0" "$load1" "$cpu" "$THREADS" "$PROMPT" "$GEN" "$SWITCHES" "$ROUNDS" "$(basename "$MODEL")" "$TARGETS" <<'PY'
import statistics, sys
tmp, reps, load0, load1, cpu, threads, prompt, gen, switches, rounds, model, targets = sys.argv[1:]
def read(side):
    runs = []
    for r in range(1, int(reps) + 1):
        d = {}
        for line in open(f"{tmp}/{side}.{r}"):
            f = line.split()
            d[" ".join(f[:-1])] = float(f[-1])
        runs.append(d)
    return {k: statistics.median(run[k] for run in runs) for k in runs[0]}
p, l = read("petrel"), read("llama")
def row(name, key, unit=""):
    a, b = p.get(key), l.get(key)
    ratio = f"{a / b:.2f}x" if a and b else "-"
    fa = f"{a:.2f}{unit}" if a is not None else "-"
    fb = f"{b:.2f}{unit}" if b is not None else "-"
    print(f"| {name} | {fa} | {fb} | {ratio} |")
where = "the four attention projections" if targets == "attn" else "all seven projections"
print(f"LoRA: {model}, two random rank-16 adapters on {where}, {threads} threads, "
      f"prompt {prompt}, generate {gen}, {switches} switches, median of {reps} runs x {rounds} rounds")
print(f"CPU: {cpu}; load average before {load0}, after {load1}")
print()
print("| | petrel | llama.cpp | petrel / llama.cpp |")
print("|---|---|---|---|")
for cfg, name in (("none", "no adapter"), ("a", "1 adapter"), ("ab", "2 adapters")):
    row(f"prefill t/s, {name}", f"prefill {cfg}")
for cfg, name in (("none", "no adapter"), ("a", "1 adapter"), ("ab", "2 adapters")):
    row(f"decode t/s, {name}", f"decode {cfg}")
row("prefill t/s, 1 adapter, petrel's float path", "prefill a_f32")
row("decode t/s, 1 adapter, petrel's float path", "decode a_f32")
for cfg, name in (("none", "no adapter"), ("a", "1 adapter"), ("ab", "2 adapters")):
    row(f"decode CPU ms/token (1 thread), {name}", f"decode_cpu_ms {cfg}")
row("decode CPU ms/token (1 thread), 1 adapter, petrel's float path", "decode_cpu_ms a_f32")
row("switch time, median (µs)", "switch_us median")
row("switch time, worst (µs)", "switch_us worst")
print()
print("| with 1 adapter / without | petrel | llama.cpp |")
print("|---|---|---|")
for k in ("prefill", "decode"):
    print(f"| {k} | {p[k + ' a'] / p[k + ' none']:.2f} | {l[k + ' a'] / l[k + ' none']:.2f} |")
print(f"| decode, petrel's float path | {p['decode a_f32'] / p['decode none']:.2f} | |")
print(f"| decode CPU time per token (1 thread; above 1: slower) | {p['decode_cpu_ms a'] / p['decode_cpu_ms none']:.3f} | "
      f"{l['decode_cpu_ms a'] / l['decode_cpu_ms none']:.3f} |")
print(f"| decode CPU time per token, petrel's float path | {p['decode_cpu_ms a_f32'] / p['decode_cpu_ms none']:.3f} | |")
print()
mib = 1024.0
print("| memory per adapter (MiB) | petrel | llama.cpp |")
print("|---|---|---|")
print(f"| engine's report (pt_lora_info.bytes) | {p['lora_bytes a'] / 2**20:.2f} | |")
print(f"| resident set growth, loading A | {(p['rss_kib a'] - p['rss_kib base']) / mib:.2f} | "
      f"{(l['rss_kib a'] - l['rss_kib base']) / mib:.2f} |")
print(f"| resident set growth, loading B | {(p['rss_kib b'] - p['rss_kib a']) / mib:.2f} | "
      f"{(l['rss_kib b'] - l['rss_kib a']) / mib:.2f} |")
print(f"| resident set growth over the switches | {(p['rss_kib switched'] - p['rss_kib preswitch']) / mib:.2f} | |")
PY
