/*
 * enospc_shim.c — an LD_PRELOAD library for tests/test_pull.sh: a full
 * disk without a small file system. write(2) to a file whose name ends in
 * ".part" (or in $PETREL_ENOSPC_SUFFIX when set: ".tmp" for
 * tests/test_quantize.sh) succeeds until PETREL_ENOSPC_AFTER bytes have
 * gone to such files in this process (the last write may be short), then
 * fails with ENOSPC.
 * Every other write passes through. The byte counter is the one piece of
 * state (a preload shim has nowhere else to keep it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_llong part_bytes;

ssize_t write(int fd, const void *buf, size_t n) {
    ssize_t (*real)(int, const void *, size_t) = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, target, sizeof target - 1);
    const char *suffix = getenv("PETREL_ENOSPC_SUFFIX");
    if (!suffix || !*suffix) suffix = ".part";
    const ssize_t sl = (ssize_t)strlen(suffix);
    if (k <= sl || memcmp(target + k - sl, suffix, (size_t)sl) != 0) return real(fd, buf, n);
    const char *env = getenv("PETREL_ENOSPC_AFTER");
    long long limit = env ? atoll(env) : 0;
    long long so_far = atomic_load(&part_bytes);
    if (so_far >= limit) {
        errno = ENOSPC;
        return -1;
    }
    if ((long long)n > limit - so_far) n = (size_t)(limit - so_far);
    ssize_t w = real(fd, buf, n);
    if (w > 0) atomic_fetch_add(&part_bytes, (long long)w);
    return w;
}
