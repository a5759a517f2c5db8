/*
 * qmatmul.c — activation quantization (reference C), weight repacking,
 * the plain C oracle pt_qmatmul_ref, and dispatch to the ISA kernels
 * (qmatmul_avx2.c, qmatmul_avxvnni.c, qmatmul_avx512.c, qmatmul_neon.c).
 * The numerics are specified in qmatmul.h, the packed layout in
 * qmatmul_impl.h.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "qmatmul_impl.h"
#include "quant_blocks.h"

/* ---- activations ---------------------------------------------------- */

/* Buffer layout: q (n_tok * cols bytes, rounded up to 64), then d, ds, s,
 * s_m8, s_m128 (n_tok * nb 4-byte values each, each rounded up to 64). */
static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t pt_qact_bytes(int64_t n_tok, int64_t cols) {
    const size_t nbt = (size_t)n_tok * (size_t)(cols / PT_QACT_BLOCK);
    return 64 + round64((size_t)n_tok * (size_t)cols) + 5 * round64(nbt * 4);
}

void pt_qact_init(pt_qact *a, void *buf, int64_t n_tok, int64_t cols) {
    uintptr_t p = ((uintptr_t)buf + 63) & ~(uintptr_t)63;
    const int64_t nb = cols / PT_QACT_BLOCK;
    const size_t nbt = (size_t)n_tok * (size_t)nb;
    a->n_tok = n_tok;
    a->cols = cols;
    a->nb = nb;
    a->q = (int8_t *)p;
    p += round64((size_t)n_tok * (size_t)cols);
    a->d = (float *)p;
    p += round64(nbt * 4);
    a->ds = (float *)p;
    p += round64(nbt * 4);
    a->s = (int32_t *)p;
    p += round64(nbt * 4);
    a->s_m8 = (int32_t *)p;
    p += round64(nbt * 4);
    a->s_m128 = (int32_t *)p;
}

void pt_qact_quantize_ref(const float *x, pt_qact *a, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
        for (int64_t b = 0; b < a->nb; b++) {
            const float *xb = x + t * a->cols + b * PT_QACT_BLOCK;
            int8_t *q = a->q + t * a->cols + b * PT_QACT_BLOCK;
            float amax = 0.0f;
            for (int i = 0; i < PT_QACT_BLOCK; i++) amax = fmaxf(amax, fabsf(xb[i]));
            const float d = amax / 127.0f;
            const float id = d != 0.0f ? 1.0f / d : 0.0f;
            int32_t s = 0;
            for (int i = 0; i < PT_QACT_BLOCK; i++) {
                /* x * id is within +-127 (up to rounding); the clamp keeps the
                 * conversion defined for any input. nearbyintf rounds half to
                 * even, as the SIMD conversions do. */
                const float v = fminf(fmaxf(xb[i] * id, -127.0f), 127.0f);
                q[i] = (int8_t)nearbyintf(v);
                s += q[i];
            }
            pt_qact_set_block(a, t * a->nb + b, d, s);
        }
    }
}

void pt_qact_quantize(const pt_cpu *cpu, const float *x, pt_qact *a, int64_t t0, int64_t t1) {
    switch (cpu->variant) {
#if defined(__x86_64__)
    case PT_CPU_AVX2:
    case PT_CPU_AVXVNNI: pt_qquant_avx2(x, a, t0, t1); return;
    case PT_CPU_AVX512VNNI:
    case PT_CPU_AMX: pt_qquant_avx512(x, a, t0, t1); return;
#endif
#if defined(__aarch64__)
    case PT_CPU_DOTPROD:
    case PT_CPU_I8MM: pt_qquant_neon(x, a, t0, t1); return;
#endif
    default: pt_qact_quantize_ref(x, a, t0, t1); return;
    }
}

/* ---- weight codes of one GGML block --------------------------------- */

/* The 32 codes q - 16 of a Q5_0 block (-16..15): the block's values are
 * d times them, as Q8_0's are d times its int8 codes. */
