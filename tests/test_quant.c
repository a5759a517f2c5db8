/*
 * test_quant.c — GGML tensor types against gguf-py (kernels/cpu/quant.h).
 *
 * Reference data: tests/data/quant_ref.bin, written by
 * tools/gen_quant_fixture.py from gguf-py (gguf.quants, GGML_QUANT_SIZES)
 * and numpy. Format (little-endian, no padding):
 *
 *   char magic[8] = "PTQREF01"
 *   u32 n_types;  n_types x { u32 id, block_elems, block_bytes; char name[12] }
 *   u32 n_conv;   n_conv  x { u32 f32_bits, fp16_bits }   numpy f32 -> f16
 *   u32 n_rows;   n_rows  x { u32 type, n, nbytes; u8 raw[nbytes];
 *                             f32 deq[n]; f32 x[n]; f64 dot }
 *
 * What is checked:
 *   (a) pt_dequant_row equals gguf-py bit for bit, for every supported type
 *       (quant_legacy.c / quant_k.c explain why no tolerance is needed);
 *   (b) pt_dot_row_f32 is within a rounding-error bound of the float64 dot,
 *       and bitwise equal to the summation order quant_matmul.c documents;
 *   (c) pt_matmul_ref equals pt_dot_row_f32 bit for bit on random shapes and
 *       row ranges, and leaves rows outside [r0, r1) alone;
 *   (d) half / bfloat16 conversions: numpy's f32 -> f16 results, every one
 *       of the 65536 halves against an independent formula and round trip,
 *       a sweep of float bit patterns checked to round to the nearest half;
 *   (e) the type table against GGML_QUANT_SIZES and the block structs.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "quant.h"
#include "quant_blocks.h"

/* ---- fixture reading ---------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
} cursor;

static const uint8_t *take(cursor *c, size_t n) {
    if ((size_t)(c->end - c->p) < n) {
        fprintf(stderr, "quant_ref.bin: truncated\n");
        exit(1);
    }
    const uint8_t *p = c->p;
    c->p += n;
    return p;
}

static uint32_t take_u32(cursor *c) {
    uint32_t v;
    memcpy(&v, take(c, 4), 4);
    return v;
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* xorshift64* — a deterministic generator local to each test. */
static uint64_t rnd(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static float rnd_unit(uint64_t *s) { /* uniform in [-1, 1) */
    return (float)((double)(rnd(s) >> 40) / (double)(1u << 23) - 1.0);
}

/* ---- (e) type table ----------------------------------------------------- */

static void test_traits(cursor *c) {
    uint32_t n_types = take_u32(c);
    bool in_fixture[PT_TYPE_COUNT] = {0};
    for (uint32_t i = 0; i < n_types; i++) {
        uint32_t id = take_u32(c), be = take_u32(c), bb = take_u32(c);
        char name[13] = {0};
        memcpy(name, take(c, 12), 12);
        CHECK(id < PT_TYPE_COUNT, "fixture type id %u", id);
        if (id >= PT_TYPE_COUNT) continue;
        in_fixture[id] = true;
        /* gguf-py still lists Q8_1 as 4 + 4 + 32 (float d, float s); ggml's
         * block_q8_1 is {ggml_half d, s; int8 qs[32]} = 36 bytes. */
        if (id == PT_TYPE_Q8_1) bb = 36;
        const pt_type_traits *t = pt_type_get(id);
        CHECK(t != NULL, "type %u (%s) unknown", id, name);
        if (!t) continue;
        CHECK(strcmp(t->name, name) == 0, "type %u: name %s, gguf-py %s", id, t->name, name);
        CHECK(strcmp(pt_type_name(id), name) == 0, "pt_type_name(%u)", id);
        CHECK(t->block_elems == (int)be && t->block_bytes == (int)bb,
              "%s: %d/%d, gguf-py %u/%u", name, t->block_elems, t->block_bytes, be, bb);
    }
    CHECK(n_types >= 30, "fixture lists only %u types", n_types);
    for (uint32_t id = 0; id < PT_TYPE_COUNT; id++)
        if (!in_fixture[id]) {
            CHECK(pt_type_get(id) == NULL, "id %u: GGML defines no such type", id);
            CHECK(strcmp(pt_type_name(id), "?") == 0, "pt_type_name(%u)", id);
            CHECK(pt_type_row_bytes(id, 32) == 0, "row bytes of unknown id %u", id);
        }
    CHECK(pt_type_get(PT_TYPE_COUNT) == NULL && pt_type_get(41) == NULL &&
              pt_type_get(UINT32_MAX) == NULL, "ids past the table");
    CHECK(strcmp(pt_type_name(1000), "?") == 0, "name of id 1000");

    /* GGML's sizes, written out independently of the fixture. */
    static const struct { uint32_t id; int be, bb; bool sup; } known[] = {
        {PT_TYPE_F32, 1, 4, true},     {PT_TYPE_F16, 1, 2, true},
        {PT_TYPE_BF16, 1, 2, true},    {PT_TYPE_Q4_0, 32, 18, true},
        {PT_TYPE_Q4_1, 32, 20, true},  {PT_TYPE_Q5_0, 32, 22, true},
        {PT_TYPE_Q5_1, 32, 24, true},  {PT_TYPE_Q8_0, 32, 34, true},
        {PT_TYPE_Q8_1, 32, 36, false}, {PT_TYPE_Q2_K, 256, 84, false},
        {PT_TYPE_Q3_K, 256, 110, false}, {PT_TYPE_Q4_K, 256, 144, true},
        {PT_TYPE_Q5_K, 256, 176, true}, {PT_TYPE_Q6_K, 256, 210, true},
        {PT_TYPE_Q8_K, 256, 292, false}, {20 /* IQ4_NL */, 32, 18, false},
        {35 /* TQ2_0 */, 256, 66, false}, {39 /* MXFP4 */, 32, 17, false},
    };
    int n_supported = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const pt_type_traits *t = pt_type_get(known[i].id);
        CHECK(t && t->block_elems == known[i].be && t->block_bytes == known[i].bb &&
                  t->supported == known[i].sup, "known sizes of type %u", known[i].id);
    }
    for (uint32_t id = 0; id < PT_TYPE_COUNT; id++) {
        const pt_type_traits *t = pt_type_get(id);
        n_supported += t && t->supported;
    }
    CHECK(n_supported == 11, "%d supported types, expected the 11 listed", n_supported);

    /* The block structs are the table's sizes. */
    CHECK(sizeof(pt_block_q4_0) == (size_t)pt_type_get(PT_TYPE_Q4_0)->block_bytes, "q4_0 struct");
    CHECK(sizeof(pt_block_q4_1) == (size_t)pt_type_get(PT_TYPE_Q4_1)->block_bytes, "q4_1 struct");
    CHECK(sizeof(pt_block_q5_0) == (size_t)pt_type_get(PT_TYPE_Q5_0)->block_bytes, "q5_0 struct");
    CHECK(sizeof(pt_block_q5_1) == (size_t)pt_type_get(PT_TYPE_Q5_1)->block_bytes, "q5_1 struct");
    CHECK(sizeof(pt_block_q8_0) == (size_t)pt_type_get(PT_TYPE_Q8_0)->block_bytes, "q8_0 struct");
    CHECK(sizeof(pt_block_q4_K) == (size_t)pt_type_get(PT_TYPE_Q4_K)->block_bytes, "q4_K struct");
    CHECK(sizeof(pt_block_q5_K) == (size_t)pt_type_get(PT_TYPE_Q5_K)->block_bytes, "q5_K struct");
    CHECK(sizeof(pt_block_q6_K) == (size_t)pt_type_get(PT_TYPE_Q6_K)->block_bytes, "q6_K struct");

    /* Row sizes. */
    CHECK(pt_type_row_bytes(PT_TYPE_Q4_K, 512) == 288, "Q4_K x 512");
    CHECK(pt_type_row_bytes(PT_TYPE_Q4_K, 100) == 0, "Q4_K x 100 is not whole blocks");
    CHECK(pt_type_row_bytes(PT_TYPE_Q6_K, 4096) == 16 * 210, "Q6_K x 4096");
    CHECK(pt_type_row_bytes(PT_TYPE_Q8_0, 576) == 18 * 34, "Q8_0 x 576");
    CHECK(pt_type_row_bytes(PT_TYPE_Q8_0, 33) == 0, "Q8_0 x 33");
    CHECK(pt_type_row_bytes(PT_TYPE_Q4_1, 49152) == 1536 * 20, "Q4_1 x 49152");
    CHECK(pt_type_row_bytes(PT_TYPE_F32, 7) == 28, "F32 x 7");
    CHECK(pt_type_row_bytes(PT_TYPE_BF16, 3) == 6, "BF16 x 3");
    CHECK(pt_type_row_bytes(PT_TYPE_Q2_K, 256) == 84, "Q2_K (name only) still has a size");
    CHECK(pt_type_row_bytes(PT_TYPE_F32, -4) == 0, "negative n");
    CHECK(pt_type_row_bytes(4, 32) == 0 && pt_type_row_bytes(77, 32) == 0, "unknown ids");
    CHECK(pt_type_row_bytes(PT_TYPE_Q4_0, (int64_t)1 << 40) == ((size_t)1 << 35) * 18, "large row");
}

