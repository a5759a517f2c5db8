#!/usr/bin/env bash
# test_arm64_qemu.sh — the arm64 kernels on an x86-64 build machine:
# cross-builds the kernel tests (test_qmatmul, test_cpu_features,
# test_threadpool, test_attention, test_ops, test_image_ops,
# test_fmatmul, test_kv_qk) with Debian's aarch64
# toolchain through packaging/aarch64-toolchain.cmake into a temporary
# directory, and runs them under qemu-aarch64 on emulated CPUs with and
# without the int8 extensions:
#   max          dotprod + i8mm: both variants must be detected and pass
#   cortex-a76   dotprod only
#   cortex-a53   neither: the reference path only
# Built twice: with the compiler's intrinsics, and with the inline-assembly
# fallback that older clang uses (-DPT_NEON_FORCE_ASM).
#
# Needs: cmake, gcc-aarch64-linux-gnu (with libc6-dev-arm64-cross),
# qemu-user. A missing tool is a failure, not a skip.
set -euo pipefail

src="${PETREL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}"
cc=aarch64-linux-gnu-gcc
qemu=qemu-aarch64

missing=()
command -v "$cc" > /dev/null || missing+=("$cc (Debian package gcc-aarch64-linux-gnu)")
command -v "$qemu" > /dev/null || missing+=("$qemu (Debian package qemu-user)")
command -v cmake > /dev/null || missing+=("cmake")
if ((${#missing[@]})); then
    echo "test_arm64_qemu: cannot cross-test the arm64 kernels, missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "install: apt-get install gcc-aarch64-linux-gnu qemu-user" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/petrel-arm64.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A small project holding only what the kernel tests link: the kernels
# (quantization, products, attention, graph ops and their NEON builds),
# the thread pool and pt_fail. Static, so qemu needs no arm64 libraries.
cat > "$tmp/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(petrel_arm64_kernels C)
set(CMAKE_C_STANDARD 17)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(SRC "$src")
file(GLOB KERNELS \${SRC}/kernels/cpu/quant*.c \${SRC}/kernels/cpu/qmatmul*.c
     \${SRC}/kernels/cpu/attention.c \${SRC}/kernels/cpu/ops*.c
     \${SRC}/kernels/cpu/image_ops*.c \${SRC}/kernels/cpu/fmatmul.c
     \${SRC}/kernels/cpu/kv_qk*.c \${SRC}/kernels/cpu/kv_codec.c)
add_library(kern STATIC \${KERNELS} \${SRC}/kernels/cpu/cpu_features.c
            \${SRC}/engine/threadpool.c \${SRC}/engine/status.c \${SRC}/engine/matmul.c)
target_include_directories(kern PUBLIC \${SRC}/engine/include \${SRC}/engine
                           \${SRC}/kernels/cpu \${SRC}/tests)
target_compile_options(kern PUBLIC -Wall -Wextra -Werror -D_GNU_SOURCE)
find_package(Threads REQUIRED)
foreach(t qmatmul cpu_features threadpool attention ops image_ops fmatmul kv_qk)
  add_executable(test_\${t} \${SRC}/tests/test_\${t}.c)
  target_link_libraries(test_\${t} PRIVATE kern Threads::Threads m)
  target_link_options(test_\${t} PRIVATE -static)
  # Debian's aarch64 gcc 12.2 crashes (ICE in vect_transform_reduction) on
  # loops reducing with fmax over doubles at -O3, as test_ops's error
  # measures do; the tests' own loops need no vectorizing (the kernels
  # under test keep their flags)
  target_compile_options(test_\${t} PRIVATE -fno-tree-loop-vectorize)
endforeach()
EOF

build() { # name, extra C flags
    cmake -S "$tmp" -B "$tmp/$1" -DCMAKE_TOOLCHAIN_FILE="$src/packaging/aarch64-toolchain.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$2" > "$tmp/$1.log" 2>&1 ||
        { cat "$tmp/$1.log" >&2; echo "test_arm64_qemu: configure ($1) failed" >&2; exit 1; }
    cmake --build "$tmp/$1" -j2 >> "$tmp/$1.log" 2>&1 ||
        { cat "$tmp/$1.log" >&2; echo "test_arm64_qemu: build ($1) failed" >&2; exit 1; }
}

status=0
run() { # build, cpu, expected variants, test
    echo "== $1: $4 on -cpu $2 (expect $3)"
    if ! PETREL_EXPECT_VARIANTS="$3" "$qemu" -cpu "$2" "$tmp/$1/test_$4"; then
        echo "test_arm64_qemu: $4 failed ($1 build, -cpu $2)" >&2
        status=1
    fi
}

build intrin ""
build asm "-DPT_NEON_FORCE_ASM"

# qemu-user shows the host's /proc/cpuinfo, so the expectation comes from
# here, per emulated CPU
run intrin max dotprod,i8mm cpu_features
run intrin cortex-a76 dotprod cpu_features
run intrin cortex-a53 none cpu_features
run intrin max dotprod,i8mm qmatmul
run intrin cortex-a76 dotprod qmatmul
run asm max dotprod,i8mm qmatmul
run intrin max "" threadpool
# attention and ops_simd's silu: on arm64 every variant runs their 4-lane
# generic-vector build (NEON), checked against the scalar references; a CPU
# with the int8 extensions (three variants run it) and one without (ref only)
run intrin max "" attention
run intrin cortex-a53 none attention
run intrin max "" ops
run intrin cortex-a53 none ops
# the image kernels (image_ops_simd.c's 4-lane build, pt_attn_full's NEON
# vfmaq build, fmatmul's NEON fp16 build) bitwise against their scalar
# oracles
run intrin max "" image_ops
run intrin cortex-a53 none image_ops
run intrin max "" fmatmul
# the int8 Q.K kernel (sdot, and its inline-assembly form) bitwise against
# its reference, and the attention kernel on given scores
run intrin max "" kv_qk
run asm cortex-a76 "" kv_qk
run intrin cortex-a53 none kv_qk
exit $status
