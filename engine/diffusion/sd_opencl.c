/*
 * sd_opencl.c — the image graphs' layers on an OpenCL device
 * (sd_opencl.h): the device, its uploaded weights and scratch slots, and
 * each layer as the sequence of kernels that sd_nn*.c runs on the CPU.
 */
#include "sd_opencl.h"

#include "status.h"

#ifdef PETREL_HAVE_OPENCL

#include "ocl.h"
#include "qmatmul.h"
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layers' own slots (below SD_OCL_SLOT_USER). */
enum {
    S_COLS = 0,                 /* conv: im2col [chunk pixels][device matrix columns] */
    S_Q, S_K, S_V, S_ATT,       /* attention: projections and heads' output */
    S_RA, S_RB, S_RT,           /* ResNet: normalized input, conv1 / shortcut, temb */
    S_HS, S_TN, S_TA, S_G, S_GG, /* transformer: hidden, normalized, sublayer out, ff */
    S_PAD                        /* a product's input rows zero-padded to a quantized
                                  * matrix's columns [n][k_pad] */
};
_Static_assert(S_PAD < SD_OCL_SLOT_USER, "the layers' slots come before a graph's");

/* An uploaded weight: `key` the layer part it mirrors (an sd_linear, a
 * vector's address), `data` what it was read from (a changed one is read
 * again). */
typedef struct wentry {
    const void *key, *data;
    pt_ocl_mem *m;
    uint32_t type;  /* a matrix's: PT_TYPE_F32, F16, or Q8_0 / Q4_0 / Q4_1 as the CPU's */
    int cols;       /* a matrix's columns on the device: in, or k_pad when quantized */
    int group;
    uint64_t bytes; /* of m */
} wentry;

struct sd_ocl {
    pt_ocl *o;
    char name[128];
    /* the weights, searched linearly: a few thousand for SD 1.5, against
     * a kernel launch per look-up */
    wentry *w;
    int n_w, cap_w;
    int group;                   /* of new uploads */
    pt_ocl_mem *slot[SD_OCL_SLOTS];
    size_t slot_n[SD_OCL_SLOTS]; /* floats */
    size_t conv_cols;            /* most floats of im2col a convolution takes at once */
};

static pt_status fail_ocl(sd_ocl *d, pt_error *err) {
    return pt_fail(err, PT_ERR_IO, "%s", pt_ocl_error(d->o));
}

#define CK(call)                                                                                \
    do {                                                                                        \
        if ((call) != 0) return fail_ocl(d, err);                                               \
    } while (0)

pt_status sd_ocl_open(int index, const char *cache_dir, sd_ocl **out, pt_error *err) {
    *out = NULL;
    char msg[300];
    pt_ocl *o = pt_ocl_open(index, cache_dir, msg, sizeof msg);
    if (!o) return pt_fail(err, PT_ERR_UNSUPPORTED, "%s", msg);
    sd_ocl *d = calloc(1, sizeof *d);
    if (!d) {
        pt_ocl_close(o);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory opening the OpenCL device");
    }
    d->o = o;
    d->conv_cols = SD_OCL_CONV_COLS;
    snprintf(d->name, sizeof d->name, "%s", pt_ocl_info(o)->name);
    *out = d;
    return PT_OK;
}

void sd_ocl_weights_group(sd_ocl *d, int group) {
    if (d) d->group = group;
}

void sd_ocl_forget_weights(sd_ocl *d, int group) {
    if (!d) return;
    int kept = 0;
    for (int i = 0; i < d->n_w; i++) {
        if (group < 0 || d->w[i].group == group) pt_ocl_free(d->w[i].m);
        else d->w[kept++] = d->w[i];
    }
    d->n_w = kept;
    if (!kept) {
        free(d->w);
        d->w = NULL;
        d->cap_w = 0;
    }
}

