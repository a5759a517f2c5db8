/* lora_export.c — LoRA adapters merged into a private copy of their base
 * model (pt_lora_export in petrel.h): the file llama.cpp's
 * llama-export-lora writes.
 *
 * What llama-export-lora (tools/export-lora/export-lora.cpp) writes, and
 * so this:
 *   metadata  the base's key-value pairs in order, general.file_type
 *             removed and appended last as u32 1 (MOSTLY_F16: its
 *             gguf_set_val_u32 erases the key and appends it);
 *   tensors   the base's, ordered by name (it walks a std::map), each
 *             - adapted by the adapters: W + sum_i s_i * B_i A_i on W
 *               dequantized to float32, written as F32 when W is F32 and
 *               F16 otherwise (s_i the adapter's scale, alpha / rank or
 *               PEFT's rule, times the caller's);
 *             - else copied byte for byte in its own type;
 *   layout    GGUF v3 as gguf_write.h writes it (data aligned to the
 *             base's general.alignment, 32 when absent).
 * llama-export-lora takes only GGUF adapters all adapting the same
 * matrices; petrel also takes PEFT folders (their Q/K rows ordered as the
 * base's, as at load) and adapters of different matrices. A matrix the
 * base file lacks (the output of a model whose output is tied to the
 * token embeddings) is an error, not silently skipped. */
#include "gguf.h"
#include "gguf_write.h"
#include "lora.h"
#include "quant.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One adapted pair of one adapter, for the tensor it adapts. */
typedef struct ex_term {
    const pt_lora_raw *r;
    float scale; /* the pair's own times the caller's */
} ex_term;

typedef struct ex_tensor {
    const pt_gguf_tensor *t;
    uint32_t out_type;
    int first_term, n_terms; /* into the sorted terms */
} ex_tensor;

static int by_name(const void *a, const void *b) {
    const pt_gguf_str x = (*(const pt_gguf_tensor *const *)a)->name, y = (*(const pt_gguf_tensor *const *)b)->name;
    const int c = memcmp(x.ptr, y.ptr, x.len < y.len ? x.len : y.len);
    return c ? c : (x.len > y.len) - (x.len < y.len);
}

/* ggml_n_dims: the dimensions up to the last one above 1 (at least 1). */
static uint32_t n_dims_of(const pt_gguf_tensor *t) {
    uint32_t n = 1;
    for (uint32_t d = 1; d < t->n_dims; d++)
        if (t->ne[d] > 1) n = d + 1;
    return n;
}

/* Row r of the merged tensor into out (cols floats): W's row dequantized
 * plus each term's scale * (B A)[r] (the sum over the rank in float, in
 * order, as ggml's F32 product would). */
static void merged_row(const pt_gguf_tensor *t, const ex_term *terms, int n_terms, int64_t r, float *out) {
    const int64_t cols = t->ne[0];
    pt_dequant_row(t->type, (const uint8_t *)t->data + (size_t)r * pt_type_row_bytes(t->type, cols), out, cols);
    for (int i = 0; i < n_terms; i++) {
        const pt_lora_raw *p = terms[i].r;
        const float *b = p->b + (size_t)r * (size_t)p->rank;
        for (int64_t c = 0; c < cols; c++) {
            float d = 0.0f;
            for (int k = 0; k < p->rank; k++) d += b[k] * p->a[(size_t)k * (size_t)cols + (size_t)c];
            out[c] += terms[i].scale * d;
        }
    }
}

static void report(const pt_convert_params *p, int i, int n, const char *name, const char *type, uint64_t done,
                   uint64_t total) {
    if (!p || !p->progress) return;
    const pt_convert_progress pr = {"export-lora", i, n, name, type, done, total};
    p->progress(p->progress_user, &pr);
}

