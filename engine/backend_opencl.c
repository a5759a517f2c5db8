/*
 * backend_opencl.c — the OpenCL device of backend.h, on the host driver of
 * kernels/opencl (ocl.h), and pt_devices_list. Built without OpenCL
 * (PETREL_OPENCL=OFF), opening it is PT_ERR_UNSUPPORTED saying so.
 */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PETREL_HAVE_OPENCL
#include "ocl.h"

/* A pt_buf of this device is a pt_ocl_mem: the handle is passed as is. */
#define M(b) ((pt_ocl_mem *)(b))

typedef struct ocl_dev {
    pt_device dev;    /* first: a pt_device * is an ocl_dev * */
    pt_ocl *o;
    bool in_place;    /* unified memory: weights are used where they are mapped */
} ocl_dev;

static pt_ocl *O(pt_device *d) { return ((ocl_dev *)d)->o; }

static pt_status check(pt_device *d, int st) {
    if (st == 0) return PT_OK;
    return pt_fail(&d->err, PT_ERR_IO, "%s", pt_ocl_error(O(d)));
}

static pt_buf *ocl_alloc(pt_device *d, size_t bytes, const void *init) {
    return (pt_buf *)pt_ocl_alloc(O(d), bytes, init, false);
}

static pt_buf *ocl_weight(pt_device *d, const void *data, size_t bytes) {
    return (pt_buf *)pt_ocl_alloc(O(d), bytes, data, ((ocl_dev *)d)->in_place);
}

static void ocl_free(pt_device *d, pt_buf *b) {
    (void)d;
    pt_ocl_free(M(b));
}

static pt_status ocl_write(pt_device *d, pt_buf *b, size_t off, const void *src, size_t bytes) {
    return check(d, pt_ocl_write(O(d), M(b), off, src, bytes));
}

static pt_status ocl_read(pt_device *d, pt_buf *b, size_t off, void *dst, size_t bytes) {
    return check(d, pt_ocl_read(O(d), M(b), off, dst, bytes));
}

static pt_status ocl_copy(pt_device *d, pt_buf *dst, size_t dst_off, pt_buf *src, size_t src_off,
                          size_t bytes) {
    return check(d, pt_ocl_copy(O(d), M(dst), dst_off, M(src), src_off, bytes));
}

static pt_status ocl_matmul(pt_device *d, uint32_t type, pt_buf *w, int64_t rows, int64_t cols,
                            pt_buf *x, int n, pt_buf *y) {
    return check(d, pt_ocl_matmul(O(d), type, M(w), rows, cols, M(x), n, M(y)));
}

static bool ocl_matmul_fuses(pt_device *d, uint32_t type, int n) { return pt_ocl_fuses(O(d), type, n); }

static pt_status ocl_matmul_fused(pt_device *d, uint32_t type, pt_buf *w, int64_t rows, int64_t cols,
                                  pt_buf *x, int n, pt_buf *y, pt_buf *bias, bool accumulate) {
    (void)n; /* 1: ocl_matmul_fuses said so */
    return check(d, pt_ocl_matmul_fused(O(d), type, M(w), rows, cols, M(x), M(y), M(bias), accumulate));
}

static pt_status ocl_matmul_glu(pt_device *d, uint32_t type, pt_buf *wg, pt_buf *wu, int64_t rows, int64_t cols,
                                pt_buf *x, int n, pt_buf *out, pt_ffn_act act) {
    (void)n; /* 1: ocl_matmul_fuses said so */
    return check(d, pt_ocl_matmul_glu(O(d), type, M(wg), M(wu), rows, cols, M(x), M(out), act == PT_FFN_GELU_TANH));
}

static bool ocl_rope_stores(pt_device *d, int D, int n_rot) {
    (void)d;
    return D % 2 == 0 && n_rot % 2 == 0 && n_rot <= D;
}

static pt_status ocl_rope_store(pt_device *d, pt_buf *q, pt_buf *k, pt_buf *v, pt_buf *cs, pt_buf *kc,
                                pt_buf *vc, const pt_attn_shape *a, int n_rot, bool neox) {
    return check(d, pt_ocl_rope_store(O(d), M(q), M(k), M(v), M(cs), M(kc), M(vc), a->n, a->p0, a->H, a->Hkv,
                                      a->D, n_rot, neox));
}

static pt_status ocl_rmsnorm(pt_device *d, pt_buf *y, pt_buf *x, pt_buf *w, int rows, int dim,
                             float eps) {
    return check(d, pt_ocl_rmsnorm(O(d), M(y), M(x), M(w), rows, dim, eps));
}

static pt_status ocl_add(pt_device *d, pt_buf *y, pt_buf *x, int64_t count) {
    return check(d, pt_ocl_add(O(d), M(y), M(x), count));
}

static pt_status ocl_add_bias(pt_device *d, pt_buf *y, pt_buf *b, int rows, int dim) {
    return check(d, pt_ocl_add_bias(O(d), M(y), M(b), rows, dim));
}