void sd_ocl_release_buffers(sd_ocl *d) {
    if (!d) return;
    for (int i = 0; i < SD_OCL_SLOTS; i++) {
        pt_ocl_free(d->slot[i]);
        d->slot[i] = NULL;
        d->slot_n[i] = 0;
    }
}

void sd_ocl_close(sd_ocl *d) {
    if (!d) return;
    sd_ocl_forget_weights(d, -1);
    sd_ocl_release_buffers(d);
    pt_ocl_close(d->o);
    free(d);
}

const char *sd_ocl_name(const sd_ocl *d) { return d->name; }
pt_ocl *sd_ocl_driver(sd_ocl *d) { return d->o; }
void sd_ocl_set_conv_cols(sd_ocl *d, size_t floats) { d->conv_cols = floats; }

pt_ocl_mem *sd_ocl_slot(sd_ocl *d, int slot, size_t floats, pt_error *err) {
    if (slot < 0 || slot >= SD_OCL_SLOTS) {
        pt_fail(err, PT_ERR_ARG, "OpenCL image graph: no buffer slot %d", slot);
        return NULL;
    }
    if (floats <= d->slot_n[slot]) return d->slot[slot];
    pt_ocl_free(d->slot[slot]);
    d->slot_n[slot] = 0;
    d->slot[slot] = pt_ocl_alloc(d->o, floats * sizeof(float), NULL, false);
    if (!d->slot[slot]) {
        pt_fail(err, PT_ERR_NOMEM, "%s", pt_ocl_error(d->o));
        return NULL;
    }
    d->slot_n[slot] = floats;
    return d->slot[slot];
}

pt_status sd_ocl_write(sd_ocl *d, pt_ocl_mem *m, const float *src, size_t n, pt_error *err) {
    CK(pt_ocl_write(d->o, m, 0, src, n * sizeof(float)));
    return PT_OK;
}

pt_status sd_ocl_read(sd_ocl *d, pt_ocl_mem *m, float *dst, size_t n, pt_error *err) {
    CK(pt_ocl_read(d->o, m, 0, dst, n * sizeof(float)));
    return PT_OK;
}

/* ---- weights ------------------------------------------------------------------ */

static wentry *find(sd_ocl *d, const void *key) {
    for (int i = d->n_w - 1; i >= 0; i--)
        if (d->w[i].key == key) return &d->w[i];
    return NULL;
}

/* Record m as the upload of (key, data); frees m when that fails. */
static pt_ocl_mem *keep(sd_ocl *d, const void *key, const void *data, pt_ocl_mem *m, uint32_t type,
                        int cols, uint64_t bytes, pt_error *err) {
    if (d->n_w == d->cap_w) {
        const int cap = d->cap_w ? 2 * d->cap_w : 256;
        wentry *w = realloc(d->w, (size_t)cap * sizeof *w);
        if (!w) {
            pt_ocl_free(m);
            pt_fail(err, PT_ERR_NOMEM, "out of memory for the OpenCL weight table");
            return NULL;
        }
        d->w = w;
        d->cap_w = cap;
    }
    d->w[d->n_w++] = (wentry){key, data, m, type, cols, d->group, bytes};
    return m;
}

/* The device copy of the n floats at v (a bias, a norm's scale). */
static pt_ocl_mem *vec(sd_ocl *d, const float *v, int n, pt_error *err) {
    wentry *e = find(d, v);
    if (e) return e->m;
    pt_ocl_mem *m = pt_ocl_alloc(d->o, (size_t)n * sizeof(float), v, false);
    if (!m) {
        pt_fail(err, PT_ERR_NOMEM, "%s", pt_ocl_error(d->o));
        return NULL;
    }
    return keep(d, v, v, m, PT_TYPE_F32, n, (uint64_t)n * sizeof(float), err);
}

/* What l's matrix is read from: its packed copy when it has one (w.data
 * may then be NULL or pages given back), else its bytes. */
static const void *matrix_source(const sd_linear *l) {
    return l->w.packed ? (const void *)l->w.packed : l->w.data;
}

