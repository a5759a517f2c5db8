/*
 * quantize.c — pt_quantize_file: a GGUF in, a GGUF of other tensor types
 * out, as llama-quantize writes it (petrel.h has the contract).
 *
 * The output file is llama-quantize's byte for byte where the blocks are
 * (see kernels/cpu/quant_quantize.c): the metadata keys in the input's
 * order less split.*, then general.quantization_version and
 * general.file_type moved to the end (ggml's gguf_set_val removes a key
 * and appends it); the tensors ordered by layer, then name (llama.cpp's
 * weight_name_comparer), each with ggml_n_dims dimensions; data padded
 * to general.alignment (default 32) after every tensor. One deliberate
 * difference: an input whose general.alignment is not 32 keeps that key
 * and petrel lays the data out by it, while llama-quantize copies the key
 * but pads to 32 regardless (its gguf context takes the alignment only
 * when reading a file), writing a file that contradicts itself.
 *
 * Converted tensors are done in slabs of rows (at most ~16 MiB out):
 * each row is widened to float (pt_dequant_row: exact for F16 / BF16,
 * ggml's own dequantization for quantized sources), checked for NaN / inf
 * (llama-quantize's loader refuses those), and quantized; rows run in
 * parallel on the thread pool, each task writing its own rows.
 */
#include "petrel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"
#include "quantize_policy.h"
#include "status.h"
#include "threadpool.h"

#define SLAB_BYTES ((size_t)16 << 20)
#define GGML_QNT_VERSION 2 /* ggml.h: bumped on quantization format changes */
#define TYPE_NAMES "F32, F16, BF16, Q8_0, Q6_K, Q5_K_M, Q5_K_S, Q5_1, Q5_0, Q4_K_M, Q4_K_S, Q4_1, Q4_0"

pt_quantize_params pt_quantize_default_params(void) {
    return (pt_quantize_params){.size = sizeof(pt_quantize_params)};
}

/* One tensor of the output, in output order. */
typedef struct plan_item {
    const pt_gguf_tensor *src;
    uint32_t type;
} plan_item;

/* ---- the rows of one slab, on the pool ------------------------------------ */

typedef struct slab_job {
    const pt_gguf_tensor *src;
    uint32_t to;
    int64_t ncols, row0, nrows; /* rows [row0, row0 + nrows) of the tensor */
    size_t in_row, out_row;
    uint8_t *out;               /* nrows * out_row */
    float *scratch;             /* ncols floats per pool thread */
    int n_tasks;
    int64_t *bad_row;           /* per task: first non-finite row, or -1 */
} slab_job;

static void slab_task(void *ctx, int task, int n_tasks, int thread) {
    slab_job *j = ctx;
    float *x = j->scratch + (size_t)thread * (size_t)j->ncols;
    const int64_t r0 = j->nrows * task / n_tasks, r1 = j->nrows * (task + 1) / n_tasks;
    j->bad_row[task] = -1;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *in = (const uint8_t *)j->src->data + (size_t)(j->row0 + r) * j->in_row;
        pt_dequant_row(j->src->type, in, x, j->ncols);
        for (int64_t i = 0; i < j->ncols; i++)
            if (!isfinite(x[i])) {
                j->bad_row[task] = j->row0 + r;
                return;
            }
        pt_quantize_row(j->to, x, j->out + (size_t)r * j->out_row, j->ncols);
    }
}

/* ---- the driver -------------------------------------------------------------- */

typedef struct run {
    const pt_quantize_params *p;
    pt_gguf *g;
    pt_gguf_writer *w;
    pt_threadpool *tp;
    bool own_tp;
    plan_item *plan;
    uint64_t n;
    uint64_t done, total; /* input weight bytes */
    uint8_t *out;
    float *scratch;
    int64_t *bad_row;
} run;

static bool cancelled(const run *r) {
    return r->p->cancel && atomic_load(r->p->cancel);
}

