/*
 * cpu_variants.h — for the kernel tests that loop over CPU variants: print
 * which variants ran and which were skipped because this CPU lacks them,
 * and fail when no SIMD variant ran on x86-64 or arm64, so a detection
 * failure cannot pass as "only the reference path to test". A CPU that
 * truly has none (an x86-64 without AVX2, an arm64 without dotprod such as
 * the Cortex-A53) says so with PETREL_EXPECT_VARIANTS=none, the convention
 * test_cpu_features and test_arm64_qemu.sh already use.
 */
#ifndef PETREL_TEST_CPU_VARIANTS_H
#define PETREL_TEST_CPU_VARIANTS_H

#include <stdbool.h>

#include "check.h"
#include "cpu_features.h"

static inline void check_variants_ran(const char *suite, const bool ran[PT_CPU_VARIANT_COUNT]) {
    bool any_simd = false;
    printf("%s: variants ran:", suite);
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (ran[v]) printf(" %s", pt_cpu_variant_name((pt_cpu_variant)v));
    printf("; skipped (not available on this CPU):");
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++)
        if (!ran[v]) printf(" %s", pt_cpu_variant_name((pt_cpu_variant)v));
    printf("\n");
    for (int v = PT_CPU_REF + 1; v < PT_CPU_VARIANT_COUNT; v++) any_simd = any_simd || ran[v];
#if defined(__x86_64__) || defined(__aarch64__)
    const char *expect = getenv("PETREL_EXPECT_VARIANTS");
    if (expect && strcmp(expect, "none") == 0)
        CHECK(!any_simd, "%s: PETREL_EXPECT_VARIANTS=none, yet a SIMD variant ran", suite);
    else
        CHECK(any_simd, "%s: no SIMD kernel variant ran, only the plain C reference "
                        "(PETREL_EXPECT_VARIANTS=none on a CPU that has none)", suite);
#else
    (void)any_simd;
#endif
}

#endif
