/*
 * neon_int8.h — the arm64 int8 dot-product instructions the NEON kernels
 * share (qmatmul_neon.c, kv_qk_neon.c): TGT_DOT / TGT_MM, the target
 * attributes of functions that use sdot / smmla, and SDOT, SDOT_LANE and
 * SMMLA, the instructions themselves. Include only inside
 * `#if defined(__aarch64__)`.
 */
#ifndef PETREL_NEON_INT8_H
#define PETREL_NEON_INT8_H

#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))

/* sdot / smmla. GCC >= 10 and clang >= 18 declare the intrinsics for use
 * in functions with a target attribute, so the rest of the build stays
 * plain ARMv8.0. Older clang (e.g. Debian's 14) defines them only when the
 * whole file is built for the extension; there (and with
 * -DPT_NEON_FORCE_ASM, which the qemu test uses to cover this path) the
 * instructions are written as inline assembly in functions carrying the
 * same target attribute, which is what lets the assembler accept them. */
#if !defined(PT_NEON_FORCE_ASM) && \
    ((defined(__clang__) && __clang_major__ >= 18) || (!defined(__clang__) && __GNUC__ >= 10))
#define PT_NEON_INTRIN 1
#endif

#if defined(__clang__)
#define TGT_DOT __attribute__((target("dotprod")))
#define TGT_MM __attribute__((target("dotprod,i8mm")))
#else
#define TGT_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#define TGT_MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#endif

#if defined(PT_NEON_INTRIN)
#define SDOT(acc, a, b) vdotq_s32(acc, a, b)
#define SDOT_LANE(acc, a, b, lane) vdotq_laneq_s32(acc, a, b, lane)
#define SMMLA(acc, a, b) vmmlaq_s32(acc, a, b)
#else
INLINE TGT_DOT int32x4_t sdot_asm(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}
INLINE TGT_MM int32x4_t smmla_asm(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__("smmla %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
    return acc;
}
/* lane must expand to a literal 0..3 (it is pasted into the instruction) */
#define PT_STR_(x) #x
#define PT_STR(x) PT_STR_(x)
#define SDOT_LANE(acc, a, b, lane)                                                          \
    __extension__({                                                                         \
        int32x4_t acc_ = (acc);                                                             \
        __asm__("sdot %0.4s, %1.16b, %2.4b[" PT_STR(lane) "]" : "+w"(acc_) : "w"(a), "w"(b)); \
        acc_;                                                                               \
    })
#define SDOT(acc, a, b) sdot_asm(acc, a, b)
#define SMMLA(acc, a, b) smmla_asm(acc, a, b)
#endif

#endif
