/*
 * test_cpu_features.c — kernels/cpu/cpu_features.c: detection agrees with
 * the kernel's own view (/proc/cpuinfo flags on x86-64, "Features" on
 * arm64, when present), variants follow from the flags, and PETREL_CPU
 * forces, refuses and falls back as documented.
 *
 * PETREL_EXPECT_VARIANTS (set by test_arm64_qemu.sh for each emulated CPU)
 * lists the exact set of fast variants the CPU must report, e.g.
 * "dotprod,i8mm", or "none".
 */
#include <stdbool.h>

#include "check.h"
#include "cpu_features.h"

/* The value of the first line of /proc/cpuinfo starting with `key`
 * (e.g. "flags"), as a malloc'd string with spaces around, or NULL. */
static char *cpuinfo_line(const char *key) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return NULL;
    char line[8192];
    char *out = NULL;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        out = malloc(strlen(colon) + 3);
        snprintf(out, strlen(colon) + 3, " %s ", colon + 1);
        char *nl = strchr(out, '\n');
        if (nl) { nl[0] = ' '; nl[1] = 0; }
        break;
    }
    fclose(f);
    return out;
}

static bool has_word(const char *list, const char *word) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s ", word);
    return strstr(list, pat) != NULL;
}

int main(void) {
    pt_cpu c;
    CHECK(pt_cpu_detect_with(&c, NULL) == 0, "plain detect");
    CHECK(c.variant == pt_cpu_best_variant(&c), "default variant is the best");
    CHECK(pt_cpu_has_variant(&c, PT_CPU_REF), "ref always available");
    printf("detected: best %s\n", pt_cpu_variant_name(c.variant));

    /* internal consistency of flags and variants */
    CHECK(!c.avx512vnni || c.avx512f, "VNNI without AVX-512F");
    CHECK(!c.i8mm || c.neon, "i8mm without NEON");
    CHECK(!c.dotprod || c.neon, "dotprod without NEON");
    CHECK(pt_cpu_has_variant(&c, PT_CPU_AVX512VNNI) ==
              (c.avx2 && c.fma && c.f16c && c.avx512f && c.avx512bw && c.avx512vl && c.avx512vnni),
          "avx512vnni variant rule");
    CHECK(pt_cpu_has_variant(&c, PT_CPU_AVXVNNI) == (c.avx2 && c.fma && c.f16c && c.avxvnni), "avxvnni rule");
    CHECK(pt_cpu_has_variant(&c, PT_CPU_I8MM) == (c.neon && c.dotprod && c.i8mm), "i8mm rule");
#if defined(PETREL_NO_AMX) /* built without the tile intrinsics */
    CHECK(!pt_cpu_has_variant(&c, PT_CPU_AMX), "amx variant in a build without its kernels");
#else
    CHECK(pt_cpu_has_variant(&c, PT_CPU_AMX) == (pt_cpu_has_variant(&c, PT_CPU_AVX512VNNI) && c.amx), "amx rule");
#endif
#if defined(__x86_64__)
    CHECK(!c.neon && !c.dotprod && !c.i8mm, "arm flags on x86-64");
    char *flags = cpuinfo_line("flags");
    if (flags) {
        /* the kernel lists a flag only when the CPU has it and the OS
         * enabled its register state: the same rule as ours */
        CHECK(c.avx2 == has_word(flags, "avx2"), "avx2 %d vs cpuinfo", c.avx2);
        CHECK(c.fma == has_word(flags, "fma"), "fma %d vs cpuinfo", c.fma);
        CHECK(c.f16c == has_word(flags, "f16c"), "f16c %d vs cpuinfo", c.f16c);
        CHECK(c.avx512f == has_word(flags, "avx512f"), "avx512f %d vs cpuinfo", c.avx512f);
        CHECK(c.avx512bw == has_word(flags, "avx512bw"), "avx512bw %d vs cpuinfo", c.avx512bw);
        CHECK(c.avx512vl == has_word(flags, "avx512vl"), "avx512vl %d vs cpuinfo", c.avx512vl);
        CHECK(c.avx512vnni == has_word(flags, "avx512_vnni"), "avx512vnni %d vs cpuinfo", c.avx512vnni);
        CHECK(c.avxvnni == has_word(flags, "avx_vnni"), "avxvnni %d vs cpuinfo", c.avxvnni);
        /* AMX also needs this process's permission (arch_prctl), which a
         * kernel that lists the flags grants */
        CHECK(c.amx == (has_word(flags, "amx_tile") && has_word(flags, "amx_int8")), "amx %d vs cpuinfo",
              c.amx);
        free(flags);
    }
#elif defined(__aarch64__)
    CHECK(c.neon, "arm64 without NEON");
    CHECK(!c.avx2 && !c.avx512f, "x86 flags on arm64");
    char *feat = cpuinfo_line("Features"); /* absent under qemu-user: host's file */
    if (feat) {
        CHECK(c.dotprod == has_word(feat, "asimddp"), "dotprod %d vs cpuinfo", c.dotprod);
        CHECK(c.i8mm == has_word(feat, "i8mm"), "i8mm %d vs cpuinfo", c.i8mm);
        free(feat);
    }
#endif

    /* the exact fast-variant set, when the caller knows it */
    const char *expect = getenv("PETREL_EXPECT_VARIANTS");
    if (expect && *expect) {
        char have[128] = "";
        for (int v = PT_CPU_REF + 1; v < PT_CPU_VARIANT_COUNT; v++)
            if (pt_cpu_has_variant(&c, (pt_cpu_variant)v)) {
                if (have[0]) strcat(have, ",");
                strcat(have, pt_cpu_variant_name((pt_cpu_variant)v));
            }
        if (!have[0]) strcpy(have, "none");
        CHECK(strcmp(have, expect) == 0, "variants %s, expected %s", have, expect);
    }

    /* PETREL_CPU */
    pt_cpu f;
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
        const char *name = pt_cpu_variant_name((pt_cpu_variant)v);
        const int rc = pt_cpu_detect_with(&f, name);
        if (pt_cpu_has_variant(&c, (pt_cpu_variant)v))
            CHECK(rc == 0 && f.variant == (pt_cpu_variant)v, "force %s", name);
        else
            CHECK(rc == -1 && f.variant == c.variant, "force %s without the ISA: rc %d, %s", name, rc,
                  pt_cpu_variant_name(f.variant));
        pt_cpu g;
        CHECK(pt_cpu_with_variant(&c, (pt_cpu_variant)v, &g) == pt_cpu_has_variant(&c, (pt_cpu_variant)v),
              "with_variant %s", name);
    }
    CHECK(pt_cpu_detect_with(&f, "") == 0 && f.variant == c.variant, "empty = best");
    CHECK(pt_cpu_detect_with(&f, "native") == 0 && f.variant == c.variant, "native = best");
    CHECK(pt_cpu_detect_with(&f, "AVX2") == -1, "names are case-sensitive");
    CHECK(pt_cpu_detect_with(&f, "sse9") == -1 && f.variant == c.variant, "unknown refused");
    setenv("PETREL_CPU", "ref", 1);
    CHECK(pt_cpu_detect(&f) == 0 && f.variant == PT_CPU_REF, "env ref");
    setenv("PETREL_CPU", "bogus", 1);
    CHECK(pt_cpu_detect(&f) == -1 && f.variant == c.variant, "env bogus");
    unsetenv("PETREL_CPU");
    CHECK(pt_cpu_detect(&f) == 0 && f.variant == c.variant, "env unset");
    CHECK(strcmp(pt_cpu_variant_name(PT_CPU_VARIANT_COUNT), "?") == 0, "out of range name");
    CHECK(strcmp(pt_cpu_variant_name(PT_CPU_AVX512VNNI), "avx512vnni") == 0, "name");
    return check_done("cpu_features");
}
