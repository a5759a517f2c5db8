/*
 * opencl_test.h — opening the OpenCL device in the opencl tests. No
 * usable device is a failure, not a skip: only PETREL_NO_OPENCL=1 (a
 * machine known to have no OpenCL platform) turns it into a pass that
 * says so. Compiled programs are kept in $PETREL_OPENCL_CACHE (set by
 * tests/CMakeLists.txt to a folder of the build tree): PoCL compiles
 * slowly.
 */
#ifndef PETREL_OPENCL_TEST_H
#define PETREL_OPENCL_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "sd_opencl.h"

static inline const char *ocl_test_cache(void) {
    const char *c = getenv("PETREL_OPENCL_CACHE");
    return c && *c ? c : NULL;
}

/* No usable device: exit 1 (failure) normally, 0 under PETREL_NO_OPENCL=1. */
static inline void ocl_test_no_device(const char *suite, const char *why) {
    const char *no = getenv("PETREL_NO_OPENCL");
    if (no && strcmp(no, "1") == 0) {
        printf("%s: no OpenCL device (%s); PETREL_NO_OPENCL=1 says none is expected\n", suite, why);
        exit(0);
    }
    fprintf(stderr, "%s: FAILED: no usable OpenCL device: %s (install pocl-opencl-icd, or set "
            "PETREL_NO_OPENCL=1 on a machine without OpenCL)\n", suite, why);
    exit(1);
}

/* Device 0 as the LLM's backend, or exit (ocl_test_no_device). */
static inline pt_device *ocl_test_open(const char *suite) {
    pt_device *d = NULL;
    pt_error err = {0};
    if (pt_device_opencl_open(0, ocl_test_cache(), &d, &err) != PT_OK) ocl_test_no_device(suite, err.msg);
    return d;
}

/* Device 0 for the image graphs (sd_opencl.h), or exit. */
static inline sd_ocl *ocl_test_open_sd(const char *suite) {
    sd_ocl *d = NULL;
    pt_error err = {0};
    if (sd_ocl_open(0, ocl_test_cache(), &d, &err) != PT_OK) ocl_test_no_device(suite, err.msg);
    return d;
}

/* The op tests' random numbers: xorshift64, each test seeds its own
 * sequence (ocl_test_rng) so its measured tolerances stay reproducible. */
static uint64_t ocl_test_rng = 0x9e3779b97f4a7c15ull;

static inline float frand(void) { /* uniform in [-1, 1) */
    ocl_test_rng ^= ocl_test_rng << 13;
    ocl_test_rng ^= ocl_test_rng >> 7;
    ocl_test_rng ^= ocl_test_rng << 17;
    return (float)((ocl_test_rng >> 40) * (1.0 / (1 << 23))) - 1.0f;
}

static inline int irand(int lo, int hi) { /* [lo, hi] */
    return lo + (int)((frand() + 1.0f) * 0.5f * (float)(hi - lo + 1)) % (hi - lo + 1);
}

static inline float *rand_vec(size_t n, float scale) {
    float *v = malloc(n * sizeof *v + 4);
    for (size_t i = 0; i < n; i++) v[i] = frand() * scale;
    return v;
}

#endif
