/*
 * test_kv_cache.c — the paged, typed KV cache (engine/kv_cache.h,
 * kernels/cpu/kv_codec.h):
 *  1. codecs: every AVX2+F16C encoder and decoder gives bitwise the bytes
 *     and floats of its C reference on odd sizes and awkward values
 *     (f16 subnormals, values past f16's range, zeros); the f16
 *     reference equals the compiler's _Float16 conversion; decode(encode)
 *     is within each format's stated error; the key block decoders
 *     (decode_kt) give bitwise the reference's blocks, which hold the row
 *     decoder's values, on 1..16 rows of odd sizes;
 *  2. pt_kv_attend over pages (several pages, GQA tiles, windows) against
 *     pt_attn_causal_window over one flat buffer of the same (decoded)
 *     keys and values: bitwise, for every type, with this CPU's kernel
 *     variant and with the plain one ("ref"), head_dim 40 and 64 (q8f8's
 *     keys rotated at 64: the reference rotates keys and queries itself);
 *     and q8 / q8f8 with int8 scores (pt_kv_opts.qk) against the flat
 *     kernel given the queries as their int8 codes times scales: within
 *     4e-6 (float rounding), so every block and page is scored right;
 *  3. the serialized form: export, import into a cache with a tiny budget
 *     (pages spilled), export again: the same bytes, every type; likewise
 *     one position imported into a spilled page;
 *  3b. a decode of 580 positions one a step under a 4 KiB budget, every
 *     type (test_decode_spill says what it checks);
 *  4. SmolLM2 ($PETREL_SMOLLM2), greedy, prompts of held-out text: 280
 *     tokens for every type, 530 tokens for f32 (keys kept in the
 *     kernel's layout) and q8f8 (rows decoded per page; f16 and q8 share
 *     that path), 8 tokens generated: with a 1 MiB budget the
 *     logits of every step are bitwise those without one; pages went to
 *     disk and were read in place; after every step the RAM held is
 *     within max(budget, one layer's pages) + one layer's pages and the
 *     spill file's mapped pages within two layers' pages;
 *  5. errors: an unusable spill directory is one PT_ERR_IO line naming it;
 *     a write that fails (RLIMIT_FSIZE standing in for a full disk) is one
 *     PT_ERR_IO line, n_past is unchanged and the same call then succeeds
 *     (the cache stays in RAM) with the logits of a run without a budget
 *     (q8f8); a write that fails after pages went to disk likewise, the
 *     spilled pages then read in place from the mapping. Under ASan
 *     (PETREL_SANITIZED=1) part 4 runs q8f8 only.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "attention.h"
#include "check.h"
#include "cpu_features.h"
#include "kv_cache.h"
#include "kv_codec.h"
#include "ops.h"
#include "petrel.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((int64_t)(rng >> 11) - (1ll << 52)) / (float)(1ll << 52);
}

/* ---- 1. codecs ---------------------------------------------------------- */

static const char *elem_name[] = {"f32", "f16", "q8", "q8r", "e5m2"};

static void fill_awkward(float *x, int n, int kind) {
    for (int i = 0; i < n; i++) {
        float v = frand();
        switch (kind) {
        case 0: break;
        case 1: v *= 1e-5f; break;              /* f16 subnormals */
        case 2: v *= 1e5f; break;                /* past f16's range: clamped */
        case 3: v = (i % 3) ? 0.0f : v * 3.0f; break; /* mostly zeros */
        default: v = i % 2 ? 0.0f : -0.0f; break;     /* all zero: scale 0 */
        }
        x[i] = v;
    }
}

