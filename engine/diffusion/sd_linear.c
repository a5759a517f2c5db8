/* sd_linear.c — Linear layers (and 1x1 convs) over rows (sd_nn.h). */
#include "sd_nn_impl.h"

#include "ops.h"
#include "status.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

pt_status sd_linear_init(sd_runtime *rt, const sd_tensor *wt, const sd_tensor *bias,
                         const char *name, int in, int out, sd_linear *l, pt_error *err) {
    memset(l, 0, sizeof *l);
    const sd_tensor *t = wt;
    const bool ok2 = t->n_dims == 2 && t->shape[0] == out && t->shape[1] == in;
    const bool ok4 = t->n_dims == 4 && t->shape[0] == out && t->shape[1] == in &&
                     t->shape[2] == 1 && t->shape[3] == 1;
    if (in < 1 || out < 1 || (!ok2 && !ok4))
        return pt_fail(err, PT_ERR_FORMAT, "tensor %s: shape [%lld, %lld, %lld, %lld] (%d dims), "
                       "expected [%d, %d]", name, (long long)t->shape[0], (long long)t->shape[1],
                       (long long)t->shape[2], (long long)t->shape[3], t->n_dims, out, in);
    l->in = in;
    l->out = out;
    pt_status st = sd_prepare_matrix(rt, t, name, out, in, 1, l, err);
    if (st == PT_OK && bias) st = sd_vector_from_tensor(rt, bias, name, out, &l->bias, err);
    if (st) sd_linear_free(rt, l);
    return st;
}

pt_status sd_linear_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int in, int out,
                         bool need_bias, sd_linear *l, pt_error *err) {
    memset(l, 0, sizeof *l);
    char wname[SD_NAME_MAX], bname[SD_NAME_MAX];
    sd_name(wname, prefix, ".weight");
    sd_name(bname, prefix, ".bias");
    sd_tensor t, b;
    if (!sd_weights_get(w, wname, &t)) return pt_fail(err, PT_ERR_FORMAT, "missing tensor %s", wname);
    const bool has_bias = sd_weights_get(w, bname, &b);
    if (need_bias && !has_bias) return pt_fail(err, PT_ERR_FORMAT, "missing tensor %s", bname);
    return sd_linear_init(rt, &t, has_bias ? &b : NULL, wname, in, out, l, err);
}

void sd_linear_free(sd_runtime *rt, sd_linear *l) {
    if (!l) return;
    sd_release_matrix(rt, l);
    sd_free_vector(rt, l->bias, l->out);
    l->bias = NULL;
}

/* ---- products ---------------------------------------------------------------- */

/* Rows of the input padded to k_pad (when it differs from in) and / or
 * quantized into qa (when a matrix is packed). */
typedef struct prep_job {
    const pt_cpu *cpu;
    const float *x;   /* [n][in] */
    float *pad;       /* [n][k_pad], or NULL */
    pt_qact *qa;      /* or NULL */
    int in, k_pad;
    int64_t n;
} prep_job;

static void prep_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const prep_job *j = ctx;
    int64_t t0, t1;
    sd_split(j->n, task, n_tasks, &t0, &t1);
    if (t0 >= t1) return;
    const float *src = j->x;
    if (j->pad) {
        for (int64_t t = t0; t < t1; t++) {
            float *d = j->pad + t * j->k_pad;
            memcpy(d, j->x + t * j->in, (size_t)j->in * sizeof(float));
            memset(d + j->in, 0, (size_t)(j->k_pad - j->in) * sizeof(float));
        }
        src = j->pad;
    }
    if (j->qa) pt_qact_quantize(j->cpu, src, j->qa, t0, t1);
}

/* y[t] += bias for each matrix. */
typedef struct bias_job {
    const sd_linear *const *l;
    float *const *y;
    int n_l;
    int64_t n;
} bias_job;

static void bias_task(void *ctx, int task, int n_tasks, int thread) {
    (void)thread;
    const bias_job *j = ctx;
    int64_t t0, t1;
    sd_split(j->n, task, n_tasks, &t0, &t1);
    for (int i = 0; i < j->n_l; i++) {
        const sd_linear *l = j->l[i];
        if (!l->bias) continue;
        for (int64_t t = t0; t < t1; t++) pt_add(j->y[i] + t * l->out, l->bias, l->out);
    }
}

pt_status sd_linear_run_n(sd_runtime *rt, const sd_linear *const *l, float *const *y, int n_l,
                          const float *x, int64_t n, pt_error *err) {
    if (n_l < 1 || n_l > 3 || n < 0 || n > INT_MAX)
        return pt_fail(err, PT_ERR_ARG, "linear: %d matrices over %lld rows", n_l, (long long)n);
    if (n == 0) return PT_OK;
    const int in = l[0]->in, k_pad = l[0]->k_pad;
    bool packed = false;
    for (int i = 0; i < n_l; i++) {
        if (l[i]->in != in || l[i]->k_pad != k_pad)
            return pt_fail(err, PT_ERR_ARG, "linear: grouped matrices of %d and %d columns",
                           in, l[i]->in);
        packed |= sd_int8_input(&l[i]->w);
    }
    prep_job pj = {&rt->cpu, x, NULL, NULL, in, k_pad, n};
    pt_qact qa;
    pt_status st;
    if (k_pad != in) {
        st = sd_rt_reserve_shared(rt, (void **)&rt->pad_buf, &rt->pad_n, sizeof(float),
                                  (size_t)n * (size_t)k_pad, "padded inputs", err);
        if (st) return st;
        pj.pad = rt->pad_buf;
    }
    if (packed) {
        st = sd_rt_reserve_shared(rt, &rt->qa_buf, &rt->qa_n, 1, pt_qact_bytes(n, k_pad),
                                  "quantized inputs", err);
        if (st) return st;
        pt_qact_init(&qa, rt->qa_buf, n, k_pad);
        pj.qa = &qa;
    }
    if (pj.pad || pj.qa) sd_rt_run(rt, prep_task, &pj, sd_tasks_for(rt, n * k_pad));
    pt_matmul j = {n_l, {NULL}, {NULL}, pj.pad ? pj.pad : x, pj.qa, (int)n, false, pj.qa != NULL};
    for (int i = 0; i < n_l; i++) {
        j.w[i] = &l[i]->w;
        j.y[i] = y[i];
    }
    const pt_matmul_runner r = {&rt->cpu, rt->pool, rt->n_threads, rt->mm_scratch,
                                rt->mm_scratch_n, NULL};
    pt_matmul_run(&r, &j);
    bias_job bj = {l, y, n_l, n};
    int64_t outs = 0;
    for (int i = 0; i < n_l; i++) outs += l[i]->out;
    sd_rt_run(rt, bias_task, &bj, sd_tasks_for(rt, n * outs));
    return PT_OK;
}

pt_status sd_linear_run(sd_runtime *rt, const sd_linear *l, const float *x, int64_t n, float *y,
                        pt_error *err) {
    return sd_linear_run_n(rt, &l, &y, 1, x, n, err);
}
