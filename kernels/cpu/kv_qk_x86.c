/*
 * kv_qk_x86.c — the x86-64 int8 Q·K kernels (kv_qk.h): AVX2 (vpmaddubsw),
 * AVX-VNNI (VEX vpdpbusd) and AVX-512 VNNI (EVEX vpdpbusd on ymm: at two
 * or three query heads per KV head a row of 64 codes is two ymm, so zmm
 * would only add shuffles), one body (kv_qk_x86_body.h) under each
 * variant's target attribute, so the rest of the library needs no ISA
 * flags. All three use F16C for the key scales (every x86 variant has it:
 * cpu_features.h).
 */
#if defined(__x86_64__)

#include <immintrin.h>
#include <string.h>

#include "kv_qk.h"

#define PT_QK_UNROLL _Pragma("GCC unroll 8")

#define QN(x) x##_avx2
#define QT __attribute__((target("avx2,fma,f16c")))
#define QVNNI 0
#include "kv_qk_x86_body.h"
#undef QN
#undef QT
#undef QVNNI

#define QN(x) x##_avxvnni
#define QT __attribute__((target("avxvnni,avx2,fma,f16c")))
#define QVNNI 1
#define QDOT(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#include "kv_qk_x86_body.h"
#undef QN
#undef QT
#undef QVNNI
#undef QDOT

#define QN(x) x##_avx512vnni
#define QT __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define QVNNI 1
#define QDOT(acc, a, b) _mm256_dpbusd_epi32(acc, a, b)
#include "kv_qk_x86_body.h"
#undef QN
#undef QT
#undef QVNNI
#undef QDOT

#else
typedef int pt_kv_qk_x86_unused; /* ISO C: no empty translation unit */
#endif