static void test_codecs(const pt_cpu *cpu) {
    static const int sizes[] = {1, 3, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 96, 100, 129, 256};
    float x[256], y0[256], y1[256];
    uint8_t b0[1200], b1[1200];
    const bool fast = cpu->avx2 && cpu->f16c;
    printf("codecs: fast paths %s\n", fast ? "AVX2+F16C" : "absent (reference only)");
    for (int e = PT_KV_ELEM_F16; e < PT_KV_ELEM_COUNT; e++) {
        const pt_kv_codec r = pt_kv_codec_ref((pt_kv_elem)e), f = pt_kv_codec_pick(cpu, (pt_kv_elem)e);
        int bad_enc = 0, bad_dec = 0, bad_err = 0;
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int kind = 0; kind < 5; kind++) {
                const int n = sizes[si];
                const size_t nb = pt_kv_row_bytes((pt_kv_elem)e, n);
                fill_awkward(x, n, kind);
                memset(b0, 0xA5, sizeof b0);
                memset(b1, 0x5A, sizeof b1);
                r.encode(x, n, b0);
                f.encode(x, n, b1);
                if (memcmp(b0, b1, nb)) bad_enc++;
                r.decode(b0, n, y0);
                f.decode(b0, n, y1);
                if (memcmp(y0, y1, (size_t)n * sizeof(float))) bad_dec++;
                /* the format's error bound, independent of either version */
                for (int i = 0; i < n; i++) {
                    const double xc = fmin(fmax(x[i], -65504.0), 65504.0); /* f16's clamp */
                    double want = xc, bound;
                    if (e == PT_KV_ELEM_F16) {
                        bound = fabs(xc) / 2048 + 0x1p-25; /* half an ulp; subnormals' half ulp */
                    } else if (e == PT_KV_ELEM_E5M2) {
                        want = fmin(fmax(xc, -57344.0), 57344.0); /* saturated */
                        bound = fabs(want) * (0.125 + 1.0 / 2048) * 1.001 + 0x1p-17;
                    } else { /* int8: half a step of the block's scale, plus the f16 rounding of the scale */
                        const int b0i = e == PT_KV_ELEM_Q8 ? i / 32 * 32 : 0;
                        const int b1i = e == PT_KV_ELEM_Q8 ? (b0i + 32 < n ? b0i + 32 : n) : n;
                        double bm = 0;
                        for (int k2 = b0i; k2 < b1i; k2++) bm = fmax(bm, fabs(x[k2]));
                        const float d = (float)(bm / 127.0);
                        const double ds = pt_kv_f16_to_f32(pt_kv_f32_to_f16(d));
                        want = x[i];
                        bound = d * 0.501 + 127.0 * fabs(ds - d) + 1e-30;
                    }
                    if (!(fabs((double)y0[i] - want) <= bound) || !isfinite(y0[i])) bad_err++;
                }
            }
        CHECK(bad_enc == 0, "%s: %d encodings differ from the reference", elem_name[e], bad_enc);
        CHECK(bad_dec == 0, "%s: %d decodings differ from the reference", elem_name[e], bad_dec);
        CHECK(bad_err == 0, "%s: %d values outside the format's error bound", elem_name[e], bad_err);
    }
    /* decode_kt: blocks of n rows (1..16) of odd sizes, rows padded apart
     * (stride > row bytes), mixed kinds of values: the fast version gives
     * bitwise the reference's block, which is the row decoder's values
     * down each lane with zeros past n */
    for (int e = PT_KV_ELEM_F16; e < PT_KV_ELEM_COUNT; e++) {
        const pt_kv_codec r = pt_kv_codec_ref((pt_kv_elem)e), f = pt_kv_codec_pick(cpu, (pt_kv_elem)e);
        static uint8_t rows[PT_KV_KT_LANES * 1100];
        static float k0[256 * PT_KV_KT_LANES], k1[256 * PT_KV_KT_LANES];
        float tmp[256];
        int bad_kt = 0, bad_lane = 0, cases = 0;
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int n = 1; n <= PT_KV_KT_LANES; n++) {
                const int nd = sizes[si];
                const size_t rb = pt_kv_row_bytes((pt_kv_elem)e, nd), stride = rb + (size_t)(n % 3);
                for (int i = 0; i < n; i++) {
                    fill_awkward(x, nd, (i + n) % 5 == 4 ? 0 : (i + n) % 5);
                    r.encode(x, nd, rows + (size_t)i * stride);
                }
                memset(k0, 0x7f, sizeof k0);
                memset(k1, 0x3f, sizeof k1);
                r.decode_kt(rows, stride, n, nd, k0, tmp);
                f.decode_kt(rows, stride, n, nd, k1, tmp);
                cases++;
                if (memcmp(k0, k1, sizeof(float) * (size_t)nd * PT_KV_KT_LANES)) bad_kt++;
                for (int i = 0; i < PT_KV_KT_LANES; i++) {
                    if (i < n) r.decode(rows + (size_t)i * stride, nd, y0);
                    for (int d = 0; d < nd; d++) {
                        const float want = i < n ? y0[d] : 0.0f;
                        if (memcmp(&k0[(size_t)d * PT_KV_KT_LANES + i], &want, sizeof want)) bad_lane++;
                    }
                }
            }
        CHECK(bad_kt == 0, "%s: %d of %d key blocks differ from the reference", elem_name[e], bad_kt, cases);
        CHECK(bad_lane == 0, "%s: %d key block values are not the row decoder's", elem_name[e], bad_lane);
    }
#ifdef __FLT16_MAX__
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)(rng >> 32);
        frand();
        float f;
        memcpy(&f, &u, 4);
        if (!isfinite(f) || fabsf(f) > 65504.0f) continue;
        const _Float16 h = (_Float16)f;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        if (pt_kv_f32_to_f16(f) != hb || pt_kv_f16_to_f32(hb) != (float)h) bad++;
    }
    CHECK(bad == 0, "f16 reference: %d of 200000 random floats differ from _Float16", bad);
#endif
}

/* ---- 2, 3: attention over pages and the serialized form ---------------- */