/* ---- (d) half / bfloat16 ------------------------------------------------- */

/* The value of a non-NaN half by the IEEE 754 formula, in double. */
static double half_value(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? INFINITY : ldexp(1024 + man, exp - 25);
    return sign ? -v : v;
}

static bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

static void test_conversions(cursor *c) {
    /* numpy's float32 -> float16 (round to nearest, ties to even). NaN
     * payloads are not compared: only NaN-ness and sign must survive. */
    uint32_t n_conv = take_u32(c);
    int bad = 0;
    for (uint32_t i = 0; i < n_conv; i++) {
        uint32_t fb = take_u32(c), want = take_u32(c);
        uint16_t got = pt_f32_to_fp16(bits_f32(fb));
        bool ok = isnan(bits_f32(fb)) ? half_is_nan(got) && (got >> 15) == (fb >> 31)
                                      : got == want;
        if (!ok && bad++ < 10)
            fprintf(stderr, "f32 %08x -> fp16 %04x, numpy %04x\n", fb, got, want);
    }
    CHECK(bad == 0, "%d of %u f32 -> fp16 conversions differ from numpy", bad, n_conv);
    CHECK(n_conv > 500, "only %u conversions in the fixture", n_conv);

    /* All 65536 halves: exact value, and back to the same bits. */
    int bad_val = 0, bad_trip = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pt_fp16_to_f32((uint16_t)h);
        uint16_t back = pt_f32_to_fp16(f);
        if (half_is_nan((uint16_t)h)) {
            bad_val += !isnan(f) || (signbit(f) != 0) != (h >> 15);
            bad_trip += !half_is_nan(back) || (back >> 15) != (h >> 15);
        } else {
            double v = half_value((uint16_t)h);
            bad_val += (double)f != v || (signbit(f) != 0) != (h >> 15); /* -0 keeps its sign */
            bad_trip += back != h;
        }
    }
    CHECK(bad_val == 0, "%d halves decode to the wrong float", bad_val);
    CHECK(bad_trip == 0, "%d halves do not round-trip", bad_trip);

    /* A sweep over float bit patterns: the result must be a nearest half,
     * and on an exact tie the even one. Neighbours of the result are its
     * bit pattern +-1 (the half encoding is monotonic per sign). */
    int bad_round = 0;
    for (uint64_t b = 0; b < ((uint64_t)1 << 32); b += 4099) { /* ~1M patterns, every exponent */
        float f = bits_f32((uint32_t)b);
        if (isnan(f)) continue;
        uint16_t h = pt_f32_to_fp16(f);
        double x = fabs((double)f), got = fabs(half_value(h));
        uint16_t mag = h & 0x7fff;
        bool ok = (h >> 15) == (f32_bits(f) >> 31) && !half_is_nan(h);
        if (ok && mag == 0x7c00) {
            ok = x >= 65520.0; /* inf only from the overflow tie upwards */
        } else if (ok) {
            double err = fabs(x - got);
            double up = half_value((uint16_t)(mag + 1));
            double dn = mag ? half_value((uint16_t)(mag - 1)) : -INFINITY;
            if (mag + 1 == 0x7c00) up = 65536.0; /* the value rounding treats as next */
            ok = err <= fabs(x - up) && err <= fabs(x - dn);
            if (ok && (err == fabs(x - up) || err == fabs(x - dn)) && err != 0) ok = !(mag & 1);
        }
        if (!ok && bad_round++ < 10) fprintf(stderr, "f32 %08x rounds to fp16 %04x\n", (uint32_t)b, h);
    }
    CHECK(bad_round == 0, "%d floats do not round to the nearest even half", bad_round);

    /* bfloat16 is the top half of a float. */
    int bad_bf = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pt_bf16_to_f32((uint16_t)h);
        float want = bits_f32(h << 16);
        bad_bf += isnan(want) ? !isnan(f) || signbit(f) != signbit(want) : f32_bits(f) != (h << 16);
    }
    CHECK(bad_bf == 0, "%d bfloat16 values decode wrong", bad_bf);
}