static void report(run *r, uint64_t i) {
    if (!r->p->progress) return;
    char name[256]; /* the name NUL-terminated (it is not, in the file) */
    const pt_gguf_str s = r->plan[i].src->name;
    const size_t n = s.len < sizeof name - 1 ? (size_t)s.len : sizeof name - 1;
    memcpy(name, s.ptr, n);
    name[n] = 0;
    const pt_quantize_progress pr = {
        .tensor = (int)i,
        .n_tensors = (int)r->n,
        .name = name,
        .from_type = pt_type_name(r->plan[i].src->type),
        .to_type = pt_type_name(r->plan[i].type),
        .done = r->done,
        .total = r->total,
    };
    r->p->progress(r->p->progress_user, &pr);
}

static pt_status convert_tensor(run *r, uint64_t i, pt_error *err) {
    const pt_gguf_tensor *t = r->plan[i].src;
    const uint32_t to = r->plan[i].type;
    const int64_t ncols = t->ne[0];
    const int64_t nrows = (int64_t)(t->nbytes / pt_type_row_bytes(t->type, ncols));
    const size_t in_row = pt_type_row_bytes(t->type, ncols), out_row = pt_type_row_bytes(to, ncols);
    const int n_threads = pt_pool_threads(r->tp->pool);
    if (nrows == 0) return PT_OK;
    int64_t slab = (int64_t)(SLAB_BYTES / out_row);
    if (slab < 1) slab = 1;
    if (slab > nrows) slab = nrows;

    r->out = malloc((size_t)slab * out_row);
    r->scratch = malloc((size_t)n_threads * (size_t)ncols * sizeof(float));
    r->bad_row = malloc((size_t)4 * (size_t)n_threads * sizeof(int64_t));
    if (!r->out || !r->scratch || !r->bad_row) return pt_fail(err, PT_ERR_NOMEM, "out of memory");

    for (int64_t row0 = 0; row0 < nrows; row0 += slab) {
        if (cancelled(r)) return pt_fail(err, PT_ERR_CANCELLED, "quantize: cancelled");
        const int64_t n = nrows - row0 < slab ? nrows - row0 : slab;
        int n_tasks = 4 * n_threads; /* more tasks than threads: balance */
        if (n_tasks > n) n_tasks = (int)n;
        slab_job j = {t, to, ncols, row0, n, in_row, out_row, r->out, r->scratch, n_tasks, r->bad_row};
        pt_pool_run(r->tp->pool, slab_task, &j, n_tasks);
        for (int k = 0; k < n_tasks; k++)
            if (r->bad_row[k] >= 0)
                return pt_fail(err, PT_ERR_FORMAT, "tensor %.*s: row %lld holds NaN or inf", (int)t->name.len,
                               t->name.ptr, (long long)r->bad_row[k]);
        pt_status st = pt_gguf_writer_data(r->w, r->out, (size_t)n * out_row, err);
        if (st) return st;
        r->done += (uint64_t)n * in_row;
        report(r, i);
    }
    free(r->out);
    free(r->scratch);
    free(r->bad_row);
    r->out = NULL;
    r->scratch = NULL;
    r->bad_row = NULL;
    return PT_OK;
}

static pt_status copy_tensor(run *r, uint64_t i, pt_error *err) {
    const pt_gguf_tensor *t = r->plan[i].src;
    for (uint64_t off = 0; off < t->nbytes; off += SLAB_BYTES) {
        if (cancelled(r)) return pt_fail(err, PT_ERR_CANCELLED, "quantize: cancelled");
        const uint64_t n = t->nbytes - off < SLAB_BYTES ? t->nbytes - off : SLAB_BYTES;
        pt_status st = pt_gguf_writer_data(r->w, (const uint8_t *)t->data + off, (size_t)n, err);
        if (st) return st;
        r->done += n;
    }
    report(r, i);
    return PT_OK;
}

/* Parse an override type name ("" or NULL: none). */
static pt_status override_type(const char *name, const char *what, uint32_t *out, pt_error *err) {
    *out = PT_QTYPE_NONE;
    if (!name || !*name) return PT_OK;
    if (!pt_qtype_parse(name, out, NULL))
        return pt_fail(err, PT_ERR_ARG, "unknown %s type '%s' (%s)", what, name, TYPE_NAMES);
    return PT_OK;
}