static pt_status write_merged(pt_gguf *g, ex_tensor *ts, int n, const ex_term *terms, const char *out,
                              const pt_convert_params *p, pt_convert_result *res, pt_error *err) {
    /* metadata: the base's, general.file_type moved last as MOSTLY_F16 */
    pt_gguf_kv *kv = calloc((size_t)g->n_kv + 1, sizeof *kv);
    pt_gguf_out_tensor *ot = calloc((size_t)n, sizeof *ot);
    int64_t max_cols = 1;
    uint64_t total = 0;
    pt_status st = kv && ot ? PT_OK : pt_fail(err, PT_ERR_NOMEM, "out of memory");
    uint64_t n_kv = 0;
    for (uint64_t i = 0; st == PT_OK && i < g->n_kv; i++)
        if (!pt_gguf_str_eq(g->kv[i].key, "general.file_type")) kv[n_kv++] = g->kv[i];
    if (kv) kv[n_kv++] = (pt_gguf_kv){{"general.file_type", 17}, {.type = PT_GGUF_UINT32, .v.u = 1}};
    for (int i = 0; st == PT_OK && i < n; i++) {
        const pt_gguf_tensor *t = ts[i].t;
        ot[i] = (pt_gguf_out_tensor){t->name, n_dims_of(t), {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}, ts[i].out_type};
        if (t->ne[0] > max_cols) max_cols = t->ne[0];
        total += t->nbytes;
    }
    float *row = st == PT_OK ? malloc((size_t)max_cols * sizeof *row) : NULL;
    uint8_t *enc = st == PT_OK ? malloc((size_t)max_cols * sizeof(float)) : NULL;
    if (st == PT_OK && (!row || !enc)) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    pt_gguf_writer *w = NULL;
    if (st == PT_OK) st = pt_gguf_writer_open(out, &w, err);
    if (st == PT_OK) st = pt_gguf_writer_header(w, kv, n_kv, ot, (uint64_t)n, err);
    uint64_t done = 0;
    char name[96];
    for (int i = 0; st == PT_OK && i < n; i++) {
        const pt_gguf_tensor *t = ts[i].t;
        snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 95 ? t->name.len : 95), t->name.ptr);
        report(p, i, n, name, pt_type_name(ts[i].out_type), done, total);
        if (p && p->cancel && atomic_load(p->cancel)) {
            st = pt_fail(err, PT_ERR_CANCELLED, "export-lora: cancelled");
            break;
        }
        if (ts[i].n_terms == 0) {
            st = pt_gguf_writer_data(w, t->data, (size_t)t->nbytes, err);
        } else {
            const int64_t rows = t->ne[1] * t->ne[2] * t->ne[3], cols = t->ne[0];
            for (int64_t r = 0; st == PT_OK && r < rows; r++) {
                merged_row(t, terms + ts[i].first_term, ts[i].n_terms, r, row);
                st = pt_gguf_writer_data(w, enc, pt_quantize_row(ts[i].out_type, row, enc, cols), err);
            }
        }
        if (st == PT_OK) st = pt_gguf_writer_end_tensor(w, err);
        done += t->nbytes;
    }
    if (w) {
        if (res) res->out_file_bytes = pt_gguf_writer_bytes(w);
        if (st == PT_OK) st = pt_gguf_writer_commit(w, err);
        else pt_gguf_writer_abort(w);
    }
    if (st == PT_OK) report(p, n, n, "", "", total, total);
    free(row);
    free(enc);
    free(kv);
    free(ot);
    return st;
}

static int term_by_target(const void *a, const void *b) {
    return strcmp(((const ex_term *)a)->r->target, ((const ex_term *)b)->r->target);
}

