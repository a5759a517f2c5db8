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

static inline const char *ocl_test_cache(void) {
    const char *c = getenv("PETREL_OPENCL_CACHE");
    return c && *c ? c : NULL;
}

/* Device 0, or exit: 1 (failure) normally, 0 under PETREL_NO_OPENCL=1. */
static inline pt_device *ocl_test_open(const char *suite) {
    pt_device *d = NULL;
    pt_error err = {0};
    if (pt_device_opencl_open(0, ocl_test_cache(), &d, &err) == PT_OK) return d;
    const char *no = getenv("PETREL_NO_OPENCL");
    if (no && strcmp(no, "1") == 0) {
        printf("%s: no OpenCL device (%s); PETREL_NO_OPENCL=1 says none is expected\n", suite, err.msg);
        exit(0);
    }
    fprintf(stderr, "%s: FAILED: no usable OpenCL device: %s (install pocl-opencl-icd, or set "
            "PETREL_NO_OPENCL=1 on a machine without OpenCL)\n", suite, err.msg);
    exit(1);
}

#endif