/* ---- (a), (b) rows against gguf-py -------------------------------------- */


/* sum w[i] x[i] in the order pt_dot_row_f32 documents (quant_matmul.c):
 * groups of 256, within a group 8 lanes by i % 8 and a fixed pairwise
 * tree, group sums added in order. Written independently of the library. */
static float documented_dot(const float *w, const float *x, int64_t n) {
    float row_sum = 0.0f;
    for (int64_t g = 0; g < n; g += 256) {
        float lane[8] = {0};
        for (int64_t i = g; i < n && i < g + 256; i++) lane[(i - g) % 8] += w[i] * x[i];
        row_sum += ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
    return row_sum;
}

static void test_rows(cursor *c) {
    int types_seen[PT_TYPE_COUNT] = {0};
    uint32_t n_rows = take_u32(c);
    for (uint32_t r = 0; r < n_rows; r++) {
        uint32_t type = take_u32(c), n = take_u32(c), nbytes = take_u32(c);
        const char *name = pt_type_name(type);
        /* Copy the row into its own (malloc-aligned) buffer: blocks hold
         * uint16_t fields and need the alignment GGUF guarantees. */
        void *raw = malloc(nbytes ? nbytes : 1);
        float *ref = malloc(n * sizeof(float)), *x = malloc(n * sizeof(float));
        float *deq = malloc(n * sizeof(float));
        memcpy(raw, take(c, nbytes), nbytes);
        memcpy(ref, take(c, n * 4u), n * 4u);
        memcpy(x, take(c, n * 4u), n * 4u);
        double dot_ref;
        memcpy(&dot_ref, take(c, 8), 8);

        const pt_type_traits *t = pt_type_get(type);
        CHECK(t && t->supported, "row %u: type %u not supported", r, type);
        if (!t || !t->supported) goto next;
        types_seen[type]++;
        CHECK(pt_type_row_bytes(type, n) == nbytes, "%s x %u: %zu bytes, fixture %u", name, n,
              pt_type_row_bytes(type, n), nbytes);

        /* (a) Bitwise: each value is the same float expression, in the same
         * order, as gguf-py's numpy code (see quant_legacy.c, quant_k.c). */
        for (uint32_t i = 0; i < n; i++) deq[i] = -12345.0f;
        pt_dequant_row(type, raw, deq, n);
        uint32_t first = n;
        for (uint32_t i = 0; i < n && first == n; i++)
            if (f32_bits(deq[i]) != f32_bits(ref[i])) first = i;
        CHECK(first == n, "%s x %u: value %u is %.9g, gguf-py %.9g", name, n, first,
              first < n ? deq[first] : 0.0f, first < n ? ref[first] : 0.0f);

        /* (b) The float dot against the float64 one. Each term is rounded
         * once (the product) and then takes part in at most k float
         * additions: 32 into its lane (256 / 8 per group), 3 in the lane
         * tree, and one per group into the row sum. Standard error analysis
         * bounds the error by k' u sum|w_i x_i| with k' = k + 1 and
         * u = 2^-24 (to first order; the 1.01 covers the rest). Relative to
         * sum|w_i x_i| rather than |dot|, since the dot may cancel. */
        float dot = pt_dot_row_f32(type, raw, x, n);
        double abs_sum = 0;
        for (uint32_t i = 0; i < n; i++) abs_sum += fabs((double)ref[i] * (double)x[i]);
        double k = 1 + 32 + 3 + (n + 255) / 256;
        double tol = 1.01 * k * 0x1p-24 * abs_sum;
        CHECK(fabs((double)dot - dot_ref) <= tol, "%s x %u: dot %.9g, float64 %.9g, tolerance %.3g",
              name, n, dot, dot_ref, tol);

        /* The documented summation order, on gguf-py's values: bitwise. */
        float row_sum = documented_dot(ref, x, n);
        CHECK(f32_bits(dot) == f32_bits(row_sum), "%s x %u: dot %.9g, documented order gives %.9g",
              name, n, dot, row_sum);
    next:
        free(raw), free(ref), free(x), free(deq);
    }
    static const uint32_t supported[] = {PT_TYPE_F32,  PT_TYPE_F16,  PT_TYPE_BF16, PT_TYPE_Q4_0,
                                         PT_TYPE_Q4_1, PT_TYPE_Q5_0, PT_TYPE_Q5_1, PT_TYPE_Q8_0,
                                         PT_TYPE_Q4_K, PT_TYPE_Q5_K, PT_TYPE_Q6_K};
    for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++)
        CHECK(types_seen[supported[i]] >= 3, "fixture has %d rows of %s", types_seen[supported[i]],
              pt_type_name(supported[i]));
}