static void q5_0_codes(const pt_block_q5_0 *blk, int8_t c[32]) {
    uint32_t qh;
    memcpy(&qh, blk->qh, 4); /* little-endian: bit i is value i's bit 4 */
    for (int i = 0; i < 16; i++) {
        c[i] = (int8_t)(((blk->qs[i] & 0x0f) | ((qh >> i & 1) << 4)) - 16);
        c[i + 16] = (int8_t)(((blk->qs[i] >> 4) | ((qh >> (i + 16) & 1) << 4)) - 16);
    }
}

/* The 32 integer codes c[i] of block b of a GGML row (Q4_0: nibble - 8,
 * Q4_1: nibble, Q5_0: 5-bit value - 16, Q8_0: int8), its scale and min. */
static void block_codes(uint32_t type, const void *row, int64_t b, int32_t c[32], float *dw,
                        float *mw) {
    *mw = 0.0f;
    if (type == PT_TYPE_Q5_0) {
        const pt_block_q5_0 *blk = (const pt_block_q5_0 *)row + b;
        int8_t q[32];
        q5_0_codes(blk, q);
        for (int i = 0; i < 32; i++) c[i] = q[i];
        *dw = pt_fp16_to_f32(blk->d);
        return;
    }
    if (type == PT_TYPE_Q8_0) {
        const pt_block_q8_0 *blk = (const pt_block_q8_0 *)row + b;
        for (int i = 0; i < 32; i++) c[i] = blk->qs[i];
        *dw = pt_fp16_to_f32(blk->d);
        return;
    }
    const uint8_t *qs;
    int off = 0;
    if (type == PT_TYPE_Q4_0) {
        const pt_block_q4_0 *blk = (const pt_block_q4_0 *)row + b;
        qs = blk->qs;
        *dw = pt_fp16_to_f32(blk->d);
        off = 8;
    } else {
        const pt_block_q4_1 *blk = (const pt_block_q4_1 *)row + b;
        qs = blk->qs;
        *dw = pt_fp16_to_f32(blk->d);
        *mw = pt_fp16_to_f32(blk->m);
    }
    for (int i = 0; i < 16; i++) {
        c[i] = (qs[i] & 0x0f) - off;
        c[i + 16] = (qs[i] >> 4) - off;
    }
}

void pt_qmatmul_ref(uint32_t type, const void *w, int64_t rows, int64_t cols, const pt_qact *x,
                    float *y, int64_t r0, int64_t r1) {
    const size_t row_bytes = pt_type_row_bytes(type, cols);
    const int64_t nb = cols / PT_QACT_BLOCK;
    int32_t c[32];
    for (int64_t r = r0; r < r1; r++) {
        const void *row = (const uint8_t *)w + (size_t)r * row_bytes;
        for (int64_t t = 0; t < x->n_tok; t++) {
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                float dw, mw;
                block_codes(type, row, b, c, &dw, &mw);
                const int8_t *q = x->q + t * cols + b * PT_QACT_BLOCK;
                int32_t isum = 0;
                for (int i = 0; i < 32; i++) isum += c[i] * q[i];
                const float sc = dw * x->d[t * nb + b];
                acc = fmaf((float)isum, sc, acc);
                if (type == PT_TYPE_Q4_1) acc = fmaf(mw, x->ds[t * nb + b], acc);
            }
            y[t * rows + r] = acc;
        }
    }
}

/* ---- packing -------------------------------------------------------- */

typedef struct variant_layout {
    int G, KI, q8_bias;
    pt_qmm_fn fn;
} variant_layout;

/* The layout and kernel of a variant; false when it has none in this
 * build (other architecture, or the reference). */
