#!/usr/bin/env python3
"""tests/data/tiny_gemma3.gguf: llama.cpp's conversion of the tiny seeded
Gemma 3 checkpoint tests/data/hf-tiny/gemma3 (made by tools/gen_hf_tiny.py,
which also saved transformers' logits beside it, hf-tiny/gemma3/logits).

usage: gen_tiny_gemma3.py [HF_FOLDER] [OUT]

Runs convert_hf_to_gguf.py from the llama.cpp tree vendored in the
llama-cpp-python 0.3.36 sdist (bench/build_llamacpp.sh unpacks it into
~/.cache/petrel-bench; $LLAMA_CPP overrides the path) with --outtype f32,
so the GGUF holds exactly the checkpoint's float32 weights (norm weights
with Gemma's +1 folded in by the converter) and tests/test_logits.c can
hold petrel's logits to transformers' within float rounding. The
checkpoint has 6 layers with sliding_window 8 (llama.cpp's fixed pattern:
layers 0-4 local, 5 global) and prompts longer than the window, so the
local layers' masking and rope base are exercised. Needs torch,
safetensors, sentencepiece and numpy (the converter's imports): never run
in CI.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA_CPP = os.environ.get("LLAMA_CPP", os.path.join(
    os.path.expanduser("~"), ".cache", "petrel-bench", "llama-cpp-python-0.3.36", "vendor",
    "llama.cpp"))


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "hf-tiny", "gemma3")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "tests", "data", "tiny_gemma3.gguf")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(LLAMA_CPP, "gguf-py") + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), folder,
                    "--outfile", out, "--outtype", "f32"], check=True, env=env)
    print(out)


if __name__ == "__main__":
    main()