/* Whether l's matrix goes up in its own quantized blocks: Q8_0, Q4_0 or
 * Q4_1 (what the Q8_0 / Q4_0 policies and petrel's GGUF files hold), rows
 * of k_pad columns (whole blocks, the zero padding kept), read from the
 * packed copy when the CPU repacked it (pt_qweights_block_row gives the
 * original bytes back). */
static bool keeps_blocks(const sd_linear *l) {
    const uint32_t t = l->w.type;
    if (t != PT_TYPE_Q8_0 && t != PT_TYPE_Q4_0 && t != PT_TYPE_Q4_1) return false;
    return l->w.cols == l->k_pad && l->k_pad % 32 == 0 &&
           (l->w.packed ? pt_qweights_type(l->w.packed) == t : l->w.data != NULL);
}

/* Rows of the device copy of l's matrix into rows (l->out rows of rb
 * bytes), as matrix() picks the type. */
static void matrix_rows(const sd_linear *l, uint32_t type, size_t rb, uint8_t *rows, float *row) {
    for (int r = 0; r < l->out; r++) {
        uint8_t *dst = rows + (size_t)r * rb;
        if (type != PT_TYPE_F32 && type != PT_TYPE_F16) { /* keeps_blocks */
            if (l->w.packed) pt_qweights_block_row(l->w.packed, r, dst);
            else memcpy(dst, (const uint8_t *)l->w.data + (size_t)r * rb, rb);
            continue;
        }
        pt_weight_row(&l->w, r, row);
        if (type == PT_TYPE_F32) {
            memcpy(dst, row, (size_t)l->in * sizeof(float));
        } else {
            for (int c = 0; c < l->in; c++) ((uint16_t *)dst)[c] = pt_f32_to_fp16(row[c]);
        }
    }
}

/* The device copy of l's matrix, l->out rows: Q8_0 / Q4_0 / Q4_1 blocks
 * of k_pad columns when the CPU holds those (keeps_blocks: about 1.06 or
 * 0.56 bytes a weight instead of 4), else rows of l->in values, F16 when
 * the CPU multiplies F16 values (the same values in half the bytes) or
 * float32 (F32, BF16, other quantized types dequantized); its entry holds
 * the type and the columns the product's input rows must have. */
static wentry *matrix(sd_ocl *d, const sd_linear *l, pt_error *err) {
    const void *src = matrix_source(l);
    wentry *e = find(d, l);
    if (e && e->data == src) return e;
    if (e) { /* another matrix at this layer's address: read it again */
        pt_ocl_free(e->m);
        *e = d->w[--d->n_w];
    }
    uint32_t type = l->w.type == PT_TYPE_F16 ? PT_TYPE_F16 : PT_TYPE_F32;
    int cols = l->in;
    if (keeps_blocks(l)) {
        type = l->w.type;
        cols = l->k_pad;
    }
    const size_t rb = pt_type_row_bytes(type, cols), bytes = (size_t)l->out * rb;
    uint8_t *rows = malloc(bytes);
    float *row = malloc((size_t)l->w.cols * sizeof(float));
    if (!rows || !row) {
        free(rows);
        free(row);
        pt_fail(err, PT_ERR_NOMEM, "out of memory uploading a %d x %d matrix", l->out, l->in);
        return NULL;
    }
    matrix_rows(l, type, rb, rows, row);
    pt_ocl_mem *m = pt_ocl_alloc(d->o, bytes, rows, false);
    free(rows);
    free(row);
    if (!m) {
        pt_fail(err, PT_ERR_NOMEM, "%s", pt_ocl_error(d->o));
        return NULL;
    }
    if (!keep(d, l, src, m, type, cols, bytes, err)) return NULL;
    return &d->w[d->n_w - 1];
}

uint64_t sd_ocl_weight_bytes(const sd_ocl *d, int group) {
    uint64_t n = 0;
    for (int i = 0; d && i < d->n_w; i++)
        if (group < 0 || d->w[i].group == group) n += d->w[i].bytes;
    return n;
}