static void test_attend(const pt_cpu *cpu, int D) {
    const int L = 3, Hkv = 2, n_ctx = 700, group = 3;
    for (int type = PT_KV_F32; type <= PT_KV_Q8F8; type++)
    for (int qk = PT_KV_QK_FLOAT; qk <= PT_KV_QK_INT8; qk++) {
        /* int8 scores: the int8-key types only (the others ignore it) */
        const bool i8 = qk == PT_KV_QK_INT8;
        if (i8 && type != PT_KV_Q8 && type != PT_KV_Q8F8) continue;
        /* under ASan (50x slower) int8 scores with this CPU's variant only
         * (test_kv_qk holds every variant to the reference there) */
        const char *san = getenv("PETREL_SANITIZED");
        if (i8 && san && !strcmp(san, "1") && cpu->variant == PT_CPU_REF) continue;
        pt_kv_cache kv;
        pt_error err = {0};
        const pt_kv_opts o = {type, cpu, 0, NULL, qk};
        CHECK(pt_kv_init(&kv, L, n_ctx, Hkv, D, &o, &err) == PT_OK, "init: %s", err.msg);
        /* q8f8 keys are kept rotated (kv_cache.h) when D is a power of two */
        const bool rot = type == PT_KV_Q8F8 && (D & (D - 1)) == 0;
        CHECK(kv.rot_keys == rot, "%s, D %d: rotated keys %d", pt_kv_type_name(type), D, kv.rot_keys);
        CHECK((kv.qk != NULL) == i8, "%s: int8 scores %d, asked %d", pt_kv_type_name(type), kv.qk != NULL, i8);
        float *k = malloc(sizeof(float) * n_ctx * Hkv * D), *v = malloc(sizeof(float) * n_ctx * Hkv * D);
        for (int i = 0; i < n_ctx * Hkv * D; i++) {
            k[i] = frand() * 2.0f;
            v[i] = frand();
        }
        CHECK(pt_kv_begin_layer(&kv, 1, 0, n_ctx, &err) == PT_OK, "begin: %s", err.msg);
        for (int p = 0; p < n_ctx; p++) pt_kv_store(&kv, 1, p, k + (size_t)p * Hkv * D, v + (size_t)p * Hkv * D);
        /* flat buffers of what the cache holds (decoded by the reference) */
        const pt_kv_codec kc = pt_kv_codec_ref(kv.kelem), vc = pt_kv_codec_ref(kv.velem);
        const int nblk = (n_ctx + PT_ATTN_BK - 1) / PT_ATTN_BK;
        float *kt = calloc((size_t)nblk * PT_ATTN_BK * D, sizeof(float)), *vf = malloc(sizeof(float) * n_ctx * D);
        uint8_t row[512];
        float dec[64], kr[64];
        const size_t scr_n = pt_kv_attend_scratch_floats(&kv, 64 * group);
        float *scr = malloc(scr_n * sizeof(float)), *scr2 = malloc(scr_n * sizeof(float));
        int diff = 0, cases = 0;
        double max_err = 0; /* int8 scores: the largest |o1 - o2| */
        for (int h = 0; h < Hkv; h++) {
            for (int p = 0; p < n_ctx; p++) {
                /* the reference of rotated keys: pt_fwht by hand, before encoding */
                memcpy(kr, k + ((size_t)p * Hkv + h) * D, sizeof(float) * D);
                if (rot) pt_fwht(kr, D);
                kc.encode(kr, D, row);
                kc.decode(row, D, dec);
                pt_attn_store_key(kt, (int64_t)PT_ATTN_BK * D, p, dec, D);
                vc.encode(v + ((size_t)p * Hkv + h) * D, D, row);
                vc.decode(row, D, vf + (size_t)p * D);
            }
            static const int p0s[] = {0, 5, 250, 255, 256, 300, 511, 600};
            static const int nts[] = {1, 7, 16, 64};
            static const int windows[] = {0, 20, 300};
            for (size_t a = 0; a < sizeof p0s / sizeof *p0s; a++)
                for (size_t b = 0; b < sizeof nts / sizeof *nts; b++)
                    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
                        const int p0 = p0s[a], nt = nts[b];
                        if (p0 + nt > n_ctx) continue;
                        static float q[64 * 3 * 64], qr[64 * 3 * 64], o1[64 * 3 * 64], o2[64 * 3 * 64];
                        for (int i = 0; i < nt * group * D; i++) q[i] = frand();
                        memcpy(qr, q, sizeof(float) * nt * group * D);
                        for (int i = 0; rot && i < nt * group; i++) pt_fwht(qr + (size_t)i * D, D);
                        /* int8 scores: the reference takes the queries as
                         * their int8 codes times scales (kv_qk.h), so only
                         * float rounding tells the two apart */
                        for (int i = 0; i8 && i < nt * group; i++) {
                            int8_t qc[64];
                            float qd[2];
                            int32_t qsum[2];
                            pt_kv_qk_quantize(qr + (size_t)i * D, D, kv.qk_blk, qc, qd, qsum);
                            for (int d = 0; d < D; d++) qr[(size_t)i * D + d] = qc[d] * qd[d / kv.qk_blk];
                        }
                        pt_kv_attend(&kv, 1, h, o1, group * D, q, group * D, nt, group, p0, windows[w], 0.15f, scr);
                        pt_attn_causal_window(cpu, o2, group * D, qr, group * D, nt, group, kt,
                                              (int64_t)PT_ATTN_BK * D, vf, D, p0, windows[w], D, 0.15f, scr2);
                        cases++;
                        if (!i8 && memcmp(o1, o2, sizeof(float) * nt * group * D)) diff++;
                        for (int i = 0; i8 && i < nt * group * D; i++) {
                            const double e = fabs((double)o1[i] - o2[i]);
                            if (!(e <= max_err)) max_err = e; /* NaN too */
                        }
                    }
        }
        CHECK(diff == 0, "%s: %d of %d attention cases differ from the flat kernel", pt_kv_type_name(type), diff,
              cases);
        /* outputs are averages of values in [-1, 1): a wrong score of any
         * size moves them far more than rounding */
        if (i8) printf("%s, D %d, int8 scores: %.3g from the flat kernel\n", pt_kv_type_name(type), D, max_err);
        CHECK(max_err <= 4e-6, "%s, int8 scores: %.3g from the flat kernel on the dequantized queries",
              pt_kv_type_name(type), max_err);

        /* 3: export, import under a tiny budget (spilled), export again */
        const int n_pos = 613;
        const size_t lb = pt_kv_layer_bytes(&kv, n_pos);
        CHECK(lb == (size_t)n_pos * pt_kv_bytes_per_token(&kv) / L, "%s: layer bytes %zu", pt_kv_type_name(type), lb);
        uint8_t *s1 = malloc(lb), *s2 = malloc(lb);
        CHECK(pt_kv_export_layer(&kv, 1, n_pos, s1, &err) == PT_OK, "export: %s", err.msg);
        pt_kv_cache kv2;
        const pt_kv_opts o2 = {type, cpu, 4096, P_tmpdir, qk};
        CHECK(pt_kv_init(&kv2, L, n_ctx, Hkv, D, &o2, &err) == PT_OK, "init with budget: %s", err.msg);
        /* layer 1 then 0 and 2: layer 1 goes to disk and, not being the
         * next layer after 2, is not read ahead again */
        CHECK(pt_kv_import_layer(&kv2, 1, n_pos, s1, &err) == PT_OK, "import: %s", err.msg);
        CHECK(pt_kv_import_layer(&kv2, 0, n_pos, s1, &err) == PT_OK, "import: %s", err.msg);
        CHECK(pt_kv_import_layer(&kv2, 2, n_pos, s1, &err) == PT_OK, "import: %s", err.msg);
        pt_kv_stats st;
        pt_kv_get_stats(&kv2, &st);
        CHECK(st.disk_bytes > 0, "%s: nothing spilled by the import under a 4 KiB budget", pt_kv_type_name(type));
        memset(s2, 0, lb);
        CHECK(pt_kv_export_layer(&kv2, 1, n_pos, s2, &err) == PT_OK, "export spilled: %s", err.msg);
        CHECK(!memcmp(s1, s2, lb), "%s: export after import (spilled) differs", pt_kv_type_name(type));
        /* and the attention over the imported cache is the original's */
        CHECK(pt_kv_begin_layer(&kv2, 1, n_pos, 0, &err) == PT_OK, "begin: %s", err.msg);
        float q[8 * 3 * 64], o1[8 * 3 * 64], o2b[8 * 3 * 64];
        for (int i = 0; i < 8 * group * D; i++) q[i] = frand();
        pt_kv_attend(&kv, 1, 1, o1, group * D, q, group * D, 8, group, n_pos - 8, 0, 0.15f, scr);
        pt_kv_attend(&kv2, 1, 1, o2b, group * D, q, group * D, 8, group, n_pos - 8, 0, 0.15f, scr2);
        CHECK(!memcmp(o1, o2b, sizeof(float) * 8 * group * D), "%s: attention over the imported cache differs",
              pt_kv_type_name(type));
        /* an import of one position into a spilled page (it is copied into
         * RAM, not stored through), exported again: the same bytes */
        const size_t lb1 = pt_kv_layer_bytes(&kv, 1);
        uint8_t *one = malloc(lb1), *one2 = malloc(lb1);
        CHECK(pt_kv_export_layer(&kv, 1, 1, one, &err) == PT_OK, "export one: %s", err.msg);
        CHECK(pt_kv_import_layer(&kv2, 1, 1, one, &err) == PT_OK, "import one: %s", err.msg);
        CHECK(pt_kv_export_layer(&kv2, 1, 1, one2, &err) == PT_OK, "export one again: %s", err.msg);
        CHECK(!memcmp(one, one2, lb1), "%s: one position imported into a spilled page differs",
              pt_kv_type_name(type));
        free(one);
        free(one2);
        CHECK(pt_kv_type_of(&kv2) == type, "type_of");
        pt_kv_release(&kv2);
        free(s1);
        free(s2);
        free(scr);
        free(scr2);
        free(kt);
        free(vf);
        free(k);
        free(v);
        pt_kv_release(&kv);
    }
}

