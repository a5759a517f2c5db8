/*
 * sd_weight_prep.c — turning a stored linear or conv weight into the
 * pt_weight a layer multiplies by (sd_nn.h, "Weights"), and float copies
 * of norm scales and biases.
 *
 * A matrix of c_out rows and K = k*k*c_in logical columns ends up as one of
 *   - a view of the stored bytes: torch layout with k == 1 (a Linear or a
 *     1x1 conv is already [c_out][c_in]) kept as stored, or
 *     SD_LAYOUT_CONV_OHWI_PAD (already rows of (ky, kx, c_in), k_pad long);
 *   - an owned copy [c_out][k_pad]: rows reordered from torch's
 *     (c_in, ky, kx) to (ky, kx, c_in) and zero-padded to k_pad =
 *     round_up(K, 32), in the stored float type (policy "stored") or
 *     quantized to Q8_0 / Q4_0 (GGML's reference rounding);
 * then repacked for the int8 kernels when the CPU variant can take it (the
 * owned copy is then dropped: the packed one holds the same values).
 */
#include "sd_nn_impl.h"

#include "quant.h"
#include "quant_blocks.h"
#include "status.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sd_name(char buf[SD_NAME_MAX], const char *prefix, const char *fmt, ...) {
    const int n = snprintf(buf, SD_NAME_MAX, "%s", prefix);
    if (n >= 0 && n < SD_NAME_MAX) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf + n, (size_t)(SD_NAME_MAX - n), fmt, ap);
        va_end(ap);
    }
    return buf;
}

/* ---- vectors ---------------------------------------------------------------- */

static bool is_float_type(uint32_t t) {
    return t == PT_TYPE_F32 || t == PT_TYPE_F16 || t == PT_TYPE_BF16;
}

/* Element i of a float-typed tensor. */
static float elem_f32(const sd_tensor *t, int64_t i) {
    switch (t->type) {
    case PT_TYPE_F32: return ((const float *)t->data)[i];
    case PT_TYPE_F16: return pt_fp16_to_f32(((const uint16_t *)t->data)[i]);
    default: return pt_bf16_to_f32(((const uint16_t *)t->data)[i]);
    }
}

pt_status sd_vector_from_tensor(sd_runtime *rt, const sd_tensor *t, const char *name, int c,
                                float **out, pt_error *err) {
    *out = NULL;
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->shape[d];
    if (n != c || !is_float_type(t->type) || t->nbytes < (uint64_t)n * (t->type == PT_TYPE_F32 ? 4 : 2))
        return pt_fail(err, PT_ERR_FORMAT, "tensor %s: %lld values of type %s, expected %d floats",
                       name, (long long)n, pt_type_name(t->type), c);
    float *v = sd_rt_alloc(rt, (size_t)c * sizeof(float), SD_MEM_WEIGHTS);
    if (!v) return pt_fail(err, PT_ERR_NOMEM, "out of memory for %s", name);
    for (int i = 0; i < c; i++) v[i] = elem_f32(t, i);
    *out = v;
    return PT_OK;
}

pt_status sd_load_vector(sd_runtime *rt, const sd_weights *w, const char *prefix,
                         const char *suffix, int c, bool required, float **out, pt_error *err) {
    *out = NULL;
    char name[SD_NAME_MAX];
    sd_name(name, prefix, "%s", suffix);
    sd_tensor t;
    if (!sd_weights_get(w, name, &t)) {
        if (!required) return PT_OK;
        return pt_fail(err, PT_ERR_FORMAT, "missing tensor %s", name);
    }
    return sd_vector_from_tensor(rt, &t, name, c, out, err);
}

void sd_free_vector(sd_runtime *rt, float *v, int c) {
    sd_rt_dealloc(rt, v, (size_t)c * sizeof(float), SD_MEM_WEIGHTS);
}

/* ---- matrices ------------------------------------------------------------------ */

static int64_t round32(int64_t n) { return (n + 31) / 32 * 32; }

/* Build the owned [c_out][k_pad] copy of torch-layout float tensor t
 * (rows reordered to (ky, kx, c_in), zero-padded) in type `type` (F32,
 * F16, BF16 or, from any float type, Q8_0 / Q4_0). */
static void *reorder_rows(sd_runtime *rt, const sd_tensor *t, int c_out, int c_in, int k,
                          int64_t k_pad, uint32_t type, float *row) {
    const size_t rb = pt_type_row_bytes(type, k_pad);
    uint8_t *dst = sd_rt_alloc(rt, rb * (size_t)c_out, SD_MEM_WEIGHTS); /* l->own_n bytes */
    if (!dst) return NULL;
    for (int o = 0; o < c_out; o++) {
        memset(row, 0, (size_t)k_pad * sizeof(float));
        for (int ci = 0; ci < c_in; ci++)
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++)
                    row[(ky * k + kx) * c_in + ci] =
                        elem_f32(t, (((int64_t)o * c_in + ci) * k + ky) * k + kx);
        uint8_t *d = dst + (size_t)o * rb;
        /* GGML's reference rounding (kernels/cpu/quant_quantize.c); values
         * that came from BF16 convert back exactly */
        pt_quantize_row(type, row, d, k_pad);
    }
    return dst;
}