/* Output order: llama-quantize's; index i of the input breaks no ties
 * (names are unique) but keeps qsort's result defined. */
static int plan_cmp(const void *a, const void *b) {
    const plan_item *x = a, *y = b;
    return pt_qpolicy_order(&x->src->name, &y->src->name);
}

static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static pt_status plan_tensors(run *r, pt_qpolicy *pol, pt_error *err) {
    r->n = r->g->n_tensors;
    r->plan = calloc(r->n ? (size_t)r->n : 1, sizeof *r->plan);
    if (!r->plan) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < r->n; i++) r->plan[i].src = &r->g->tensors[i];
    /* output order first: the K mixes count tensors in that order */
    qsort(r->plan, (size_t)r->n, sizeof *r->plan, plan_cmp);
    for (uint64_t i = 0; i < r->n; i++) {
        const pt_gguf_tensor *t = r->plan[i].src;
        bool fell_back;
        const uint32_t to = pt_qpolicy_type(pol, t, &fell_back);
        r->plan[i].type = to;
        r->total += t->nbytes;
        if (to == t->type) continue;
        const pt_type_traits *from = pt_type_get(t->type);
        const bool float_src = t->type == PT_TYPE_F32 || t->type == PT_TYPE_F16 || t->type == PT_TYPE_BF16;
        if (!float_src && !r->p->allow_requantize)
            return pt_fail(err, PT_ERR_UNSUPPORTED,
                           "tensor %.*s is %s: requantizing is disabled (--allow-requantize)", (int)t->name.len,
                           t->name.ptr, pt_type_name(t->type));
        if (!from || !from->supported)
            return pt_fail(err, PT_ERR_UNSUPPORTED, "tensor %.*s: petrel cannot read type %s", (int)t->name.len,
                           t->name.ptr, pt_type_name(t->type));
        if (!pt_can_quantize(to))
            return pt_fail(err, PT_ERR_UNSUPPORTED, "tensor %.*s would be %s, which petrel cannot write",
                           (int)t->name.len, t->name.ptr, pt_type_name(to));
    }
    return PT_OK;
}

/* The output metadata: the input's, less split.*, then the two keys
 * llama-quantize sets (appended, as gguf_set_val_u32 does). */
static pt_status plan_kv(run *r, uint32_t ftype, pt_gguf_kv **out, uint64_t *n_out, pt_error *err) {
    pt_gguf_kv *kv = calloc((size_t)r->g->n_kv + 2, sizeof *kv);
    if (!kv) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    uint64_t n = 0;
    for (uint64_t i = 0; i < r->g->n_kv; i++) {
        const pt_gguf_str k = r->g->kv[i].key;
        if (pt_gguf_str_eq(k, "general.quantization_version") || pt_gguf_str_eq(k, "general.file_type") ||
            pt_gguf_str_eq(k, "split.no") || pt_gguf_str_eq(k, "split.count") ||
            pt_gguf_str_eq(k, "split.tensors.count"))
            continue;
        kv[n++] = r->g->kv[i];
    }
    static const char qv[] = "general.quantization_version", ft[] = "general.file_type";
    kv[n].key = (pt_gguf_str){qv, sizeof qv - 1};
    kv[n].value.type = PT_GGUF_UINT32;
    kv[n++].value.v.u = GGML_QNT_VERSION;
    kv[n].key = (pt_gguf_str){ft, sizeof ft - 1};
    kv[n].value.type = PT_GGUF_UINT32;
    kv[n++].value.v.u = ftype;
    *out = kv;
    *n_out = n;
    return PT_OK;
}