/* ---- (c) matmul against the row dot ------------------------------------ */

/* A random row of `type` with sane values: random code bytes, and every
 * half scale field a finite half of modest size. */
static void fill_row(uint32_t type, uint8_t *row, int64_t cols, uint64_t *s) {
    size_t bytes = pt_type_row_bytes(type, cols);
    for (size_t i = 0; i < bytes; i++) row[i] = (uint8_t)rnd(s);
    if (type == PT_TYPE_F32) {
        for (int64_t i = 0; i < cols; i++) {
            float v = rnd_unit(s);
            memcpy(row + 4 * i, &v, 4);
        }
        return;
    }
    if (type == PT_TYPE_F16 || type == PT_TYPE_BF16) {
        for (int64_t i = 0; i < cols; i++) {
            float v = rnd_unit(s) * 8;
            uint16_t h = type == PT_TYPE_F16 ? pt_f32_to_fp16(v) : (uint16_t)(f32_bits(v) >> 16);
            memcpy(row + 2 * i, &h, 2);
        }
        return;
    }
    size_t off[2], n_off = 1;
    switch (type) {
    case PT_TYPE_Q4_0: off[0] = offsetof(pt_block_q4_0, d); break;
    case PT_TYPE_Q5_0: off[0] = offsetof(pt_block_q5_0, d); break;
    case PT_TYPE_Q8_0: off[0] = offsetof(pt_block_q8_0, d); break;
    case PT_TYPE_Q6_K: off[0] = offsetof(pt_block_q6_K, d); break;
    case PT_TYPE_Q4_1: off[0] = offsetof(pt_block_q4_1, d), off[1] = offsetof(pt_block_q4_1, m), n_off = 2; break;
    case PT_TYPE_Q5_1: off[0] = offsetof(pt_block_q5_1, d), off[1] = offsetof(pt_block_q5_1, m), n_off = 2; break;
    case PT_TYPE_Q4_K: off[0] = offsetof(pt_block_q4_K, d), off[1] = offsetof(pt_block_q4_K, dmin), n_off = 2; break;
    case PT_TYPE_Q5_K: off[0] = offsetof(pt_block_q5_K, d), off[1] = offsetof(pt_block_q5_K, dmin), n_off = 2; break;
    default: return;
    }
    const pt_type_traits *t = pt_type_get(type);
    for (int64_t b = 0; b < cols / t->block_elems; b++)
        for (size_t k = 0; k < n_off; k++) {
            uint16_t h = pt_f32_to_fp16(rnd_unit(s) * (t->block_elems == 256 ? 0.01f : 0.1f));
            memcpy(row + (size_t)b * (size_t)t->block_bytes + off[k], &h, 2);
        }
}