/* ---- 3b: a long decode under a tiny budget ------------------------------ */

/* The spilling cache's figures, read under its lock (the reader thread
 * may be working on the next layer). */
typedef struct spill_snap {
    uint64_t ram, mapped, read_backs, written;
} spill_snap;

static spill_snap snap(const pt_kv_cache *kv) {
    pt_kv_spill_lock(kv);
    const spill_snap s = {kv->ram_bytes, kv->map_bytes, kv->read_backs, kv->bytes_written};
    pt_kv_spill_unlock(kv);
    return s;
}

/* One step of positions [p0, p0 + n) over every layer, the same keys and
 * values into both caches; after each layer one query per KV head (a GQA
 * group of 2) at the last position attends over both. Returns the cases
 * that differ, or -1 when kv1's end_store fails (which stops the step, as
 * the forward pass does). Counts in *over the layers after which kv1
 * holds more RAM than kv_cache.h's bound, or maps more than two layers'
 * pages (*extent: the most pages a layer has held). */
static int decode_step(pt_kv_cache *kv0, pt_kv_cache *kv1, int p0, int n, float *k, float *v, float *scr,
                       int *over, uint64_t *extent, uint64_t *max_mapped, pt_error *err) {
    const int L = kv0->n_layer, Hkv = kv0->n_head_kv, D = kv0->head_dim, group = 2;
    const uint64_t pg = kv1->page_bytes, used = (uint64_t)(p0 + n + PT_KV_PAGE - 1) / PT_KV_PAGE;
    static float q[2 * 64], out0[2 * 64], out1[2 * 64];
    int diff = 0;
    for (int l = 0; l < L; l++) {
        CHECK(pt_kv_begin_layer(kv0, l, p0, n, err) == PT_OK, "begin: %s", err->msg);
        CHECK(pt_kv_begin_layer(kv1, l, p0, n, err) == PT_OK, "begin with budget: %s", err->msg);
        for (int i = 0; i < n * Hkv * D; i++) {
            k[i] = frand() * 2.0f;
            v[i] = frand();
        }
        for (int t = 0; t < n; t++) {
            pt_kv_store(kv0, l, p0 + t, k + (size_t)t * Hkv * D, v + (size_t)t * Hkv * D);
            pt_kv_store(kv1, l, p0 + t, k + (size_t)t * Hkv * D, v + (size_t)t * Hkv * D);
        }
        CHECK(pt_kv_end_store(kv0, err) == PT_OK, "end_store without a budget: %s", err->msg);
        if (pt_kv_end_store(kv1, err) != PT_OK) return -1;
        for (int h = 0; h < Hkv; h++) {
            for (int i = 0; i < group * D; i++) q[i] = frand();
            pt_kv_attend(kv0, l, h, out0, group * D, q, group * D, 1, group, p0 + n - 1, 0, 0.125f, scr);
            pt_kv_attend(kv1, l, h, out1, group * D, q, group * D, 1, group, p0 + n - 1, 0, 0.125f, scr);
            diff += memcmp(out0, out1, sizeof(float) * group * D) != 0;
        }
        /* kv_cache.h's bound; a step of one position stores into at most
         * one page, read ahead none */
        const spill_snap s = snap(kv1);
        const uint64_t held = n == 1 ? pg : used * pg, ahead = n == 1 ? pg : used * pg;
        if (*extent < used) *extent = used;
        if (s.ram > (kv1->budget > held ? kv1->budget : held) + ahead || s.mapped > 2 * *extent * pg) (*over)++;
        if (s.mapped > *max_mapped) *max_mapped = s.mapped;
    }
    return diff;
}

