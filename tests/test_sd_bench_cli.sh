#!/usr/bin/env bash
# test_sd_bench_cli.sh — bench/sd_compare.py (issue 11's benchmark against
# stable-diffusion.cpp) reads both programs' timing lines: a trimmed real
# `sd-cli -v` log of the pinned sd.cpp (tests/data/sd-bench/sdcpp-cli-v.log)
# and petrel imagine's closing stats (petrel-imagine.log); its UNet
# multiply-add walk gives SD 1.5's 859,520,964 UNet parameters; and its
# RESULTS.md writer keeps the LLM part and other CPUs' image sections. No
# timing is asserted and neither program runs.
set -u
SRC=${PETREL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
DATA=$SRC/tests/data/sd-bench
fail=0
check() { # NAME PYTHON-EXPRESSION-THAT-MUST-BE-TRUE (r: the parsed JSON)
    if python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$3"; then
        echo "ok   $1"
    else
        echo "FAIL $1: $3"; fail=1
    fi
}
sd=$(python3 "$SRC/bench/sd_compare.py" --parse sdcpp "$DATA/sdcpp-cli-v.log")
check "sd.cpp stages" 'r["text_s"] == 2.39 and r["sample_s"] == 42.81 and r["decode_s"] == 18.28 and r["load_s"] == 2.25' "$sd"
check "sd.cpp s/step" 'abs(r["step_s"] - 42.81 / 4) < 1e-9' "$sd"
check "sd.cpp steps from its progress bar" 'abs(r["first_step_s"] - 16.77) < 1e-6 and abs(r["later_step_s"] - (4 * 10.70 - 16.77) / 3) < 1e-6' "$sd"
pt=$(python3 "$SRC/bench/sd_compare.py" --parse petrel "$DATA/petrel-imagine.log")
check "petrel stages" 'r["text_s"] == 0.412 and r["sample_s"] == 6.1 and r["step_s"] == 1.525 and r["decode_s"] == 3.2' "$pt"
bad=$(python3 "$SRC/bench/sd_compare.py" --steps 8 --parse petrel "$DATA/petrel-imagine.log")
check "petrel step count checked" '"error" in r' "$bad"
m=$(python3 "$SRC/bench/sd_compare.py" --macs 512)
check "UNet walk: SD 1.5 parameter count" 'r["params"] == 859520964' "$m"
check "UNet MACs at 512" 'r["total"] == r["conv"] + r["linear"] + r["attn"] and 3.9e11 < r["total"] < 4.1e11' "$m"

# the RESULTS.md writer: a new image section replaces only its own CPU's
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
printf '# petrel vs llama.cpp\n\n## Run of X: m\n\n- machine: CPU A (2 CPUs online)\n' > "$TMP/R.md"
python3 - "$SRC/bench" "$TMP/R.md" <<'PY' && echo "ok   RESULTS.md image part" || { echo "FAIL RESULTS.md image part"; fail=1; }
import sys
sys.path.insert(0, sys.argv[1])
import sd_compare as s, compare as c
p = sys.argv[2]
s.write_results(p, "## Image run of 1\n\n- machine: CPU A (2 CPUs online)\n", "CPU A")
s.write_results(p, "## Image run of 2\n\n- machine: CPU B (2 CPUs online)\n", "CPU B")
s.write_results(p, "## Image run of 3\n\n- machine: CPU A (2 CPUs online)\n", "CPU A")
t = open(p).read()
assert t.startswith("# petrel vs llama.cpp\n\n## Run of X"), t
assert t.count(s.IMAGE_HEAD) == 1 and "Image run of 1" not in t, t
assert t.index("Image run of 3") < t.index("Image run of 2"), t
llm, img = c.split_image_part(p)          # compare.py keeps the image part
assert "## Run of X" in llm and "Image run of" not in llm and img.startswith(s.IMAGE_HEAD), (llm, img)
assert [x[:12] for x in c.other_machines(p, "CPU Z")] == ["## Run of X:"]
PY
exit $fail
