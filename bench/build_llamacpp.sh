#!/usr/bin/env bash
# build_llamacpp.sh — build llama.cpp's command-line tools once,
# from the llama.cpp sources vendored in the llama-cpp-python sdist on PyPI
# (the only place the project machines can get them from).
#
#   bench/build_llamacpp.sh          prints the path of the llama-bench binary
#   bench/build_llamacpp.sh TOOL     prints the path of TOOL, one of
#                                    $TOOLS below (llama-quantize,
#                                    llama-perplexity, llama-completion, ...)
#   LLAMA_CUDA=1 bench/build_llamacpp.sh
#                                    the CUDA build instead (-DGGML_CUDA=ON,
#                                    for the GPU machine; needs nvcc): its
#                                    llama-bench alone, for the GPU it is
#                                    built on (CUDA architecture "native"
#                                    where a GPU is present, else 90)
#
# The sdist, its unpacked tree and the build live in the cache directory
# ($PETREL_BENCH_CACHE, default ~/.cache/petrel-bench) and are reused: a second
# call only prints the path. CPU only, Release, -DGGML_NATIVE=ON (the same
# -march=native the harness builds petrel with; AMX off, see below), -j2. Progress goes to stderr,
# the binary's path alone to stdout.
set -euo pipefail

# Pinned: llama-cpp-python 0.3.36 vendors llama.cpp at the commit recorded in
# bench/RESULTS.md (the sdist carries no .git, so llama-bench itself reports
# build_commit "unknown").
LLAMA_CPP_PYTHON_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
CACHE=${PETREL_BENCH_CACHE:-$HOME/.cache/petrel-bench}
JOBS=${BENCH_JOBS:-2}

# On x86-64, -march=native turns on ggml's AMX kernels when the CPU has AMX;
# at this llama.cpp they die with SIGILL (tilezero without a loaded tile
# config, in tinygemm_kernel_amx) on the project's Xeon machines for Q4_0
# and Q4_1, although AMX itself works there. So AMX is switched off and
# every other native feature (AVX-512, VNNI, BF16, ...) kept: explicit -mno-
# flags win over -march=native in GCC and Clang whatever their order.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
flavor=native
extra_flags=""
if [ "$(uname -m)" = x86_64 ] && echo 'int x;' | ${CC:-cc} $NO_AMX -x c -c -o /dev/null - 2>/dev/null; then
    flavor=native-noamx
    extra_flags=$NO_AMX
fi

cuda=OFF
cuda_flags=()
if [ "${LLAMA_CUDA:-}" = 1 ]; then
    flavor=cuda cuda=ON extra_flags=""
    arch=90
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && arch=native
    cuda_flags=(-DCMAKE_CUDA_ARCHITECTURES=$arch)
fi
src=$CACHE/llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION
build=$CACHE/llama.cpp-build-$LLAMA_CPP_PYTHON_VERSION-$flavor
tool=${1:-llama-bench}
# Every tool the benches and tests use, built together: they share libllama
# and ggml, so each one more costs a source file or two, and a cache made
# for one serves all.
TOOLS="llama-bench llama-quantize llama-perplexity llama-completion llama-simple llama-tokenize llama-export-lora"
case " $TOOLS " in
    *" $tool "*) ;;
    *) echo "build_llamacpp: unknown tool '$tool' (one of: $TOOLS)" >&2; exit 2 ;;
esac
bin=$build/bin/$tool

if [ -x "$bin" ]; then
    echo "$bin"
    exit 0
fi

mkdir -p "$CACHE/dl"
tarball=$CACHE/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
if [ ! -f "$tarball" ] && [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]; then
    echo "build_llamacpp: downloading the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist" >&2
    python3 -m pip download --quiet --no-deps --no-binary :all: \
        -d "$CACHE/dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
fi
if [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]; then
    echo "build_llamacpp: unpacking $tarball" >&2
    rm -rf "$src.tmp" && mkdir -p "$src.tmp"
    tar -xzf "$tarball" -C "$src.tmp" --strip-components=1
    rm -rf "$src" && mv "$src.tmp" "$src"
fi

[ "$cuda" = ON ] && TOOLS=llama-bench
echo "build_llamacpp: configuring llama.cpp ($flavor, Release)" >&2
cmake -S "$src/vendor/llama.cpp" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$extra_flags" -DCMAKE_CXX_FLAGS="$extra_flags" \
    -DGGML_CUDA=$cuda "${cuda_flags[@]}" -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENCL=OFF \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=ON >&2
echo "build_llamacpp: building $TOOLS with -j$JOBS (takes a while on 2 cores)" >&2
# shellcheck disable=SC2086
cmake --build "$build" --target $TOOLS -j "$JOBS" >&2
test -x "$bin"
echo "$bin"