/* ---- layers ---------------------------------------------------------------------- */

/* y [n][out] = x W^T, no bias: x [n][ld], ld l->in or the device matrix's
 * columns (an im2col written for it); rows of l->in values are first
 * zero-padded into S_PAD when the matrix has more columns. */
static pt_status product(sd_ocl *d, const sd_linear *l, pt_ocl_mem *x, int ld, int64_t n,
                         pt_ocl_mem *y, pt_error *err) {
    if (n < 0 || n > INT32_MAX) return pt_fail(err, PT_ERR_ARG, "linear: %lld rows", (long long)n);
    const wentry *e = matrix(d, l, err);
    if (!e) return err->code;
    if (ld != e->cols) {
        pt_ocl_mem *pad = sd_ocl_slot(d, S_PAD, (size_t)n * e->cols, err);
        if (!pad) return err->code;
        CK(pt_ocl_im2col(d->o, pad, e->cols, x, 1, (int)n, ld, 1, 1, 0, 0, n));
        x = pad;
    }
    CK(pt_ocl_matmul(d->o, e->type, e->m, l->out, e->cols, x, (int)n, y));
    return PT_OK;
}

/* y [n][out] += bias (when l has one). */
static pt_status add_bias(sd_ocl *d, const sd_linear *l, pt_ocl_mem *y, int64_t n, pt_error *err) {
    if (!l->bias) return PT_OK;
    pt_ocl_mem *b = vec(d, l->bias, l->out, err);
    if (!b) return err->code;
    CK(pt_ocl_add_bias(d->o, y, b, (int)n, l->out));
    return PT_OK;
}

pt_status sd_ocl_linear(sd_ocl *d, const sd_linear *l, pt_ocl_mem *x, int64_t n, pt_ocl_mem *y,
                        pt_error *err) {
    pt_status st = product(d, l, x, l->in, n, y, err);
    return st ? st : add_bias(d, l, y, n, err);
}

pt_status sd_ocl_conv(sd_ocl *d, const sd_conv *c, pt_ocl_mem *x, int n, int h, int w,
                      pt_ocl_mem *y, pt_ocl_mem *add, pt_error *err) {
    const int h_out = (h + 2 * c->pad - c->k) / c->stride + 1;
    const int w_out = (w + 2 * c->pad - c->k) / c->stride + 1;
    if (n < 1 || h < 1 || w < 1 || h_out < 1 || w_out < 1)
        return pt_fail(err, PT_ERR_ARG, "conv: %d images of %dx%d for a %dx%d kernel", n, h, w,
                       c->k, c->k);
    const int64_t n_pix = (int64_t)n * h_out * w_out;
    pt_status st = PT_OK;
    if (c->k == 1 && c->stride == 1 && c->pad == 0) {
        st = product(d, &c->mm, x, c->mm.in, n_pix, y, err);
    } else {
        /* im2col writes rows of the device matrix's columns */
        const wentry *e = matrix(d, &c->mm, err);
        if (!e) return err->code;
        const int64_t kin = e->cols;
        /* im2col and the product over chunks of output pixels, the chunk
         * a multiple of `quantum` pixels so that each chunk's rows of y
         * start at an offset a sub-buffer may have */
        const uint32_t align = pt_ocl_info(d->o)->base_align;
        const int64_t quantum = align > 4 ? align / 4 : 1;
        int64_t chunk = (int64_t)(d->conv_cols / (size_t)kin) / quantum * quantum;
        if (chunk < quantum) chunk = quantum;
        if (chunk > n_pix) chunk = n_pix;
        pt_ocl_mem *cols = sd_ocl_slot(d, S_COLS, (size_t)chunk * kin, err);
        if (!cols) return err->code;
        for (int64_t p0 = 0; p0 < n_pix && !st; p0 += chunk) {
            const int64_t np = n_pix - p0 < chunk ? n_pix - p0 : chunk;
            CK(pt_ocl_im2col(d->o, cols, (int)kin, x, h, w, c->c_in, c->k, c->stride, c->pad, p0, np));
            const size_t row = (size_t)c->c_out * sizeof(float);
            pt_ocl_mem *ys = np == n_pix ? y : pt_ocl_sub(d->o, y, (size_t)p0 * row, (size_t)np * row);
            if (!ys) return fail_ocl(d, err);
            st = product(d, &c->mm, cols, (int)kin, np, ys, err);
            if (ys != y) pt_ocl_free(ys);
        }
    }
    if (!st) st = add_bias(d, &c->mm, y, n_pix, err);
    if (!st && add) st = sd_ocl_add(d, y, add, n_pix * c->c_out, err);
    return st;
}

