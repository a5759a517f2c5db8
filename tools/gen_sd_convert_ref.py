#!/usr/bin/env python3
"""gen_sd_convert_ref.py — what tools/sd_to_gguf.py writes for the tiny
image model, as references for `petrel convert` (tests/test_convert_sd.sh):
the diffusers folder tests/data/sd-tiny/model at --type f16 and q8_0, and
its single-file LDM copy tests/data/sd-tiny-ldm.safetensors at f32 and
q4_0 (every type and both sources; no --taesd, --tokenizer or other
options: what pt_convert_file does).

Writes tests/data/sd-tiny/convert-ref/<source>-<type>.json: every
metadata key with its type and value, every tensor's name, ne, type and
sha256 of its data bytes, in file order (tools/gen_hf_tiny.py's format,
checked by tests/hf_ref_check.py). Needs numpy, gguf and safetensors;
never run in CI, the outputs are committed.

Run from the repository root:  python3 tools/gen_sd_convert_ref.py
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_hf_tiny import reference  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data")
OUT = os.path.join(DATA, "sd-tiny", "convert-ref")


def main():
    os.makedirs(OUT, exist_ok=True)
    sources = {"diffusers": os.path.join(DATA, "sd-tiny", "model"),
               "ldm": os.path.join(DATA, "sd-tiny-ldm.safetensors")}
    with tempfile.TemporaryDirectory() as tmp:
        for name, types in (("diffusers", ("f16", "q8_0")), ("ldm", ("f32", "q4_0"))):
            src = sources[name]
            for t in types:
                out = os.path.join(tmp, f"{name}-{t}.gguf")
                subprocess.run([sys.executable, os.path.join(ROOT, "tools", "sd_to_gguf.py"), src, out, "--type", t],
                               check=True)
                with open(os.path.join(OUT, f"{name}-{t}.json"), "w", encoding="utf-8") as f:
                    json.dump(reference(out), f, indent=0, ensure_ascii=False)
                    f.write("\n")


if __name__ == "__main__":
    main()
