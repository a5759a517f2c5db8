#!/usr/bin/env bash
# setup.sh — install build dependencies and build petrel.
#   Debian/Ubuntu: apt-get (with sudo when not root); Termux: pkg.
#   --test also installs what the test suite needs (tmux for the app tests,
#   openssl and script(1) for test_pull's self-signed HTTPS server and pty,
#   the aarch64 cross compiler and qemu for the arm64 kernel tests, clang
#   and its libFuzzer runtime for tools/fuzz.sh, libsixel-bin's sixel2png
#   for the terminal picture tests, xvfb, xterm, imagemagick and x11-utils
#   for the real-terminal one, tests/test_xterm_sixel.sh; PoCL, an OpenCL
#   device on the CPU, and clinfo for the OpenCL tests; python3-numpy for
#   the demo image model's evaluation, tests/test_demo_eval.sh).
#   BUILD_DIR (default build) and CMAKE_ARGS may be set by the caller.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES="build-essential cmake pkg-config libpcre2-dev libncurses-dev libcjson-dev libutf8proc-dev libstb-dev libsixel-dev libchafa-dev libglib2.0-dev zlib1g-dev libcurl4-openssl-dev libssl-dev ocl-icd-opencl-dev opencl-headers python3 python3-pip"
DEBIAN_TEST_PACKAGES="tmux openssl libsixel-bin xterm xvfb imagemagick x11-utils gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user clang-14 libclang-rt-14-dev pocl-opencl-icd clinfo python3-numpy"
TERMUX_PACKAGES="clang cmake make pkg-config pcre2 ncurses libcjson utf8proc stb libsixel chafa zlib libcurl openssl ocl-icd opencl-headers python"
TERMUX_TEST_PACKAGES="tmux openssl-tool util-linux python-numpy"
if [ "${1:-}" = "--test" ]; then
    DEBIAN_PACKAGES="$DEBIAN_PACKAGES $DEBIAN_TEST_PACKAGES"
    TERMUX_PACKAGES="$TERMUX_PACKAGES $TERMUX_TEST_PACKAGES"
fi

install_deps() {
    if [ -n "${TERMUX_VERSION:-}" ] || [ -d /data/data/com.termux ]; then
        pkg install -y $TERMUX_PACKAGES
        return
    fi
    if ! command -v apt-get >/dev/null; then
        echo "setup: no apt-get or pkg found; install by hand: $DEBIAN_PACKAGES" >&2
        return
    fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    # Only ask apt when something is missing (keeps repeated runs fast).
    local missing=""
    for p in $DEBIAN_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
    fi
}

install_deps
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc 2>/dev/null || echo 2)"