pt_status sd_ocl_groupnorm(sd_ocl *d, const sd_norm *nm, pt_ocl_mem *y, pt_ocl_mem *x, int n,
                           int64_t n_pix, bool silu, pt_error *err) {
    pt_ocl_mem *g = vec(d, nm->gamma, nm->c, err), *b = g ? vec(d, nm->beta, nm->c, err) : NULL;
    if (!b) return err->code;
    CK(pt_ocl_groupnorm(d->o, y, x, g, b, n, n_pix, nm->c, nm->groups, nm->eps, silu));
    return PT_OK;
}

pt_status sd_ocl_layernorm(sd_ocl *d, const sd_norm *nm, pt_ocl_mem *y, pt_ocl_mem *x,
                           int64_t n_rows, pt_error *err) {
    pt_ocl_mem *g = vec(d, nm->gamma, nm->c, err), *b = g ? vec(d, nm->beta, nm->c, err) : NULL;
    if (!b) return err->code;
    CK(pt_ocl_layernorm(d->o, y, x, g, b, n_rows, nm->c, nm->eps));
    return PT_OK;
}

pt_status sd_ocl_act(sd_ocl *d, sd_eltwise f, pt_ocl_mem *x, int64_t n, pt_error *err) {
    if (f != SD_SILU && f != SD_GELU)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "OpenCL: no kernel for activation %d", (int)f);
    CK(pt_ocl_act(d->o, x, n, f == SD_GELU));
    return PT_OK;
}

pt_status sd_ocl_add(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *x, int64_t n, pt_error *err) {
    CK(pt_ocl_add(d->o, y, x, n));
    return PT_OK;
}

pt_status sd_ocl_geglu(sd_ocl *d, pt_ocl_mem *out, pt_ocl_mem *x, int64_t n_rows, int inner,
                       pt_error *err) {
    CK(pt_ocl_geglu(d->o, out, x, n_rows, inner));
    return PT_OK;
}

pt_status sd_ocl_upsample(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h, int w, int c,
                          pt_error *err) {
    CK(pt_ocl_upsample2x(d->o, y, x, n, h, w, c));
    return PT_OK;
}

pt_status sd_ocl_concat(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *a, int ca, pt_ocl_mem *b, int cb,
                        int64_t n_pix, pt_error *err) {
    CK(pt_ocl_concat(d->o, y, a, ca, b, cb, n_pix));
    return PT_OK;
}

pt_status sd_ocl_mha(sd_ocl *d, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v,
                     int n_seq, int n_q, int n_kv, int heads, int head_dim, pt_error *err) {
    CK(pt_ocl_mha(d->o, out, q, k, v, n_seq, n_q, n_kv, heads, head_dim,
                  (float)(1.0 / sqrt((double)head_dim))));
    return PT_OK;
}