static bool layout_of(pt_cpu_variant v, variant_layout *out) {
    switch (v) {
#if defined(__x86_64__)
    case PT_CPU_AVX2: *out = (variant_layout){8, 4, 0, pt_qmm_avx2}; return true;
    case PT_CPU_AVXVNNI: *out = (variant_layout){8, 4, 128, pt_qmm_avxvnni}; return true;
    case PT_CPU_AVX512VNNI: *out = (variant_layout){16, 4, 128, pt_qmm_avx512}; return true;
#if !defined(PETREL_NO_AMX)
    case PT_CPU_AMX: *out = (variant_layout){16, 4, 128, pt_qmm_amx}; return true;
#endif
#endif
#if defined(__aarch64__)
    case PT_CPU_DOTPROD: *out = (variant_layout){8, 4, 0, pt_qmm_dotprod}; return true;
    case PT_CPU_I8MM: *out = (variant_layout){8, 8, 0, pt_qmm_i8mm}; return true;
#endif
    default: return false;
    }
}

bool pt_qweights_supported(uint32_t type, int64_t rows, int64_t cols, const pt_cpu *cpu) {
    variant_layout lay;
    if (type != PT_TYPE_Q4_0 && type != PT_TYPE_Q4_1 && type != PT_TYPE_Q5_0 && type != PT_TYPE_Q8_0)
        return false;
    if (rows <= 0 || cols <= 0 || cols % PT_QACT_BLOCK) return false;
    if (!pt_cpu_has_variant(cpu, cpu->variant)) return false;
    return layout_of(cpu->variant, &lay);
}

