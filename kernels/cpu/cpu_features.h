/*
 * cpu_features.h — which int8 kernel variants this CPU can run, detected
 * at run time, and which one to use.
 *
 * x86-64: cpuid leaves 1 and 7 plus xgetbv (the OS must save the YMM / ZMM
 * state, not just the CPU have the instructions). arm64 Linux / Android:
 * getauxval(AT_HWCAP / AT_HWCAP2). Elsewhere everything reads false and the
 * plain C reference path is used.
 *
 * A variant can be forced by name (pt_cpu_detect_with; the engine passes
 * pt_model_params.cpu, which the app takes from the PETREL_CPU environment
 * variable): "ref", "avx2", "avxvnni", "avx512vnni", "amx", "dotprod",
 * "i8mm", or "native" / NULL for the best the CPU has. A forced variant
 * the CPU cannot run is refused (never executed: it would be SIGILL).
 * No engine types cross this header.
 */
#ifndef PETREL_CPU_FEATURES_H
#define PETREL_CPU_FEATURES_H

#include <stdbool.h>

/* Kernel variants, each a family of int8 kernels for one instruction set.
 * On each architecture a larger value needs a superset of the features of
 * a smaller one (AVX-VNNI ymm needs AVX2; AVX-512 VNNI needs AVX2 too;
 * AMX needs AVX-512 VNNI, whose kernels it keeps for decode; i8mm is only
 * used together with dotprod). */
typedef enum pt_cpu_variant {
    PT_CPU_REF = 0,        /* plain C: the quant.h reference path */
    PT_CPU_AVX2 = 1,       /* x86-64: AVX2 + FMA + F16C, vpmaddubsw */
    PT_CPU_AVXVNNI = 2,    /* x86-64: AVX-VNNI, vpdpbusd on ymm */
    PT_CPU_AVX512VNNI = 3, /* x86-64: AVX-512 F/BW/VL + VNNI, vpdpbusd on zmm */
    PT_CPU_DOTPROD = 4,    /* arm64: NEON + sdot (ARMv8.2 dotprod) */
    PT_CPU_I8MM = 5,       /* arm64: NEON + smmla (ARMv8.6 i8mm) */
    PT_CPU_AMX = 6,        /* x86-64: AVX-512 VNNI + AMX-INT8 tiles for prefill */
    PT_CPU_VARIANT_COUNT
} pt_cpu_variant;

typedef struct pt_cpu {
    /* x86-64 (each true only when the OS also enables the register state) */
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512vnni;
    bool avxvnni;
    /* AMX-TILE and AMX-INT8, with the tile state enabled in XCR0 and (on
     * Linux) this process granted its use by arch_prctl */
    bool amx;
    /* arm64 */
    bool neon, dotprod, i8mm;
    /* the variant kernels use: the best available, or the one PETREL_CPU
     * forced */
    pt_cpu_variant variant;
} pt_cpu;

/* Fill *cpu from the hardware, then apply the PETREL_CPU override read
 * from the environment (tests and benchmarks; the engine uses
 * pt_cpu_detect_with and never reads the environment).
 * Returns 0, or -1 when PETREL_CPU names an unknown variant or one this CPU
 * cannot run; cpu->variant is then the best available one, and the caller
 * decides whether to report it. */
int pt_cpu_detect(pt_cpu *cpu);

/* As pt_cpu_detect, with `force` in place of the environment (NULL or ""
 * means the best available). */
int pt_cpu_detect_with(pt_cpu *cpu, const char *force);

/* Whether this CPU can run kernels of variant v (PT_CPU_REF always). */
bool pt_cpu_has_variant(const pt_cpu *cpu, pt_cpu_variant v);

/* The best variant this CPU can run. */
pt_cpu_variant pt_cpu_best_variant(const pt_cpu *cpu);

/* "ref", "avx2", ... as PETREL_CPU spells it; "?" for out-of-range. */
const char *pt_cpu_variant_name(pt_cpu_variant v);

/* A copy of *cpu with variant set to v; false (and *out untouched) when the
 * CPU cannot run v. Lets a test or the bench run every variant in turn. */
bool pt_cpu_with_variant(const pt_cpu *cpu, pt_cpu_variant v, pt_cpu *out);

#endif