/* sd_attn_run: q = to_q(x), k = to_k(ctx), v = to_v(ctx), y = to_out(mha). */
pt_status sd_ocl_attn(sd_ocl *d, const sd_attn *a, pt_ocl_mem *y, pt_ocl_mem *x, int n_seq,
                      int64_t n_q, pt_ocl_mem *ctx, int64_t n_kv, pt_error *err) {
    if (n_q > INT32_MAX || n_kv > INT32_MAX)
        return pt_fail(err, PT_ERR_ARG, "attention: sequences too long");
    const size_t nq = (size_t)n_seq * n_q * a->dim, nkv = (size_t)n_seq * n_kv * a->dim;
    pt_ocl_mem *q = sd_ocl_slot(d, S_Q, nq, err), *att = q ? sd_ocl_slot(d, S_ATT, nq, err) : NULL;
    pt_ocl_mem *k = att ? sd_ocl_slot(d, S_K, nkv, err) : NULL;
    pt_ocl_mem *v = k ? sd_ocl_slot(d, S_V, nkv, err) : NULL;
    if (!v) return err->code;
    pt_status st = sd_ocl_linear(d, &a->q, x, (int64_t)n_seq * n_q, q, err);
    if (!st) st = sd_ocl_linear(d, &a->k, ctx, (int64_t)n_seq * n_kv, k, err);
    if (!st) st = sd_ocl_linear(d, &a->v, ctx, (int64_t)n_seq * n_kv, v, err);
    if (!st) st = sd_ocl_mha(d, att, q, k, v, n_seq, (int)n_q, (int)n_kv, a->heads, a->head_dim, err);
    if (!st) st = sd_ocl_linear(d, &a->out, att, (int64_t)n_seq * n_q, y, err);
    return st;
}

/* sd_resnet_run: a = silu(norm1(x)); b = conv1(a) (+ temb row per image);
 * a = silu(norm2(b)); y = conv2(a) + shortcut(x). */
pt_status sd_ocl_resnet(sd_ocl *d, const sd_resnet *r, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h,
                        int w, pt_ocl_mem *temb_silu, pt_error *err) {
    const int64_t n_pix = (int64_t)h * w, total = n_pix * n;
    const size_t cmax = (size_t)(r->c_in > r->c_out ? r->c_in : r->c_out);
    pt_ocl_mem *a = sd_ocl_slot(d, S_RA, (size_t)total * cmax, err);
    pt_ocl_mem *b = a ? sd_ocl_slot(d, S_RB, (size_t)total * r->c_out, err) : NULL;
    pt_ocl_mem *t = b ? sd_ocl_slot(d, S_RT, (size_t)n * r->c_out, err) : NULL;
    if (!t) return err->code;
    pt_status st = sd_ocl_groupnorm(d, &r->norm1, a, x, n, n_pix, true, err);
    if (!st) st = sd_ocl_conv(d, &r->conv1, a, n, h, w, b, NULL, err);
    if (!st && r->temb_dim > 0) {
        if (!temb_silu) return pt_fail(err, PT_ERR_ARG, "resnet: no time embedding");
        st = sd_ocl_linear(d, &r->temb, temb_silu, n, t, err);
        if (!st && pt_ocl_add_image(d->o, b, t, n, n_pix, r->c_out) != 0) st = fail_ocl(d, err);
    }
    if (!st) st = sd_ocl_groupnorm(d, &r->norm2, a, b, n, n_pix, true, err);
    pt_ocl_mem *skip = x;
    if (!st && r->has_shortcut) {
        st = sd_ocl_conv(d, &r->shortcut, x, n, h, w, b, NULL, err);
        skip = b;
    }
    if (!st) st = sd_ocl_conv(d, &r->conv2, a, n, h, w, y, skip, err);
    return st;
}

/* sd_transformer_run's blocks: hs += attn1(ln1(hs)); hs += attn2(ln2(hs),
 * ctx); hs += ff_out(geglu(ff_in(ln3(hs)))), the feed-forward over all
 * rows at once. */