pt_qweights *pt_qweights_pack(uint32_t type, const void *src, int64_t rows, int64_t cols,
                              const pt_cpu *cpu) {
    variant_layout lay;
    if (!pt_qweights_supported(type, rows, cols, cpu) || !layout_of(cpu->variant, &lay))
        return NULL;
    pt_qweights *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    const int G = lay.G, KI = lay.KI;
    /* Q5_0 is packed as Q8_0: its codes q - 16 widened to int8, its fp16
     * scale kept; the Q8_0 kernels then compute exactly pt_qmatmul_ref's
     * Q5_0 product (the same integer dots and scales) */
    const uint32_t src_type = type;
    if (type == PT_TYPE_Q5_0) type = PT_TYPE_Q8_0;
    const bool q8 = type == PT_TYPE_Q8_0;
    w->type = type;
    w->src_type = src_type;
    w->variant = cpu->variant;
    w->rows = rows;
    w->cols = cols;
    w->nb = cols / PT_QACT_BLOCK;
    w->G = G;
    w->KI = KI;
    w->q8_bias = q8 ? lay.q8_bias : 0;
    w->fn = lay.fn;
    w->n_groups = (rows + G - 1) / G;
    w->qbytes = (size_t)G * (q8 ? 32 : 16);
    w->d_off = (size_t)w->nb * w->qbytes;
    w->m_off = w->d_off + (size_t)w->nb * G * 2;
    w->group_bytes = round64(w->m_off + (type == PT_TYPE_Q4_1 ? (size_t)w->nb * G * 2 : 0));
    w->data_bytes = (size_t)w->n_groups * w->group_bytes;
    w->data = aligned_alloc(64, w->data_bytes);
    if (!w->data) {
        free(w);
        return NULL;
    }

    const size_t row_bytes = pt_type_row_bytes(src_type, cols);
    const size_t block_bytes = (size_t)pt_type_get(src_type)->block_bytes;
    const int chunks = (q8 ? 32 : 16) / KI;
    const size_t qs_off = type == PT_TYPE_Q8_0   ? offsetof(pt_block_q8_0, qs)
                          : type == PT_TYPE_Q4_0 ? offsetof(pt_block_q4_0, qs)
                                                 : offsetof(pt_block_q4_1, qs);
    /* d is the first field of all three, m the second of Q4_1 */
    _Static_assert(offsetof(pt_block_q8_0, d) == 0 && offsetof(pt_block_q4_0, d) == 0 &&
                       offsetof(pt_block_q4_1, d) == 0 && offsetof(pt_block_q4_1, m) == 2,
                   "scale fields first");
    /* block-major inside a group: reads G rows as G streams, writes each
     * block's quants, then its scales, sequentially */
    const size_t used = type == PT_TYPE_Q4_1 ? w->m_off + (size_t)w->nb * G * 2 : w->m_off;
    for (int64_t g = 0; g < w->n_groups; g++) {
        uint8_t *group = w->data + (size_t)g * w->group_bytes;
        memset(group + used, 0, w->group_bytes - used); /* alignment pad */
        const int nr = rows - g * G < G ? (int)(rows - g * G) : G; /* real rows */
        for (int64_t b = 0; b < w->nb; b++) {
            uint8_t *qd = group + (size_t)b * w->qbytes;
            uint16_t *d = (uint16_t *)(group + w->d_off) + (size_t)b * G;
            uint16_t *m = (uint16_t *)(group + w->m_off) + (size_t)b * G;
            for (int r = 0; r < G; r++) {
                if (r >= nr) { /* padding row: codes that mean 0, scales 0 */
                    for (int c = 0; c < chunks; c++)
                        memset(qd + ((size_t)c * G + r) * KI, q8 ? w->q8_bias : 0, (size_t)KI);
                    d[r] = 0;
                    if (type == PT_TYPE_Q4_1) m[r] = 0; /* only Q4_1 has an m area */
                    continue;
                }
                const uint8_t *blk = (const uint8_t *)src + (size_t)(g * G + r) * row_bytes + (size_t)b * block_bytes;
                memcpy(&d[r], blk, 2); /* Q5_0's d is its first field too */
                if (type == PT_TYPE_Q4_1) memcpy(&m[r], blk + 2, 2);
                const uint8_t *qs = blk + qs_off;
                int8_t q5[32];
                if (src_type == PT_TYPE_Q5_0) {
                    pt_block_q5_0 b5;
                    memcpy(&b5, blk, sizeof b5);
                    q5_0_codes(&b5, q5);
                    qs = (const uint8_t *)q5;
                }
                /* int8 + 128 as uint8 is a flip of each byte's top bit */
                const uint64_t flip = w->q8_bias ? UINT64_C(0x8080808080808080) : 0;
                if (KI == 4) { /* constant-size copies: plain moves */
                    for (int c = 0; c < chunks; c++) {
                        uint32_t v;
                        memcpy(&v, qs + 4 * c, 4);
                        v ^= (uint32_t)flip;
                        memcpy(qd + ((size_t)c * G + r) * 4, &v, 4);
                    }
                } else {
                    for (int c = 0; c < chunks; c++) {
                        uint64_t v;
                        memcpy(&v, qs + 8 * c, 8);
                        v ^= flip;
                        memcpy(qd + ((size_t)c * G + r) * 8, &v, 8);
                    }
                }
            }
        }
    }
    return w;
}

void pt_qweights_free(pt_qweights *w) {
    if (!w) return;
    free(w->data);
    free(w);
}

uint32_t pt_qweights_type(const pt_qweights *w) { return w->src_type; }
int64_t pt_qweights_rows(const pt_qweights *w) { return w->rows; }
int64_t pt_qweights_cols(const pt_qweights *w) { return w->cols; }
pt_cpu_variant pt_qweights_variant(const pt_qweights *w) { return w->variant; }
size_t pt_qweights_bytes(const pt_qweights *w) { return w->data_bytes; }
int pt_qweights_row_align(const pt_qweights *w) { return w->G; }

void pt_qweights_split(const pt_qweights *w, int task, int n_tasks, int64_t *r0, int64_t *r1) {
    const int64_t g0 = w->n_groups * task / n_tasks;
    const int64_t g1 = w->n_groups * (task + 1) / n_tasks;
    *r0 = g0 * w->G < w->rows ? g0 * w->G : w->rows;
    *r1 = g1 * w->G < w->rows ? g1 * w->G : w->rows;
}