static pt_status ocl_rope(pt_device *d, pt_buf *x, pt_buf *cs, int n, int heads, int head_dim,
                          int n_rot, bool neox) {
    return check(d, pt_ocl_rope(O(d), M(x), M(cs), n, heads, head_dim, n_rot, neox));
}

static pt_status ocl_attention(pt_device *d, pt_buf *out, pt_buf *q, pt_buf *kc, pt_buf *vc,
                               const pt_attn_shape *a) {
    return check(d, pt_ocl_attention(O(d), M(out), M(q), M(kc), M(vc), a->n, a->H, a->Hkv, a->D,
                                     a->p0, a->window, a->scale));
}

static pt_status ocl_act_mul(pt_device *d, pt_buf *g, pt_buf *u, int64_t count, pt_ffn_act act) {
    return check(d, pt_ocl_act_mul(O(d), M(g), M(u), count, act == PT_FFN_GELU_TANH));
}

static pt_status ocl_softmax(pt_device *d, pt_buf *x, int rows, int n) {
    return check(d, pt_ocl_softmax(O(d), M(x), rows, n));
}

static void ocl_close(pt_device *d) {
    pt_ocl_close(O(d));
    free(d);
}

static const pt_device_ops ocl_ops = {
    ocl_alloc,       ocl_weight,  ocl_free,    ocl_write,   ocl_read,     ocl_copy,
    pt_ocl_has_type, ocl_matmul,  ocl_rmsnorm, ocl_add,     ocl_add_bias, ocl_rope,
    ocl_attention,   ocl_act_mul, ocl_softmax, ocl_close,   ocl_matmul_fuses, ocl_matmul_fused,
    ocl_matmul_glu,  ocl_rope_stores, ocl_rope_store,
};

pt_status pt_device_opencl_open(int index, const char *cache_dir, pt_device **out, pt_error *err) {
    *out = NULL;
    char msg[300];
    pt_ocl *o = pt_ocl_open(index, cache_dir, msg, sizeof msg);
    if (!o) return pt_fail(err, PT_ERR_UNSUPPORTED, "%s", msg);
    ocl_dev *d = calloc(1, sizeof *d);
    if (!d) {
        pt_ocl_close(o);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory opening the OpenCL device");
    }
    d->o = o;
    d->in_place = pt_ocl_info(o)->unified_memory;
    d->dev.ops = &ocl_ops;
    d->dev.kind = PT_BACKEND_OPENCL;
    d->dev.max_head_dim = PT_OCL_MAX_HEAD_DIM;
    d->dev.impl = o;
    snprintf(d->dev.name, sizeof d->dev.name, "%s", pt_ocl_info(o)->name);
    *out = &d->dev;
    return PT_OK;
}

pt_status pt_devices_list(pt_device_info *out, int cap, int *n, pt_error *err) {
    *n = 0;
    pt_ocl_device_info *tmp = cap > 0 ? calloc((size_t)cap, sizeof *tmp) : NULL;
    if (cap > 0 && !tmp) return pt_fail(err, PT_ERR_NOMEM, "out of memory listing devices");
    char msg[300];
    const int got = pt_ocl_devices(tmp, cap, msg, sizeof msg);
    if (got < 0) {
        free(tmp);
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s", msg);
    }
    for (int i = 0; i < got && i < cap; i++) {
        const pt_ocl_device_info *s = &tmp[i];
        pt_device_info *d = &out[i];
        memset(d, 0, sizeof *d);
        memcpy(d->platform, s->platform, sizeof d->platform);
        memcpy(d->name, s->name, sizeof d->name);
        memcpy(d->version, s->version, sizeof d->version);
        memcpy(d->driver, s->driver, sizeof d->driver);
        d->global_mem = s->global_mem;
        d->max_alloc = s->max_alloc;
        d->local_mem = s->local_mem;
        d->compute_units = s->compute_units;
        d->unified_memory = s->unified_memory;
        d->int_dot = s->int_dot;
        d->subgroups = s->subgroups;
        memcpy(d->extensions, s->extensions, sizeof d->extensions);
    }
    free(tmp);
    *n = got;
    return PT_OK;
}

#else /* built without OpenCL */

pt_status pt_device_opencl_open(int index, const char *cache_dir, pt_device **out, pt_error *err) {
    (void)index;
    (void)cache_dir;
    *out = NULL;
    return pt_fail(err, PT_ERR_UNSUPPORTED, "petrel was built without OpenCL (PETREL_OPENCL=OFF)");
}

pt_status pt_devices_list(pt_device_info *out, int cap, int *n, pt_error *err) {
    (void)out;
    (void)cap;
    *n = 0;
    return pt_fail(err, PT_ERR_UNSUPPORTED, "petrel was built without OpenCL (PETREL_OPENCL=OFF)");
}

#endif