static void test_matmul(void) {
    static const uint32_t types[] = {PT_TYPE_F32,  PT_TYPE_F16,  PT_TYPE_BF16, PT_TYPE_Q4_0,
                                     PT_TYPE_Q4_1, PT_TYPE_Q5_0, PT_TYPE_Q5_1, PT_TYPE_Q8_0,
                                     PT_TYPE_Q4_K, PT_TYPE_Q5_K, PT_TYPE_Q6_K};
    const float sentinel = -777.25f;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t type = types[ti];
        const pt_type_traits *t = pt_type_get(type);
        for (int trial = 0; trial < 12; trial++) {
            /* odd row counts, odd token counts, 1..9 blocks (or odd plain
             * lengths), so tiles, groups and lanes all have remainders */
            int64_t rows = 1 + (int64_t)(rnd(&s) % 11);
            int64_t n_tok = 1 + (int64_t)(rnd(&s) % 5);
            int64_t cols = t->block_elems == 1 ? 1 + (int64_t)(rnd(&s) % 600)
                                               : t->block_elems * (1 + (int64_t)(rnd(&s) % (t->block_elems == 256 ? 3 : 11)));
            int64_t r0 = trial % 2 ? (int64_t)(rnd(&s) % (uint64_t)rows) : 0;
            int64_t r1 = trial % 2 ? r0 + (int64_t)(rnd(&s) % (uint64_t)(rows - r0 + 1)) : rows;
            size_t rb = pt_type_row_bytes(type, cols);
            uint8_t *w = malloc(rb * (size_t)rows);
            float *x = malloc(sizeof(float) * (size_t)(n_tok * cols));
            float *y = malloc(sizeof(float) * (size_t)(n_tok * rows));
            for (int64_t r = 0; r < rows; r++) fill_row(type, w + (size_t)r * rb, cols, &s);
            for (int64_t i = 0; i < n_tok * cols; i++) x[i] = rnd_unit(&s);
            for (int64_t i = 0; i < n_tok * rows; i++) y[i] = sentinel;

            pt_matmul_ref(type, w, rows, cols, x, n_tok, y, r0, r1);

            /* Bitwise: matmul adds the same group sums in the same order as
             * the row dot (quant_matmul.c), so no tolerance applies; and the
             * row dot itself follows the documented order. */
            int bad = 0, touched = 0, bad_order = 0;
            float *deq = malloc(sizeof(float) * (size_t)cols);
            for (int64_t tk = 0; tk < n_tok; tk++)
                for (int64_t r = 0; r < rows; r++) {
                    float got = y[tk * rows + r];
                    if (r < r0 || r >= r1) {
                        touched += f32_bits(got) != f32_bits(sentinel);
                        continue;
                    }
                    float want = pt_dot_row_f32(type, w + (size_t)r * rb, x + tk * cols, cols);
                    bad += f32_bits(got) != f32_bits(want) || !isfinite(got);
                    pt_dequant_row(type, w + (size_t)r * rb, deq, cols);
                    bad_order += f32_bits(want) != f32_bits(documented_dot(deq, x + tk * cols, cols));
                }
            free(deq);
            CHECK(bad_order == 0, "%s x %lld: %d row dots not in the documented order", t->name,
                  (long long)cols, bad_order);
            CHECK(bad == 0, "%s %lldx%lld, %lld tokens, rows [%lld,%lld): %d outputs differ from the row dot",
                  t->name, (long long)rows, (long long)cols, (long long)n_tok, (long long)r0,
                  (long long)r1, bad);
            CHECK(touched == 0, "%s: %d outputs outside [%lld,%lld) written", t->name, touched,
                  (long long)r0, (long long)r1);
            free(w), free(x), free(y);
        }
    }
}