/* Rebuild each GGML block of the row and decode it with quant.c's decoder,
 * so the values are bitwise those of pt_dequant_row on the original. */
/* Block b of row r in GGML's layout (w->type's block) into blk. */
static void block_of_row(const pt_qweights *w, int64_t r, int64_t b, void *blk) {
    const uint8_t *group = pt_qw_group(w, r / w->G);
    const int rr = (int)(r % w->G), G = w->G, KI = w->KI;
    const bool q8 = w->type == PT_TYPE_Q8_0;
    const int chunks = (q8 ? 32 : 16) / KI;
    const uint8_t *qd = pt_qw_quants(w, group, b);
    uint8_t qs[32];
    for (int c = 0; c < chunks; c++)
        for (int i = 0; i < KI; i++)
            qs[c * KI + i] = (uint8_t)(qd[((size_t)c * G + rr) * KI + i] - w->q8_bias);
    const uint16_t d = pt_qw_d(w, group, b)[rr];
    if (q8) {
        pt_block_q8_0 *q = blk;
        q->d = d;
        memcpy(q->qs, qs, 32);
    } else if (w->type == PT_TYPE_Q4_0) {
        pt_block_q4_0 *q = blk;
        q->d = d;
        memcpy(q->qs, qs, 16);
    } else {
        pt_block_q4_1 *q = blk;
        q->d = d;
        q->m = pt_qw_m(w, group, b)[rr];
        memcpy(q->qs, qs, 16);
    }
}

void pt_qweights_dequant_row(const pt_qweights *w, int64_t r, float *dst) {
    for (int64_t b = 0; b < w->nb; b++) {
        float *out = dst + b * PT_QACT_BLOCK;
        if (w->type == PT_TYPE_Q8_0) {
            pt_block_q8_0 blk;
            block_of_row(w, r, b, &blk);
            pt_dequant_block_q8_0(&blk, out);
        } else if (w->type == PT_TYPE_Q4_0) {
            pt_block_q4_0 blk;
            block_of_row(w, r, b, &blk);
            pt_dequant_block_q4_0(&blk, out);
        } else {
            pt_block_q4_1 blk;
            block_of_row(w, r, b, &blk);
            pt_dequant_block_q4_1(&blk, out);
        }
    }
}

bool pt_qweights_block_row(const pt_qweights *w, int64_t r, void *dst) {
    if (w->src_type != w->type) return false; /* Q5_0 packed as Q8_0: its qh is gone */
    const size_t bs = w->type == PT_TYPE_Q8_0 ? sizeof(pt_block_q8_0)
                    : w->type == PT_TYPE_Q4_0 ? sizeof(pt_block_q4_0)
                                              : sizeof(pt_block_q4_1);
    for (int64_t b = 0; b < w->nb; b++) block_of_row(w, r, b, (uint8_t *)dst + (size_t)b * bs);
    return true;
}

size_t pt_qmatmul_scratch_bytes(const pt_cpu *cpu, int64_t cols) {
#if defined(__x86_64__)
    if (cpu->variant == PT_CPU_AVX512VNNI || cpu->variant == PT_CPU_AMX) return pt_qmm_zmm_scratch_bytes(cols);
#endif
    (void)cpu;
    (void)cols;
    return 0;
}

void pt_qmatmul(const pt_qweights *w, const pt_qact *x, float *y, int64_t r0, int64_t r1,
                void *scratch) {
    if (r0 < 0) r0 = 0;
    if (r1 > w->rows) r1 = w->rows;
    if (r0 >= r1 || x->n_tok <= 0) return;
    w->fn(w, x, y, r0, r1, scratch);
}

bool pt_qmatmul_ref_type(uint32_t type, int64_t cols) {
    return (type == PT_TYPE_Q4_0 || type == PT_TYPE_Q4_1 || type == PT_TYPE_Q5_0 || type == PT_TYPE_Q8_0) &&
           cols > 0 &&
           cols % PT_QACT_BLOCK == 0;
}