static pt_status write_all(run *r, uint32_t ftype, pt_quantize_result *res, pt_error *err) {
    pt_gguf_kv *kv = NULL;
    uint64_t n_kv = 0;
    pt_gguf_out_tensor *ti = calloc(r->n ? (size_t)r->n : 1, sizeof *ti);
    pt_status st = ti ? plan_kv(r, ftype, &kv, &n_kv, err) : pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!st) {
        for (uint64_t i = 0; i < r->n; i++) {
            const pt_gguf_tensor *t = r->plan[i].src;
            ti[i] = (pt_gguf_out_tensor){t->name, (uint32_t)pt_qpolicy_n_dims(t), {t->ne[0], t->ne[1], t->ne[2], t->ne[3]},
                                         r->plan[i].type};
        }
        st = pt_gguf_writer_header(r->w, kv, n_kv, ti, r->n, err);
    }
    free(kv);
    free(ti);
    for (uint64_t i = 0; !st && i < r->n; i++) {
        const bool convert = r->plan[i].type != r->plan[i].src->type;
        st = convert ? convert_tensor(r, i, err) : copy_tensor(r, i, err);
        if (!st) st = pt_gguf_writer_end_tensor(r->w, err);
        if (!st) {
            const pt_gguf_tensor *t = r->plan[i].src;
            res->in_weight_bytes += t->nbytes;
            res->out_weight_bytes += pt_type_row_bytes(r->plan[i].type, t->ne[0]) * (t->nbytes / pt_type_row_bytes(t->type, t->ne[0]));
            res->n_converted += convert;
        }
    }
    return st;
}

pt_status pt_quantize_file(const char *in, const char *out, const pt_quantize_params *params,
                           pt_quantize_result *result, pt_error *err) {
    pt_quantize_result scratch;
    pt_quantize_result *res = result ? result : &scratch;
    memset(res, 0, sizeof *res);
    pt_quantize_params p = pt_quantize_default_params();
    if (pt_params_overlay(&p, sizeof p, params, "pt_quantize_params", err)) return PT_ERR_ARG;
    if (!in || !*in || !out || !*out) return pt_fail(err, PT_ERR_ARG, "quantize: no input or output file");
    if (!p.type) return pt_fail(err, PT_ERR_ARG, "quantize: no type given");

    pt_qpolicy pol = {0};
    if (!pt_qtype_parse(p.type, &pol.target, &pol.ftype))
        return pt_fail(err, PT_ERR_ARG, "unknown type '%s' (%s)", p.type, TYPE_NAMES);
    pt_status st;
    if ((st = override_type(p.output_type, "output tensor", &pol.output_type, err)) ||
        (st = override_type(p.token_embd_type, "token embedding", &pol.token_embd_type, err)))
        return st;
    pol.leave_output = p.leave_output;
    if (same_file(in, out)) return pt_fail(err, PT_ERR_ARG, "quantize: %s is the input file", out);
    /* nor may OUT.tmp be: creating it would truncate the mapped input */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", out) < (int)sizeof tmp && same_file(in, tmp))
        return pt_fail(err, PT_ERR_ARG, "quantize: %s (the temporary output) is the input file", tmp);

    run r = {.p = &p};
    if ((st = pt_gguf_open(in, &r.g, err))) return st;
    pt_qpolicy_from_model(&pol, r.g);
    res->in_file_bytes = r.g->size;
    res->n_tensors = (int)r.g->n_tensors;
    res->file_type = pol.ftype;

    st = plan_tensors(&r, &pol, err);
    if (!st) {
        if (p.threadpool) {
            r.tp = p.threadpool;
        } else {
            st = pt_threadpool_new(p.n_threads, &r.tp, err);
            r.own_tp = true;
        }
    }
    if (!st) st = pt_gguf_writer_open(out, &r.w, err);
    if (!st) {
        pt_threadpool_acquire(r.tp);
        st = write_all(&r, res->file_type, res, err);
        pt_threadpool_release(r.tp);
        res->out_file_bytes = pt_gguf_writer_bytes(r.w);
        /* commit frees the writer whatever happens; abort likewise */
        if (!st) st = pt_gguf_writer_commit(r.w, err);
        else pt_gguf_writer_abort(r.w);
    }
    free(r.out);
    free(r.scratch);
    free(r.bad_row);
    free(r.plan);
    if (r.own_tp) pt_threadpool_free(r.tp);
    pt_gguf_close(r.g);
    return st;
}
