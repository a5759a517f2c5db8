#!/usr/bin/env bash
# build_sdcpp.sh — build stable-diffusion.cpp's command-line program (sd-cli)
# once, from the stable-diffusion.cpp sources vendored in the
# stable-diffusion-cpp-python sdist on PyPI (the only place the project
# machines can get them from).
#
#   bench/build_sdcpp.sh          prints the path of the sd-cli binary
#   SDCPP_CUDA=1 bench/build_sdcpp.sh
#                                 the CUDA build instead (-DSD_CUDA=ON, for
#                                 the GPU machine; needs nvcc; CUDA
#                                 architecture "native" where a GPU is
#                                 present, else 90)
#   bench/build_sdcpp.sh --src    prints the path of the unpacked sources
#                                 (bench/sdcpp_vocab.py reads the CLIP
#                                 vocabulary from there; no build)
#
# The sdist, its unpacked tree and the build live in the cache directory
# ($PETREL_BENCH_CACHE, default ~/.cache/petrel-bench) and are reused: a second
# call only prints the path. CPU only, Release, -DGGML_NATIVE=ON (the same
# -march=native the harness builds petrel with), ggml's defaults otherwise
# (OpenMP, llamafile sgemm, F16C/FMA/AVX-512 as the CPU has them), -j2.
# Progress goes to stderr, the path alone to stdout.
#
# Only the sd-cli target is built (SD_BUILD_EXAMPLES=ON, its default when
# stand-alone). WebP/WebM image output is switched off: it only adds two
# image libraries to compile and is never on the timed path (we write PNG).
# AMX needs no switch here, unlike bench/build_llamacpp.sh: ggml's AMX
# kernels live in an "extra buffer type" that only a program asking for it
# uses, and stable-diffusion.cpp at this version never asks (no
# ggml_backend_dev_get_extra_bufts in its sources), so they never run.
set -euo pipefail

# Pinned: stable-diffusion-cpp-python 0.4.7 (the newest on PyPI on
# 2026-11-25) vendors stable-diffusion.cpp and its ggml; the sdist carries no
# .git, so sd-cli reports its version as "unknown".
SDCPP_PYTHON_VERSION=${SDCPP_PYTHON_VERSION:-0.4.7}
CACHE=${PETREL_BENCH_CACHE:-$HOME/.cache/petrel-bench}
JOBS=${BENCH_JOBS:-2}

src=$CACHE/stable-diffusion-cpp-python-$SDCPP_PYTHON_VERSION
sdsrc=$src/vendor/stable-diffusion.cpp
flavor=native cuda=OFF
cuda_flags=()
if [ "${SDCPP_CUDA:-}" = 1 ]; then
    flavor=cuda cuda=ON
    arch=90
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && arch=native
    cuda_flags=(-DCMAKE_CUDA_ARCHITECTURES=$arch)
fi
build=$CACHE/sdcpp-build-$SDCPP_PYTHON_VERSION-$flavor
bin=$build/bin/sd-cli

if [ "${1:-}" != --src ] && [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi

mkdir -p "$CACHE/dl"
tarball=$CACHE/dl/stable_diffusion_cpp_python-$SDCPP_PYTHON_VERSION.tar.gz
if [ ! -f "$tarball" ] && [ ! -f "$sdsrc/CMakeLists.txt" ]; then
    echo "build_sdcpp: downloading the stable-diffusion-cpp-python $SDCPP_PYTHON_VERSION sdist" >&2
    python3 -m pip download --quiet --no-deps --no-binary :all: \
        -d "$CACHE/dl" "stable-diffusion-cpp-python==$SDCPP_PYTHON_VERSION" >&2
fi
if [ ! -f "$sdsrc/CMakeLists.txt" ]; then
    echo "build_sdcpp: unpacking $tarball" >&2
    rm -rf "$src.tmp" && mkdir -p "$src.tmp"
    tar -xzf "$tarball" -C "$src.tmp" --strip-components=1
    rm -rf "$src" && mv "$src.tmp" "$src"
fi
if [ "${1:-}" = --src ]; then
    echo "$sdsrc"
    exit 0
fi

echo "build_sdcpp: configuring stable-diffusion.cpp ($flavor, Release)" >&2
cmake -S "$sdsrc" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DSD_BUILD_EXAMPLES=ON \
    -DSD_WEBP=OFF -DSD_WEBM=OFF \
    -DSD_CUDA=$cuda "${cuda_flags[@]}" -DSD_METAL=OFF -DSD_VULKAN=OFF -DSD_OPENCL=OFF \
    -DSD_BUILD_SHARED_LIBS=OFF -DBUILD_SHARED_LIBS=OFF >&2
echo "build_sdcpp: building sd-cli with -j$JOBS (takes a while on 2 cores)" >&2
cmake --build "$build" --target sd-cli -j "$JOBS" >&2
test -x "$bin"
echo "$bin"