static pt_status tblock(sd_ocl *d, const sd_tblock *b, pt_ocl_mem *hs, pt_ocl_mem *tn,
                        pt_ocl_mem *ta, int n, int64_t n_pix, pt_ocl_mem *ctx, int64_t n_ctx,
                        pt_error *err) {
    const int c = b->norm1.c;
    const int64_t N = (int64_t)n * n_pix;
    pt_ocl_mem *g = sd_ocl_slot(d, S_G, (size_t)N * 2 * b->inner, err);
    pt_ocl_mem *gg = g ? sd_ocl_slot(d, S_GG, (size_t)N * b->inner, err) : NULL;
    if (!gg) return err->code;
    pt_status st = sd_ocl_layernorm(d, &b->norm1, tn, hs, N, err);
    if (!st) st = sd_ocl_attn(d, &b->attn1, ta, tn, n, n_pix, tn, n_pix, err);
    if (!st) st = sd_ocl_add(d, hs, ta, N * c, err);
    if (!st) st = sd_ocl_layernorm(d, &b->norm2, tn, hs, N, err);
    if (!st) st = sd_ocl_attn(d, &b->attn2, ta, tn, n, n_pix, ctx, n_ctx, err);
    if (!st) st = sd_ocl_add(d, hs, ta, N * c, err);
    if (!st) st = sd_ocl_layernorm(d, &b->norm3, tn, hs, N, err);
    if (!st) st = sd_ocl_linear(d, &b->ff_in, tn, N, g, err);
    if (!st) st = sd_ocl_geglu(d, gg, g, N, b->inner, err);
    if (!st) st = sd_ocl_linear(d, &b->ff_out, gg, N, ta, err);
    if (!st) st = sd_ocl_add(d, hs, ta, N * c, err);
    return st;
}

pt_status sd_ocl_transformer(sd_ocl *d, const sd_transformer *t, pt_ocl_mem *x, int n,
                             int64_t n_pix, pt_ocl_mem *ctx, int64_t n_ctx, pt_error *err) {
    const size_t N = (size_t)n * (size_t)n_pix;
    pt_ocl_mem *hs = sd_ocl_slot(d, S_HS, N * t->c, err);
    pt_ocl_mem *tn = hs ? sd_ocl_slot(d, S_TN, N * t->c, err) : NULL;
    pt_ocl_mem *ta = tn ? sd_ocl_slot(d, S_TA, N * t->c, err) : NULL;
    if (!ta) return err->code;
    pt_status st = sd_ocl_groupnorm(d, &t->norm, tn, x, n, n_pix, false, err);
    if (!st) st = sd_ocl_linear(d, &t->proj_in, tn, (int64_t)N, hs, err);
    for (int i = 0; !st && i < t->depth; i++)
        st = tblock(d, &t->blocks[i], hs, tn, ta, n, n_pix, ctx, n_ctx, err);
    if (!st) st = sd_ocl_linear(d, &t->proj_out, hs, (int64_t)N, ta, err);
    if (!st) st = sd_ocl_add(d, x, ta, (int64_t)N * t->c, err);
    return st;
}

#else /* no OpenCL: only opening is reached, and it says why not */

pt_status sd_ocl_open(int index, const char *cache_dir, sd_ocl **out, pt_error *err) {
    (void)index, (void)cache_dir;
    *out = NULL;
    return pt_fail(err, PT_ERR_UNSUPPORTED, "petrel was built without OpenCL (PETREL_OPENCL=OFF)");
}

void sd_ocl_close(sd_ocl *d) { (void)d; }
const char *sd_ocl_name(const sd_ocl *d) { return d ? "" : ""; }
pt_ocl *sd_ocl_driver(sd_ocl *d) { return d ? NULL : NULL; }
void sd_ocl_weights_group(sd_ocl *d, int group) { (void)d, (void)group; }
void sd_ocl_forget_weights(sd_ocl *d, int group) { (void)d, (void)group; }
uint64_t sd_ocl_weight_bytes(const sd_ocl *d, int group) {
    (void)d, (void)group;
    return 0;
}
void sd_ocl_release_buffers(sd_ocl *d) { (void)d; }

#endif