pt_status sd_prepare_matrix(sd_runtime *rt, const sd_tensor *t, const char *name, int c_out,
                            int c_in, int k, sd_linear *l, pt_error *err) {
    const int64_t K = (int64_t)k * k * c_in;
    /* the policy's type; an F16 weight under the F16 policy stays as stored */
    const uint32_t qtype = rt->policy == SD_WEIGHTS_Q4_0 ? PT_TYPE_Q4_0
                         : rt->policy == SD_WEIGHTS_F16  ? PT_TYPE_F16
                                                         : PT_TYPE_Q8_0;
    const bool quantize = rt->policy != SD_WEIGHTS_STORED && is_float_type(t->type) &&
                          t->type != qtype;
    pt_weight *pw = &l->w;
    pw->rows = c_out;
    if (t->layout == SD_LAYOUT_CONV_OHWI_PAD) {
        const size_t rb = pt_type_row_bytes(t->type, t->k_pad);
        if (t->k_pad < K || t->k_pad % 32 || !rb || rb * (uint64_t)c_out != t->nbytes ||
            !pt_type_get(t->type) || !pt_type_get(t->type)->supported)
            return pt_fail(err, PT_ERR_FORMAT, "tensor %s: padded rows of %lld %s values do not "
                           "hold a [%d x %lld] matrix", name, (long long)t->k_pad,
                           pt_type_name(t->type), c_out, (long long)K);
        pw->type = t->type;
        pw->data = t->data;
        pw->cols = t->k_pad;
        l->k_pad = (int)t->k_pad;
    } else if (k == 1 && !quantize) {
        if (!pt_type_get(t->type) || !pt_type_get(t->type)->supported ||
            pt_type_row_bytes(t->type, K) * (uint64_t)c_out != t->nbytes)
            return pt_fail(err, PT_ERR_UNSUPPORTED, "tensor %s: type %s cannot hold [%d x %lld]",
                           name, pt_type_name(t->type), c_out, (long long)K);
        pw->type = t->type;
        pw->data = t->data;
        pw->cols = K;
        l->k_pad = (int)K;
    } else {
        if (!is_float_type(t->type))
            return pt_fail(err, PT_ERR_UNSUPPORTED, "tensor %s: a %s conv weight must be stored in "
                           "petrel's padded conv layout", name, pt_type_name(t->type));
        const uint64_t esize = t->type == PT_TYPE_F32 ? 4 : 2;
        if (t->nbytes < (uint64_t)K * (uint64_t)c_out * esize)
            return pt_fail(err, PT_ERR_FORMAT, "tensor %s: %llu bytes cannot hold [%d x %lld]",
                           name, (unsigned long long)t->nbytes, c_out, (long long)K);
        const int64_t k_pad = round32(K);
        const uint32_t type = quantize ? qtype : t->type;
        float *row = malloc((size_t)k_pad * sizeof(float));
        void *own = row ? reorder_rows(rt, t, c_out, c_in, k, k_pad, type, row) : NULL;
        free(row);
        if (!own) return pt_fail(err, PT_ERR_NOMEM, "out of memory preparing %s", name);
        l->own = own;
        l->own_n = pt_type_row_bytes(type, k_pad) * (size_t)c_out; /* counted by sd_rt_alloc */
        pw->type = type;
        pw->data = own;
        pw->cols = k_pad;
        l->k_pad = (int)k_pad;
    }
    if (pt_weight_can_pack(pw, &rt->cpu)) {
        if (!pt_weight_pack(pw, &rt->cpu))
            return pt_fail(err, PT_ERR_NOMEM, "out of memory repacking %s", name);
        sd_rt_count(rt, (int64_t)pt_qweights_bytes(pw->packed), SD_MEM_WEIGHTS);
        if (l->own) { /* the packed copy holds the same values */
            sd_rt_dealloc(rt, l->own, l->own_n, SD_MEM_WEIGHTS);
            l->own = NULL;
            l->own_n = 0;
            pw->data = NULL;
        }
    } else if (!l->own) {
        sd_rt_count(rt, (int64_t)pt_weight_source_bytes(pw), SD_MEM_MAPPED);
    }
    /* reordered, quantized or repacked: the products never read the file's
     * bytes again, so give their pages back now rather than after the
     * whole model (the peak of a load is then the prepared copies plus
     * one source tensor, not plus the file) */
    if (pw->data != t->data) sd_weights_release_tensor(t);
    return sd_rt_reserve_cols(rt, pw->cols, err);
}

void sd_release_matrix(sd_runtime *rt, sd_linear *l) {
    if (l->w.packed) {
        sd_rt_count(rt, -(int64_t)pt_qweights_bytes(l->w.packed), SD_MEM_WEIGHTS);
        pt_qweights_free(l->w.packed);
    } else if (!l->own && l->w.data) {
        sd_rt_count(rt, -(int64_t)pt_weight_source_bytes(&l->w), SD_MEM_MAPPED);
    }
    sd_rt_dealloc(rt, l->own, l->own_n, SD_MEM_WEIGHTS);
    l->own = NULL;
    l->w.packed = NULL;
    l->w.data = NULL;
}
