/*
 * cpu_features.c — run-time detection of the int8 instruction sets the
 * kernels use, and the PETREL_CPU override. See cpu_features.h.
 */
#include "cpu_features.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#if defined(__x86_64__)
/* XCR0 bits: which register state the OS saves on context switch. */
#define XCR0_SSE (1u << 1)
#define XCR0_AVX (1u << 2)      /* upper halves of ymm0-15 */
#define XCR0_OPMASK (1u << 5)   /* k0-k7 */
#define XCR0_ZMM_HI256 (1u << 6) /* upper halves of zmm0-15 */
#define XCR0_HI16_ZMM (1u << 7)  /* zmm16-31 */
#define XCR0_XTILECFG (1u << 17) /* AMX tile configuration */
#define XCR0_XTILEDATA (1u << 18) /* AMX tile registers (8 KiB) */

/* Linux keeps the AMX tile state off until a process asks for it
 * (arch/x86/include/uapi/asm/prctl.h); the grant is for the whole process
 * and idempotent, so asking at every detection is harmless. */
static bool amx_permitted(void) {
#if defined(__linux__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false; /* other systems: not wired up here, stay on AVX-512 */
#endif
}

static unsigned read_xcr0(void) {
    unsigned lo, hi;
    /* xgetbv with ecx = 0; written as asm so no target flag is needed */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return lo;
}

static void detect_x86(pt_cpu *c) {
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return;
    const bool osxsave = cx & (1u << 27);
    const bool avx = cx & (1u << 28);
    const bool fma = cx & (1u << 12);
    const bool f16c = cx & (1u << 29);
    if (!osxsave || !avx) return; /* no OS-enabled AVX: nothing we use */
    const unsigned xcr0 = read_xcr0();
    const bool ymm_ok = (xcr0 & (XCR0_SSE | XCR0_AVX)) == (XCR0_SSE | XCR0_AVX);
    const unsigned zmm_bits = XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
    const bool zmm_ok = ymm_ok && (xcr0 & zmm_bits) == zmm_bits;
    if (!ymm_ok) return;

    unsigned max_leaf = __get_cpuid_max(0, NULL);
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d7);
        unsigned max_sub = a;
        if (max_sub >= 1) __cpuid_count(7, 1, a71, b, cx, d);
    }
    c->fma = fma;
    c->f16c = f16c;
    c->avx2 = b7 & (1u << 5);
    c->avxvnni = a71 & (1u << 4); /* VEX-encoded vpdpbusd, ymm */
    if (zmm_ok) {
        c->avx512f = b7 & (1u << 16);
        c->avx512bw = b7 & (1u << 30);
        c->avx512vl = b7 & (1u << 31);
        c->avx512vnni = c7 & (1u << 11);
        const bool amx_cpu = (d7 & (1u << 24)) && (d7 & (1u << 25)); /* AMX-TILE, AMX-INT8 */
        const unsigned tile_bits = XCR0_XTILECFG | XCR0_XTILEDATA;
        c->amx = amx_cpu && (xcr0 & tile_bits) == tile_bits && amx_permitted();
    }
}
#endif

#if defined(__aarch64__) && defined(__linux__)
/* Linux arm64 hwcap bits (asm/hwcap.h), spelled out for old headers. */
#define PT_HWCAP_ASIMD (1ul << 1)
#define PT_HWCAP_ASIMDDP (1ul << 20)
#define PT_HWCAP2_I8MM (1ul << 13)

static void detect_arm64(pt_cpu *c) {
    const unsigned long hw = getauxval(AT_HWCAP);
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    c->neon = hw & PT_HWCAP_ASIMD;
    c->dotprod = c->neon && (hw & PT_HWCAP_ASIMDDP);
    c->i8mm = c->neon && (hw2 & PT_HWCAP2_I8MM);
}
#elif defined(__aarch64__)
static void detect_arm64(pt_cpu *c) {
    c->neon = true; /* baseline on every arm64 */
}
#endif

static const char *const variant_names[PT_CPU_VARIANT_COUNT] = {
    [PT_CPU_REF] = "ref",
    [PT_CPU_AVX2] = "avx2",
    [PT_CPU_AVXVNNI] = "avxvnni",
    [PT_CPU_AVX512VNNI] = "avx512vnni",
    [PT_CPU_DOTPROD] = "dotprod",
    [PT_CPU_I8MM] = "i8mm",
    [PT_CPU_AMX] = "amx",
};

const char *pt_cpu_variant_name(pt_cpu_variant v) {
    return (unsigned)v < PT_CPU_VARIANT_COUNT ? variant_names[v] : "?";
}

bool pt_cpu_has_variant(const pt_cpu *c, pt_cpu_variant v) {
    const bool avx2 = c->avx2 && c->fma && c->f16c;
    switch (v) {
    case PT_CPU_REF: return true;
    case PT_CPU_AVX2: return avx2;
    case PT_CPU_AVXVNNI: return avx2 && c->avxvnni;
    case PT_CPU_AVX512VNNI:
        return avx2 && c->avx512f && c->avx512bw && c->avx512vl && c->avx512vnni;
#if !defined(PETREL_NO_AMX)
    case PT_CPU_AMX: return pt_cpu_has_variant(c, PT_CPU_AVX512VNNI) && c->amx;
#endif
    case PT_CPU_DOTPROD: return c->neon && c->dotprod;
    case PT_CPU_I8MM: return c->neon && c->dotprod && c->i8mm;
    default: return false;
    }
}

pt_cpu_variant pt_cpu_best_variant(const pt_cpu *c) {
    for (int v = PT_CPU_VARIANT_COUNT - 1; v > PT_CPU_REF; v--)
        if (pt_cpu_has_variant(c, (pt_cpu_variant)v)) return (pt_cpu_variant)v;
    return PT_CPU_REF;
}

bool pt_cpu_with_variant(const pt_cpu *c, pt_cpu_variant v, pt_cpu *out) {
    if (!pt_cpu_has_variant(c, v)) return false;
    *out = *c;
    out->variant = v;
    return true;
}

int pt_cpu_detect_with(pt_cpu *c, const char *force) {
    memset(c, 0, sizeof *c);
#if defined(__x86_64__)
    detect_x86(c);
#elif defined(__aarch64__)
    detect_arm64(c);
#endif
    c->variant = pt_cpu_best_variant(c);
    if (!force || !*force || strcmp(force, "native") == 0) return 0;
    for (int v = 0; v < PT_CPU_VARIANT_COUNT; v++) {
        if (strcmp(force, variant_names[v]) != 0) continue;
        if (!pt_cpu_has_variant(c, (pt_cpu_variant)v)) return -1;
        c->variant = (pt_cpu_variant)v;
        return 0;
    }
    return -1;
}

int pt_cpu_detect(pt_cpu *c) {
    return pt_cpu_detect_with(c, getenv("PETREL_CPU"));
}