/* Two caches, one without a budget and one with 4 KiB (every page but the
 * one being filled spilled), fed the same keys and values: a prompt of
 * 200 positions, then one position a step through three page boundaries
 * (to 780), then cut back to 300 (into a full page on disk) and 20 more.
 * Attention over both is bitwise the same after every layer of every
 * step. The steps of one position read no page back into RAM, and those
 * that start no page (whose page is spilled) write exactly their rows to
 * the spill file: for each layer and head a key row (f32: its key block)
 * and a value row. The RAM held and the mapped bytes stay within
 * kv_cache.h's bound. Then a write that fails (RLIMIT_FSIZE): one
 * PT_ERR_IO line, and the step done again reads its page back into RAM
 * and attends as the cache without a budget does, as do 10 steps after
 * it (spilling stopped, spilled pages still read in place). */
static void test_decode_spill(const pt_cpu *cpu) {
    const int L = 3, Hkv = 2, D = 64, n_ctx = 800, prompt = 200;
    signal(SIGXFSZ, SIG_IGN);
    for (int type = PT_KV_F32; type <= PT_KV_Q8F8; type++) {
        pt_kv_cache kv0, kv1;
        pt_error err = {0};
        const pt_kv_opts o0 = {type, cpu, 0, NULL, PT_KV_QK_AUTO}, o1 = {type, cpu, 4096, P_tmpdir, PT_KV_QK_AUTO};
        CHECK(pt_kv_init(&kv0, L, n_ctx, Hkv, D, &o0, &err) == PT_OK, "init: %s", err.msg);
        CHECK(pt_kv_init(&kv1, L, n_ctx, Hkv, D, &o1, &err) == PT_OK, "init with budget: %s", err.msg);
        const char *tn = pt_kv_type_name(type);
        float *scr = malloc(pt_kv_attend_scratch_floats(&kv0, 2) * sizeof(float));
        float *k = malloc(sizeof(float) * prompt * Hkv * D), *v = malloc(sizeof(float) * prompt * Hkv * D);
        const uint64_t rows = (uint64_t)L * Hkv * ((type == PT_KV_F32 ? PT_ATTN_BK : 1) * kv1.krow + kv1.vrow);
        int diff = 0, over = 0, over_after = 0, backs = 0, wrong_writes = 0, steps = 0;
        uint64_t max_mapped = 0, extent = 0;
        /* the prompt; one position a step to 780; cut back to 300, 20 more */
        const int from[] = {0, prompt, 300}, to[] = {prompt, 780, 320};
        for (int ph = 0; ph < 3; ph++)
            for (int p0 = from[ph]; p0 < to[ph];) {
                const int n = ph == 0 ? prompt : 1;
                const spill_snap s0 = snap(&kv1);
                const int d = decode_step(&kv0, &kv1, p0, n, k, v, scr, &over, &extent, &max_mapped, &err);
                CHECK(d >= 0, "%s: end_store at %d: %s", tn, p0, err.msg);
                diff += d > 0 ? d : 0;
                const spill_snap s1 = snap(&kv1);
                if (n == 1) {
                    steps++;
                    backs += s1.read_backs != s0.read_backs;
                    /* a step that starts a page, and the first after the prompt,
                     * write whole pages out (first writes): not counted */
                    if (p0 % PT_KV_PAGE > 1 && p0 != prompt && s1.written - s0.written != rows) wrong_writes++;
                }
                p0 += n;
            }
        CHECK(diff == 0, "%s: %d attention cases differ from the cache without a budget", tn, diff);
        CHECK(over == 0, "%s: RAM or mapped bytes above kv_cache.h's bound in %d layer steps", tn, over);
        CHECK(backs == 0, "%s: %d of %d steps of one position read a page back into RAM", tn, backs, steps);
        CHECK(wrong_writes == 0, "%s: %d steps of one position did not write exactly their rows (%llu bytes)", tn,
              wrong_writes, (unsigned long long)rows);
        CHECK(max_mapped > 0, "%s: no spilled page was read in place", tn);

        /* a write that fails: a 1-byte file size limit (spilling then
         * stops: RAM is no longer held within the budget, over_after) */
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 1;
        setrlimit(RLIMIT_FSIZE, &lim);
        const int d = decode_step(&kv0, &kv1, 320, 1, k, v, scr, &over_after, &extent, &max_mapped, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(d == -1 && strstr(err.msg, "spill") && !strchr(err.msg, '\n'), "%s: a failed write: %d, '%s'", tn, d,
              err.msg);
        const spill_snap s0 = snap(&kv1);
        diff = 0;
        for (int p0 = 320; p0 < 331; p0++) {
            const int dd = decode_step(&kv0, &kv1, p0, 1, k, v, scr, &over_after, &extent, &max_mapped, &err);
            CHECK(dd >= 0, "%s: end_store at %d after a failed write: %s", tn, p0, err.msg);
            diff += dd > 0 ? dd : 0;
        }
        CHECK(diff == 0, "%s: %d attention cases differ after a failed write", tn, diff);
        CHECK(snap(&kv1).read_backs > s0.read_backs, "%s: after a failed write no page was read back", tn);
        pt_kv_stats st;
        pt_kv_get_stats(&kv1, &st);
        CHECK(st.disk_bytes > 0, "%s: after a failed write nothing is on disk", tn);
        free(scr);
        free(k);
        free(v);
        pt_kv_release(&kv0);
        pt_kv_release(&kv1);
    }
}

/* ---- 4, 5: SmolLM2 ------------------------------------------------------ */

#define N_GEN 8

typedef struct run_out {
    float *logits; /* [N_GEN + 1][V]: after the prompt, after each generated token */
    bool ok;
} run_out;

/* Greedy decode of prompt, recording the logits; with a budget checks the
 * RAM held after every step. */
static run_out greedy(pt_model *m, const pt_token *prompt, int n, int type, int ram_mb, const char *dir, int V,
                      uint64_t layer_bytes, pt_kv_stats *final, uint64_t *max_mapped) {
    run_out r = {calloc((size_t)(N_GEN + 1) * V, sizeof(float)), false};
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 640;
    cp.n_threads = 2;
    cp.n_batch = 128;
    cp.kv_type = (pt_kv_type)type;
    cp.kv_ram_mb = ram_mb;
    cp.kv_spill_dir = dir;
    pt_context *c = NULL;
    pt_error err = {0};
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) {
        CHECK(0, "context: %s", err.msg);
        return r;
    }
    pt_status st = pt_decode(c, prompt, n, NULL, &err);
    int over = 0;
    for (int g = 0; st == PT_OK && g <= N_GEN; g++) {
        const float *lg = pt_context_logits(c);
        memcpy(r.logits + (size_t)g * V, lg, (size_t)V * sizeof(float));
        pt_kv_stats ks;
        pt_context_kv_stats(c, &ks);
        const uint64_t cap = (ks.budget_bytes > layer_bytes ? ks.budget_bytes : layer_bytes) + layer_bytes;
        if (ram_mb && (ks.ram_bytes > cap || ks.mapped_bytes > 2 * layer_bytes)) over++;
        if (ks.mapped_bytes > *max_mapped) *max_mapped = ks.mapped_bytes;
        if (g == N_GEN) break;
        pt_token best = 0;
        for (int i = 1; i < V; i++)
            if (lg[i] > lg[best]) best = i;
        st = pt_decode(c, &best, 1, NULL, &err);
    }
    CHECK(st == PT_OK, "decode: %s", err.msg);
    CHECK(over == 0, "type %d: RAM above max(budget, a layer) + a layer, or more than two layers mapped, after %d steps",
          type, over);
    pt_context_kv_stats(c, final);
    r.ok = st == PT_OK;
    pt_context_free(c);
    return r;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 16);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static void test_model(void) {
    pt_model *m = NULL;
    pt_error err = {0};
    if (pt_model_load(test_smollm2_path(), NULL, &m, &err) != PT_OK) {
        CHECK(0, "load %s: %s", test_smollm2_path(), err.msg);
        return;
    }
    pt_model_info in;
    pt_model_get_info(m, &in);
    const int V = in.n_vocab;
    size_t len = 0;
    char *text = read_file(test_data("perplexity_text.txt"), &len);
    CHECK(text != NULL, "cannot read perplexity_text.txt");
    if (!text) {
        pt_model_free(m);
        return;
    }
    pt_token *all = malloc(sizeof(pt_token) * 8192);
    const int n_all = pt_tokenize(m, text, len, true, false, all, 8192);
    CHECK(n_all > 1200, "text gave %d tokens", n_all);
    struct { int off, n; } prompts[] = {{0, 280}, {1000, 530}};
    float *ref_q8f8 = NULL; /* q8f8, prompt 0, no budget: for the full-disk case */
    const bool sanitized = getenv("PETREL_SANITIZED") && !strcmp(getenv("PETREL_SANITIZED"), "1");
    for (int type = PT_KV_F32; type <= PT_KV_Q8F8; type++)
        for (int pi = 0; pi < 2; pi++) {
            if (pi == 1 && (sanitized || type == PT_KV_F16 || type == PT_KV_Q8)) continue;
            if (sanitized && type != PT_KV_Q8F8) continue; /* under ASan (50x slower): q8f8, one prompt */
            /* a layer's pages at the longest context this run reaches */
            pt_kv_cache probe;
            const pt_kv_opts po = {type, NULL, 0, NULL, PT_KV_QK_AUTO};
            pt_kv_init(&probe, in.n_layer, 640, in.n_head_kv, in.head_dim, &po, &err);
            const uint64_t layer_bytes =
                (uint64_t)((prompts[pi].n + N_GEN + PT_KV_PAGE - 1) / PT_KV_PAGE) * probe.page_bytes;
            pt_kv_release(&probe);
            pt_kv_stats s0, s1;
            uint64_t map0 = 0, map1 = 0;
            run_out a = greedy(m, all + prompts[pi].off, prompts[pi].n, type, 0, NULL, V, layer_bytes, &s0, &map0);
            run_out b = greedy(m, all + prompts[pi].off, prompts[pi].n, type, 1, P_tmpdir, V, layer_bytes, &s1, &map1);
            CHECK(a.ok && b.ok && !memcmp(a.logits, b.logits, sizeof(float) * (N_GEN + 1) * V),
                  "%s, prompt %d: logits with a 1 MiB budget differ from no budget", pt_kv_type_name(type), pi);
            CHECK(s0.disk_bytes == 0 && s0.budget_bytes == 0 && map0 == 0, "no budget: %llu bytes on disk, %llu mapped",
                  (unsigned long long)s0.disk_bytes, (unsigned long long)map0);
            CHECK(map1 > 0, "%s: no spilled page was read in place", pt_kv_type_name(type));
            CHECK(s1.disk_bytes > 0 && s1.read_hits + s1.read_stalls > 0 && s1.budget_bytes == 1u << 20,
                  "%s: 1 MiB budget: disk %llu, hits %llu, stalls %llu", pt_kv_type_name(type),
                  (unsigned long long)s1.disk_bytes, (unsigned long long)s1.read_hits,
                  (unsigned long long)s1.read_stalls);
            const int D = in.head_dim;
            const uint32_t per_head[] = {8u * D, 4u * D, 2u * D + 4u * ((D + 31) / 32), 2u * D + 2u};
            CHECK(s1.bytes_per_token == (uint32_t)in.n_layer * in.n_head_kv * per_head[type],
                  "%s: %u bytes per token, petrel.h says %u per token and head", pt_kv_type_name(type),
                  s1.bytes_per_token, per_head[type]);
            printf("%s prompt %d: bytes/token %u, ram %llu disk %llu mapped at most %llu, read ahead %llu hits %llu "
                   "stalls %llu\n",
                   pt_kv_type_name(type), pi, s1.bytes_per_token, (unsigned long long)s1.ram_bytes,
                   (unsigned long long)s1.disk_bytes, (unsigned long long)map1, (unsigned long long)s1.pages_read_ahead,
                   (unsigned long long)s1.read_hits, (unsigned long long)s1.read_stalls);
            if (type == PT_KV_Q8F8 && pi == 0) ref_q8f8 = a.logits;
            else free(a.logits);
            free(b.logits);
        }

    /* 5. an unusable directory: a path under a regular file */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/petrel-kv-test-%d", P_tmpdir, (int)getpid());
    FILE *f = fopen(dir, "w");
    CHECK(f != NULL, "cannot make %s", dir);
    if (f) fclose(f);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/spill", dir);
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 640;
    cp.n_threads = 2;
    cp.kv_ram_mb = 1;
    cp.kv_spill_dir = sub;
    pt_context *c = NULL;
    pt_status st = pt_context_new(m, &cp, &c, &err);
    CHECK(st == PT_ERR_IO && c == NULL && strstr(err.msg, sub) && !strchr(err.msg, '\n'),
          "unusable spill dir: status %d, '%s'", (int)st, err.msg);
    unlink(dir);

    /* 5. a failed write: the file size limit stands in for a full disk */
    cp.kv_spill_dir = P_tmpdir;
    cp.n_batch = 128;
    cp.kv_type = PT_KV_Q8F8;
    st = pt_context_new(m, &cp, &c, &err);
    CHECK(st == PT_OK, "context: %s", err.msg);
    if (st == PT_OK) {
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 2u << 20; /* 2 MiB of spill file: page slots past it fail */
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &lim);
        st = pt_decode(c, all, 280, NULL, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(st == PT_ERR_IO && strstr(err.msg, "spill") && !strchr(err.msg, '\n'),
              "full spill file: status %d, '%s'", (int)st, err.msg);
        CHECK(pt_context_n_past(c) == 0, "n_past %d after a failed decode", pt_context_n_past(c));
        printf("full disk: %s\n", err.msg);
        st = pt_decode(c, all, 280, NULL, &err);
        CHECK(st == PT_OK, "decode after the failure: %s", err.msg);
        CHECK(st == PT_OK && ref_q8f8 && !memcmp(pt_context_logits(c), ref_q8f8, sizeof(float) * V),
              "logits after a failed spill differ from a run without a budget");
        pt_context_free(c);
    }

    /* 5. a failed write after pages went to disk: those are then read in
     * place from the mapping (never a fault), the call that failed leaves
     * n_past as it was, and the next call gives the logits of a run
     * without a budget. Prompt 0's first page (256 positions) is spilled
     * under no limit; then every write fails (a 1-byte size limit), so
     * the first slot written for the second page fails. */
    st = pt_context_new(m, &cp, &c, &err);
    CHECK(st == PT_OK, "context: %s", err.msg);
    if (st == PT_OK) {
        st = pt_decode(c, all, 256, NULL, &err);
        CHECK(st == PT_OK, "decode: %s", err.msg);
        pt_kv_stats ks;
        pt_context_kv_stats(c, &ks);
        CHECK(ks.disk_bytes > 0, "nothing spilled by 256 positions under 1 MiB");
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 1;
        setrlimit(RLIMIT_FSIZE, &lim);
        st = pt_decode(c, all + 256, 24, NULL, &err);
        CHECK(st == PT_ERR_IO && strstr(err.msg, "spill") && !strchr(err.msg, '\n') && pt_context_n_past(c) == 256,
              "a failed write after spilling: status %d, n_past %d, '%s'", (int)st, pt_context_n_past(c), err.msg);
        const pt_status st2 = pt_decode(c, all + 256, 24, NULL, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(st2 == PT_OK, "decode after the failure: %s", err.msg);
        /* once spilling stopped no page goes to disk, and only the second
         * pages (stored into) come back to RAM: a first page still on disk
         * was attended in place by every layer of the last call */
        pt_context_kv_stats(c, &ks);
        CHECK(ks.disk_bytes > 0, "after the failure nothing is on disk: no page was read in place");
        CHECK(st2 == PT_OK && pt_context_n_past(c) == 280 && ref_q8f8 &&
                  !memcmp(pt_context_logits(c), ref_q8f8, sizeof(float) * V),
              "logits read in place after a failed spill differ from a run without a budget");
        pt_context_free(c);
    }
    free(ref_q8f8);
    free(all);
    free(text);
    pt_model_free(m);
}

int main(void) {
    pt_cpu cpu;
    pt_cpu_detect(&cpu);
    test_codecs(&cpu);
    test_attend(&cpu, 40);
    test_attend(&cpu, 64);
    pt_cpu ref; /* the plain kernel build and the reference codecs */
    if (cpu.variant != PT_CPU_REF && pt_cpu_with_variant(&cpu, PT_CPU_REF, &ref)) {
        test_attend(&ref, 40);
        test_attend(&ref, 64);
    }
    test_decode_spill(&cpu);
    test_model();
    return check_done("test_kv_cache");
}
