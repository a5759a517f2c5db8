/*
 * backend_cpu.c — the CPU device of backend.h: buffers in host memory and
 * each op as plain C on the reference kernels of kernels/cpu (one thread).
 * The oracle the OpenCL ops are tested against, and where the layers of a
 * model that OpenCL cannot run go. The LLM's fast CPU path does not use
 * it: a model without a device runs llm_forward.c unchanged.
 */
#include "backend.h"

#include "ops.h"
#include "quant.h"

#include <stdlib.h>
#include <string.h>

struct pt_buf {
    uint8_t *p;
    bool owned;   /* heap memory of alloc, else a weight's view */
};

#define F(b) ((float *)(b)->p)

static pt_buf *cpu_alloc(pt_device *d, size_t bytes, const void *init) {
    (void)d;
    pt_buf *b = calloc(1, sizeof *b);
    if (b) b->p = calloc(1, bytes ? bytes : 1);
    if (!b || !b->p) {
        free(b);
        return NULL;
    }
    b->owned = true;
    if (init) memcpy(b->p, init, bytes);
    return b;
}

static pt_buf *cpu_weight(pt_device *d, const void *data, size_t bytes) {
    (void)d;
    (void)bytes;
    pt_buf *b = calloc(1, sizeof *b);
    if (b) b->p = (uint8_t *)data; /* read only: no op writes a weight */
    return b;
}

static void cpu_free(pt_device *d, pt_buf *b) {
    (void)d;
    if (!b) return;
    if (b->owned) free(b->p);
    free(b);
}

static pt_status cpu_write(pt_device *d, pt_buf *b, size_t off, const void *src, size_t bytes) {
    (void)d;
    memcpy(b->p + off, src, bytes);
    return PT_OK;
}

static pt_status cpu_read(pt_device *d, pt_buf *b, size_t off, void *dst, size_t bytes) {
    (void)d;
    memcpy(dst, b->p + off, bytes);
    return PT_OK;
}

static pt_status cpu_copy(pt_device *d, pt_buf *dst, size_t dst_off, pt_buf *src, size_t src_off,
                          size_t bytes) {
    (void)d;
    memmove(dst->p + dst_off, src->p + src_off, bytes);
    return PT_OK;
}

static bool cpu_has_type(uint32_t type) { return pt_type_get(type) != NULL; }

static pt_status cpu_matmul(pt_device *d, uint32_t type, pt_buf *w, int64_t rows, int64_t cols,
                            pt_buf *x, int n, pt_buf *y) {
    (void)d;
    pt_matmul_ref(type, w->p, rows, cols, F(x), n, F(y), 0, rows);
    return PT_OK;
}

static pt_status cpu_rmsnorm(pt_device *d, pt_buf *y, pt_buf *x, pt_buf *w, int rows, int dim,
                             float eps) {
    (void)d;
    for (int r = 0; r < rows; r++)
        pt_rmsnorm(F(y) + (size_t)r * dim, F(x) + (size_t)r * dim, w ? F(w) : NULL, dim, eps);
    return PT_OK;
}

static pt_status cpu_add(pt_device *d, pt_buf *y, pt_buf *x, int64_t count) {
    (void)d;
    for (int64_t i = 0; i < count; i++) F(y)[i] += F(x)[i];
    return PT_OK;
}

static pt_status cpu_add_bias(pt_device *d, pt_buf *y, pt_buf *b, int rows, int dim) {
    (void)d;
    for (int r = 0; r < rows; r++) pt_add(F(y) + (size_t)r * dim, F(b), dim);
    return PT_OK;
}

static pt_status cpu_rope(pt_device *d, pt_buf *x, pt_buf *cs, int n, int heads, int head_dim,
                          int n_rot, bool neox) {
    (void)d;
    for (int t = 0; t < n; t++)
        pt_rope(F(x) + (size_t)t * heads * head_dim, heads, head_dim, n_rot, F(cs) + (size_t)t * n_rot,
                neox);
    return PT_OK;
}

static pt_status cpu_attention(pt_device *d, pt_buf *out, pt_buf *q, pt_buf *kc, pt_buf *vc,
                               const pt_attn_shape *a) {
    const int KD = a->Hkv * a->D, group = a->H / a->Hkv;
    float *scores = malloc(((size_t)a->p0 + a->n) * sizeof(float));
    if (!scores) return pt_fail(&d->err, PT_ERR_NOMEM, "out of memory for attention scores");
    for (int t = 0; t < a->n; t++) {
        const int end = a->p0 + t + 1;
        const int start = a->window > 0 && end > a->window ? end - a->window : 0;
        for (int h = 0; h < a->H; h++) {
            const size_t off = ((size_t)t * a->H + h) * a->D, kv = (size_t)(h / group) * a->D;
            pt_attend_one(F(out) + off, F(q) + off, F(kc) + (size_t)start * KD + kv,
                          F(vc) + (size_t)start * KD + kv, KD, end - start, a->D, a->scale, scores);
        }
    }
    free(scores);
    return PT_OK;
}

static pt_status cpu_act_mul(pt_device *d, pt_buf *g, pt_buf *u, int64_t count, pt_ffn_act act) {
    (void)d;
    if (act == PT_FFN_SILU)
        pt_silu_mul(F(g), F(g), F(u), (int)count);
    else
        pt_gelu_tanh_mul(F(g), F(g), F(u), (int)count);
    return PT_OK;
}

static pt_status cpu_softmax(pt_device *d, pt_buf *x, int rows, int n) {
    (void)d;
    for (int r = 0; r < rows; r++) pt_softmax(F(x) + (size_t)r * n, n);
    return PT_OK;
}

static void cpu_close(pt_device *d) { free(d); }

static const pt_device_ops cpu_ops = {
    cpu_alloc,   cpu_weight, cpu_free,      cpu_write, cpu_read,   cpu_copy,
    cpu_has_type, cpu_matmul, cpu_rmsnorm,  cpu_add,   cpu_add_bias, cpu_rope,
    cpu_attention, cpu_act_mul, cpu_softmax, cpu_close,
    NULL,          NULL, NULL, NULL, NULL, /* no fused ops: the graph runs them one by one */
};

pt_status pt_device_cpu_open(pt_device **out, pt_error *err) {
    pt_device *d = calloc(1, sizeof *d);
    if (!d) return pt_fail(err, PT_ERR_NOMEM, "out of memory opening the CPU device");
    d->ops = &cpu_ops;
    d->kind = PT_BACKEND_CPU;
    strcpy(d->name, "CPU");
    *out = d;
    return PT_OK;
}

void pt_device_close(pt_device *d) {
    if (d) d->ops->close(d);
}
