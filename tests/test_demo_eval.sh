# test_demo_eval.sh — issue 12's evaluation of the demo image model, on
# petrel's own pictures, in CI (numpy, no torch).
#
# The whole evaluation (tools/demo_sd/evaluate.py: 136 held-out captions,
# compositions never in a training caption, x seeds 0-3, DDIM 30 steps,
# CFG 6, scored by a colour-mask shape detector) ran on the GPU machine
# for diffusers and for petrel from the same initial latents; its report is
# tools/demo_sd/results/eval.json (the figures in assets/demo-sd/README.md):
# petrel one shape 1.000, two-shape relations 0.841; diffusers 1.000 and
# 0.847; the same verdict on 99.4% of the pictures.
#
# Here petrel draws a subset again (the first 4 one-shape and 12 relation
# captions of that set, seeds 0-3: 64 pictures) and the test asks two things:
#   1. the subset's rates reach issue 12's targets, 0.90 one shape and 0.75
#      relations (measured on it: 1.000 and 0.896 — the margin);
#   2. at least 95% of the 64 pictures get the verdict the recorded
#      evaluation gave them: petrel on this machine draws what was scored,
#      so the report's figures stand for this build. (The engine's float
#      rounding differs by CPU only in the last bits; a verdict flips only
#      where a shape sits on the detector's edge.)
# A broken engine, tokenizer or model fails both: noise has none of the
# named colours, a mis-wired layer draws other compositions.
# In the ASan+UBSan build (PETREL_SANITIZED=1) one relation picture at
# seed 0 is drawn and checked against the record only (a rate of one
# picture says nothing; each takes about 100 s there).
set -u
BIN=${PETREL_BIN:?PETREL_BIN not set}
HERE=$(cd "$(dirname "$0")" && pwd)
unset PETREL_ASSETS   # the bundled model as a fresh clone finds it
python3 -c 'import numpy' 2>/dev/null || { echo "FAIL: the tests' python3 has no numpy (tools/test.sh installs it)"; exit 1; }
EVAL=(python3 "$HERE/../tools/demo_sd/evaluate.py" --petrel "$BIN" --jobs 2 --threads 1
      --expect "$HERE/../tools/demo_sd/results/eval.json")
if [ -n "${PETREL_SANITIZED:-}" ]; then
    "${EVAL[@]}" --take one=0,rel=1 --seeds 0 --min-agree 1.0
else
    "${EVAL[@]}" --take one=4,rel=12 --seeds 0,1,2,3 --min one=0.90,rel=0.75 --min-agree 0.95
fi
rc=$?
[ $rc -eq 0 ] && echo "demo_eval: passed" || echo "FAIL: demo_eval (exit $rc)"
exit $rc
