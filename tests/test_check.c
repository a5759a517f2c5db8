/*
 * test_check.c — the test helpers themselves: check_done fails a test that
 * ran no checks, and check_variants_ran fails a kernel test in which no
 * SIMD variant of the host architecture ran (unless the CPU is declared
 * to have none with PETREL_EXPECT_VARIANTS=none).
 */
#include "check.h"
#include "cpu_variants.h"

int main(void) {
    /* nothing checked yet: check_done must say so and fail */
    const int rc_empty = check_done("check (empty on purpose)");

    bool only_ref[PT_CPU_VARIANT_COUNT] = {0};
    only_ref[PT_CPU_REF] = true;
    unsetenv("PETREL_EXPECT_VARIANTS");
    int before = check_failed_;
    check_variants_ran("check (only ref on purpose)", only_ref);
    const int fails_only_ref = check_failed_ - before;
    setenv("PETREL_EXPECT_VARIANTS", "none", 1);
    before = check_failed_;
    check_variants_ran("check (only ref, declared)", only_ref);
    const int fails_declared = check_failed_ - before;
    unsetenv("PETREL_EXPECT_VARIANTS");
    bool simd[PT_CPU_VARIANT_COUNT] = {0};
    simd[PT_CPU_REF] = true;
    simd[PT_CPU_REF + 1] = true; /* the first SIMD variant of this architecture */
    before = check_failed_;
    check_variants_ran("check (a SIMD variant)", simd);
    const int fails_simd = check_failed_ - before;
    /* those failures were the point: count only what follows */
    check_failed_ = 0;
    check_passed_ = 0;

    CHECK(rc_empty == 1, "check_done passed a test that ran no checks");
#if defined(__x86_64__) || defined(__aarch64__)
    CHECK(fails_only_ref == 1, "only the reference variant ran: %d failures, want 1", fails_only_ref);
#endif
    CHECK(fails_declared == 0, "PETREL_EXPECT_VARIANTS=none and only ref ran: %d failures", fails_declared);
    CHECK(fails_simd == 0, "a SIMD variant ran, yet %d failures", fails_simd);
    return check_done("check");
}
