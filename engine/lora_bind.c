/* lora_bind.c — binding a read LoRA adapter to a loaded decoder: each
 * pair to the pt_weight it adapts (by the base's GGUF tensor name), shapes
 * checked, B's rows put in the model's Q/K order. */
#include "llm_internal.h"
#include "lora.h"
#include "matmul.h"
#include "quant.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The matrix of m named `name` that an adapter may adapt, or NULL. */
static const pt_weight *find_matrix(const pt_llm *m, const char *name, int layer) {
    if (strcmp(name, "output.weight") == 0) return &m->output;
    if (layer < 0 || layer >= m->hp.n_layer) return NULL;
    const pt_llm_layer *L = &m->layers[layer];
    const char *role = strchr(name + 4, '.'); /* after "blk.N" */
    if (!role) return NULL;
    static const char *roles[] = {".attn_q.weight",   ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
                                  ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"};
    const pt_weight *w[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (strcmp(role, roles[i]) == 0) return w[i];
    return NULL;
}

/* HF keeps each head's Q/K rows in rotate-half order (i, i + D/2);
 * llama.cpp's converter permutes a llama base's rows to interleaved pairs
 * (2i, 2i+1), and so must B (its rows are the matrix's rows):
 *   new row h*D + 2j + i  =  old row h*D + i*D/2 + j,  i in {0,1}, j < D/2. */
static pt_status permute_rows(float *b, int64_t rows, int rank, int heads, pt_error *err) {
    if (heads <= 0 || rows % (2 * heads) != 0)
        return pt_fail(err, PT_ERR_FORMAT, "Q/K rows (%lld) do not split into %d heads", (long long)rows, heads);
    const int64_t D = rows / heads;
    float *old = malloc((size_t)rows * (size_t)rank * sizeof *old);
    if (!old) return pt_fail(err, PT_ERR_NOMEM, "out of memory binding an adapter");
    memcpy(old, b, (size_t)rows * (size_t)rank * sizeof *old);
    for (int64_t h = 0; h < heads; h++)
        for (int64_t j = 0; j < D / 2; j++)
            for (int64_t i = 0; i < 2; i++)
                memcpy(b + (size_t)(h * D + 2 * j + i) * (size_t)rank, old + (size_t)(h * D + i * (D / 2) + j) * (size_t)rank,
                       (size_t)rank * sizeof *b);
    free(old);
    return PT_OK;
}

pt_status pt_lora_raw_gguf_rows(pt_lora_raw *r, bool llama, int n_head, int n_head_kv, pt_error *err) {
    if (r->hf_qk && llama) {
        pt_status st = permute_rows(r->b, r->rows, r->rank, strstr(r->target, ".attn_q.") ? n_head : n_head_kv, err);
        if (st != PT_OK) return st;
    }
    r->hf_qk = false; /* permuted once */
    return PT_OK;
}

/* rows x cols float32 (row stride ld floats, columns past n_in zero) as
 * Q8_0 rows, packed for cpu; NULL when it cannot be (shape, memory). */
static pt_qweights *pack_q8(const float *x, int64_t rows, int64_t n_in, int64_t cols, const pt_cpu *cpu) {
    if (!pt_qweights_supported(PT_TYPE_Q8_0, rows, cols, cpu)) return NULL;
    const size_t rb = pt_type_row_bytes(PT_TYPE_Q8_0, cols);
    uint8_t *q = malloc(rb * (size_t)rows);
    float *row = malloc((size_t)cols * sizeof *row);
    pt_qweights *w = NULL;
    if (q && row) {
        for (int64_t r = 0; r < rows; r++) {
            memcpy(row, x + (size_t)r * (size_t)n_in, (size_t)n_in * sizeof *row);
            for (int64_t c = n_in; c < cols; c++) row[c] = 0.0f;
            pt_quantize_row(PT_TYPE_Q8_0, row, q + (size_t)r * rb, cols);
        }
        w = pt_qweights_pack(PT_TYPE_Q8_0, q, rows, cols, cpu);
    }
    free(q);
    free(row);
    return w;
}

/* The int8 path's factors of a bound pair (matmul.h), when its base
 * matrix is packed (the model's CPU variant has int8 kernels for it, and
 * its job quantizes x): A's rows along cols as Q8_0; B as [rows / g x 32]
 * (g = 32 / rank rows of B a row) or padded to rank8 (g = 1), as Q8_0.
 * Their packed bytes, 0 when there are none (the pair keeps the float
 * path). */
static uint64_t pair_pack_q8(pt_lora_pair *p, const pt_cpu *cpu) {
    const int64_t rows = p->target->rows, cols = p->target->cols;
    const int rank8 = (p->rank + 31) / 32 * 32;
    /* g at most 8: every row range a job splits off starts at a multiple
     * of 8 (ROW_ALIGN, row groups of 8 or 16) */
    p->g = p->rank >= 4 && 32 % p->rank == 0 && rows % (32 / p->rank) == 0 ? 32 / p->rank : 1;
    p->ucols = p->g > 1 ? 32 : rank8;
    if (!p->target->packed) return 0;
    p->a8 = pack_q8(p->a, p->rank, cols, cols, cpu);
    /* B [rows][rank] row-major is [rows / g][32] as it stands when g > 1 */
    p->b8 = !p->a8 ? NULL
            : p->g > 1 ? pack_q8(p->b, rows / p->g, 32, 32, cpu)
                       : pack_q8(p->b, rows, p->rank, rank8, cpu);
    if (!p->b8) {
        pt_qweights_free(p->a8);
        p->a8 = NULL;
        return 0;
    }
    return pt_qweights_bytes(p->a8) + pt_qweights_bytes(p->b8);
}

void pt_lora_pairs_free(pt_lora_pair *pairs, int n) {
    for (int i = 0; pairs && i < n; i++) {
        pt_qweights_free(pairs[i].a8);
        pt_qweights_free(pairs[i].b8);
    }
    free(pairs);
}

static int by_target(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t)((const pt_lora_pair *)a)->target;
    const uintptr_t y = (uintptr_t)((const pt_lora_pair *)b)->target;
    return x < y ? -1 : x > y;
}

pt_status pt_lora_bind(pt_lora *l, const pt_llm *m, pt_error *err) {
    const pt_llm_hparams *hp = &m->hp;
    if (l->arch[0] && strcmp(l->arch, hp->arch_name) != 0)
        return pt_fail(err, PT_ERR_ARG, "the adapter is for a '%s' model, this model is '%s'", l->arch, hp->arch_name);
    pt_lora_pair *pairs = calloc((size_t)l->n_pairs, sizeof *pairs);
    if (!pairs) return pt_fail(err, PT_ERR_NOMEM, "out of memory binding an adapter");
    for (int i = 0; i < l->n_pairs; i++) {
        pt_lora_raw *r = &l->raw[i];
        const pt_weight *w = find_matrix(m, r->target, r->layer);
        pt_status st = PT_OK;
        if (!w && r->layer >= hp->n_layer)
            st = pt_fail(err, PT_ERR_ARG, "the adapter is for another base model: it adapts '%s' but the model has %d layers",
                         r->target, hp->n_layer);
        else if (!w)
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "the adapter adapts '%s', which petrel cannot adapt in this model",
                         r->target);
        else if (w->rows != r->rows || w->cols != r->cols)
            st = pt_fail(err, PT_ERR_ARG,
                         "the adapter is for another base model: '%s' is %lld x %lld here but %lld x %lld in the adapter",
                         r->target, (long long)w->rows, (long long)w->cols, (long long)r->rows, (long long)r->cols);
        else
            st = pt_lora_raw_gguf_rows(r, hp->arch == PT_ARCH_LLAMA, hp->n_head, hp->n_head_kv, err);
        if (st != PT_OK) {
            free(pairs);
            return st;
        }
        pairs[i] = (pt_lora_pair){w, r->rank, r->a, r->b, r->scale, 1, 0, NULL, NULL};
    }
    qsort(pairs, (size_t)l->n_pairs, sizeof *pairs, by_target);
    for (int i = 1; i < l->n_pairs; i++)
        if (pairs[i].target == pairs[i - 1].target) {
            free(pairs);
            return pt_fail(err, PT_ERR_FORMAT, "the adapter adapts one matrix twice");
        }
    uint64_t q8 = 0;
    for (int i = 0; i < l->n_pairs; i++) q8 += pair_pack_q8(&pairs[i], &m->cpu);
    pt_lora_pairs_free(l->pairs, l->n_pairs);
    l->pairs = pairs;
    l->bytes_q8 = q8;
    l->llm = m;
    return PT_OK;
}