/* Calls outside the contract give NaN, never a crash. */
static void test_unsupported(void) {
    uint8_t block[84] = {0};
    float out[256], x[256] = {0};
    pt_dequant_row(PT_TYPE_Q2_K, block, out, 256);
    CHECK(isnan(out[0]) && isnan(out[255]), "Q2_K dequant gives NaN");
    CHECK(isnan(pt_dot_row_f32(PT_TYPE_Q2_K, block, x, 256)), "Q2_K dot gives NaN");
    CHECK(isnan(pt_dot_row_f32(4, block, x, 32)), "unknown id dot gives NaN");
    CHECK(isnan(pt_dot_row_f32(PT_TYPE_Q8_0, block, x, 31)), "partial block gives NaN");
}

int main(void) {
    size_t len;
    char *data = test_read_file(test_data("quant_ref.bin"), &len);
    cursor c = {(const uint8_t *)data, (const uint8_t *)data + len};
    CHECK(memcmp(take(&c, 8), "PTQREF01", 8) == 0, "fixture magic");
    test_traits(&c);
    test_conversions(&c);
    test_rows(&c);
    CHECK(c.p == c.end, "%zu trailing bytes in the fixture", (size_t)(c.end - c.p));
    test_matmul();
    test_unsupported();
    free(data);
    return check_done("quant");
}
