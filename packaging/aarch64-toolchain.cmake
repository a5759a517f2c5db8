# Cross-compiling petrel for arm64 Linux with Debian's toolchain.
#
#   apt-get install gcc-aarch64-linux-gnu qemu-user
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=packaging/aarch64-toolchain.cmake
#
# Programs built this way run on the build machine through qemu-aarch64
# (CMAKE_CROSSCOMPILING_EMULATOR, so ctest works) with `-cpu max`, an
# emulated CPU that has NEON dotprod and i8mm. PETREL_QEMU_CPU picks another
# (cortex-a53: no dotprod; cortex-a76: dotprod without i8mm).
#
# The full build also needs the arm64 builds of its libraries (multiarch:
# dpkg --add-architecture arm64; apt-get install libpcre2-dev:arm64
# libncursesw5-dev:arm64); tests/test_arm64_qemu.sh builds only the kernel
# tests, which need nothing but libc.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(PETREL_CROSS_TRIPLE aarch64-linux-gnu CACHE STRING "GNU triple of the cross toolchain")
set(PETREL_QEMU_CPU max CACHE STRING "qemu-aarch64 -cpu model for running tests")

set(CMAKE_C_COMPILER ${PETREL_CROSS_TRIPLE}-gcc)

# headers and libraries come from the target sysroot, programs from the host
set(CMAKE_FIND_ROOT_PATH /usr/${PETREL_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must report the arm64 libraries, not the host's
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${PETREL_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")

# -L: where qemu finds the arm64 dynamic loader and libc
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -cpu ${PETREL_QEMU_CPU} -L /usr/${PETREL_CROSS_TRIPLE})