pt_status pt_lora_export(const char *model, const char *const *adapters, const float *scales, int n_adapters,
                         const char *out, const pt_convert_params *p, pt_convert_result *res, pt_error *err) {
    if (res) memset(res, 0, sizeof *res);
    if (n_adapters < 1 || n_adapters > PT_LORA_MAX || !adapters)
        return pt_fail(err, PT_ERR_ARG, "export-lora: between 1 and %d adapters (%d given)", PT_LORA_MAX, n_adapters);
    for (int i = 0; scales && i < n_adapters; i++)
        if (!(scales[i] >= -1e6f && scales[i] <= 1e6f))
            return pt_fail(err, PT_ERR_ARG, "export-lora: adapter %d has a scale that is not a finite number", i + 1);
    pt_lora *ls[PT_LORA_MAX] = {0};
    pt_gguf *g = NULL;
    ex_term *terms = NULL;
    ex_tensor *ts = NULL;
    const pt_gguf_tensor **order = NULL;
    char arch[32] = "";
    int n_terms = 0;
    pt_status st = PT_OK;
    for (int i = 0; st == PT_OK && i < n_adapters; i++) {
        st = pt_lora_read(adapters[i], &ls[i], err);
        if (st == PT_OK) st = pt_lora_check_base(ls[i], model, "-m", arch, sizeof arch, err);
        if (st == PT_OK) n_terms += ls[i]->n_pairs;
    }
    if (st == PT_OK) st = pt_gguf_open(model, &g, err);
    if (st == PT_OK) {
        terms = calloc((size_t)n_terms + 1, sizeof *terms);
        ts = calloc((size_t)g->n_tensors + 1, sizeof *ts);
        order = calloc((size_t)g->n_tensors + 1, sizeof *order);
        if (!terms || !ts || !order) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    }
    if (st == PT_OK) {
        int k = 0;
        for (int i = 0; i < n_adapters; i++)
            for (int j = 0; j < ls[i]->n_pairs; j++)
                terms[k++] = (ex_term){&ls[i]->raw[j], ls[i]->raw[j].scale * (scales ? scales[i] : 1.0f)};
        /* stable within a target: adapter order kept by a tie-break on k */
        for (int a = 1; a < n_terms; a++) /* insertion sort: stable, few hundred terms */
            for (int b = a; b > 0 && term_by_target(&terms[b - 1], &terms[b]) > 0; b--) {
                const ex_term tmp = terms[b];
                terms[b] = terms[b - 1];
                terms[b - 1] = tmp;
            }
        for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
        qsort(order, (size_t)g->n_tensors, sizeof *order, by_name);
        int used = 0;
        for (uint64_t i = 0; st == PT_OK && i < g->n_tensors; i++) {
            const pt_gguf_tensor *t = order[i];
            ts[i] = (ex_tensor){t, t->type, 0, 0};
            char name[64];
            if (t->name.len >= sizeof name) continue;
            memcpy(name, t->name.ptr, t->name.len);
            name[t->name.len] = 0;
            int lo = 0;
            while (lo < n_terms && strcmp(terms[lo].r->target, name) < 0) lo++;
            int hi = lo;
            while (hi < n_terms && strcmp(terms[hi].r->target, name) == 0) hi++;
            if (hi > lo) {
                ts[i] = (ex_tensor){t, t->type == PT_TYPE_F32 ? PT_TYPE_F32 : PT_TYPE_F16, lo, hi - lo};
                used += hi - lo;
            }
        }
        /* pt_lora_check_base found every target; a duplicate name would not be used */
        if (used != n_terms) st = pt_fail(err, PT_ERR_FORMAT, "export-lora: an adapter adapts a matrix twice");
    }
    if (st == PT_OK) st = write_merged(g, ts, (int)g->n_tensors, terms, out, p, res, err);
    if (st == PT_OK && res) {
        snprintf(res->arch, sizeof res->arch, "%s", arch);
        res->n_tensors = (int)g->n_tensors;
        snprintf(res->outtype, sizeof res->outtype, "f16");
    }
    free(order);
    free(ts);
    free(terms);
    pt_gguf_close(g);
    for (int i = 0; i < n_adapters; i++) pt_lora_free(ls[i]);
    return st;
}
