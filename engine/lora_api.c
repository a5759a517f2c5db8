/* lora_api.c — the public side of LoRA adapters (pt_lora_* and
 * pt_context_set_loras in petrel.h). */
#include "llm_graph.h"
#include "lora.h"
#include "matmul.h"
#include "model_internal.h"
#include "status.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static_assert(PT_LORA_MAX == PT_LORA_MAX_ACTIVE, "the public and internal adapter limits agree");

pt_status pt_lora_bind_model(pt_lora *l, const pt_model *model, pt_error *err) {
    return pt_lora_bind(l, model->llm, err);
}

pt_status pt_lora_load(pt_model *model, const char *path, pt_lora **out, pt_error *err) {
    *out = NULL;
    pt_lora *l = NULL;
    pt_status st = pt_lora_read(path, &l, err);
    if (st != PT_OK) return st;
    if (model) st = pt_lora_bind(l, model->llm, err);
    if (st != PT_OK) {
        pt_lora_free(l);
        return st;
    }
    *out = l;
    return PT_OK;
}

void pt_lora_get_info(const pt_lora *l, pt_lora_info *info) {
    int best = 0;
    for (int i = 1; i < l->n_pairs; i++)
        if (l->raw[i].rank > l->raw[best].rank) best = i;
    /* distinct layers: mark them in a small bitmap (layers beyond it uncounted) */
    unsigned char seen[4096 / 8] = {0};
    int n_layers = 0;
    for (int i = 0; i < l->n_pairs; i++) {
        const int y = l->raw[i].layer;
        if (y >= 0 && y < 4096 && !(seen[y / 8] & (1u << (y % 8)))) {
            seen[y / 8] |= (unsigned char)(1u << (y % 8));
            n_layers++;
        }
    }
    *info = (pt_lora_info){
        .format = l->format,
        .arch = l->arch,
        .base = l->base,
        .targets = l->targets,
        .rank = l->rank,
        .alpha = l->alpha,
        .rslora = l->rslora,
        .scale = l->n_pairs ? l->raw[best].scale : 0.0f,
        .n_matrices = l->n_pairs,
        .n_layers = n_layers,
        .bytes = l->bytes + l->bytes_q8,
    };
}

pt_status pt_context_set_loras(pt_context *c, pt_lora *const *adapters, const float *scales, int n,
                               pt_error *err) {
    if (n < 0 || n > PT_LORA_MAX || (n > 0 && !adapters))
        return pt_fail(err, PT_ERR_ARG, "between 0 and %d adapters may be active (%d given)", PT_LORA_MAX, n);
    if (n > 0 && pt_llm_graph_of(c->model->llm))
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "LoRA adapters do not run on OpenCL yet: use --device cpu with them");
    int max_rank = 0;
    int64_t max_rows = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        const pt_lora *l = adapters[i];
        if (!l || l->llm != c->model->llm)
            return pt_fail(err, PT_ERR_ARG, "adapter %d was not loaded for this context's model", i + 1);
        if (scales && !isfinite(scales[i]))
            return pt_fail(err, PT_ERR_ARG, "adapter %d has a scale that is not finite", i + 1);
        for (int k = 0; k < l->n_pairs; k++) {
            const pt_lora_pair *p = &l->pairs[k];
            const bool q8 = p->b8 && !c->lora_f32;
            const int r = q8 ? p->g * p->ucols : p->rank;
            if (r > max_rank) max_rank = r;
            if (q8 && p->target->rows > max_rows) max_rows = p->target->rows;
        }
        bytes += l->bytes + l->bytes_q8;
    }
    /* scratch for the low-rank products of one job: grown, never shrunk */
    const size_t need = pt_lora_run_u_floats(c->n_batch, max_rank);
    if (need > c->lora_u_floats) {
        float *u = malloc(need * sizeof *u);
        if (!u) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the adapters' scratch");
        free(c->lora.u);
        c->lora.u = u;
        c->lora_u_floats = need;
    }
    /* the int8 path's: quantized u per (matrix, adapter) of a job, and B u
     * of PT_LORA_TMP_TOKENS tokens per matrix (matmul.h) */
    if (max_rows > 0) {
        /* at most max_rank bytes of codes per token, in blocks of 32 (an
         * upper bound for any g and ucols with g * ucols <= max_rank) */
        const size_t qu_bytes = (pt_qact_bytes((int64_t)c->n_batch * (max_rank / 32), 32) + 63) & ~(size_t)63;
        const size_t qu_need = (size_t)3 * PT_LORA_MAX_ACTIVE * qu_bytes;
        const int threads = pt_llm_state_n_threads(c->state);
        const size_t tmp_need = (size_t)threads * PT_LORA_TMP_TOKENS * (size_t)max_rows;
        if (qu_need > c->lora_qu_cap) {
            uint8_t *qu = malloc(qu_need);
            if (!qu) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the adapters' scratch");
            free(c->lora.qu);
            c->lora.qu = qu;
            c->lora_qu_cap = qu_need;
        }
        if (tmp_need > c->lora_tmp_cap) {
            float *tmp = malloc(tmp_need * sizeof *tmp);
            if (!tmp) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the adapters' scratch");
            free(c->lora.tmp);
            c->lora.tmp = tmp;
            c->lora_tmp_cap = tmp_need;
        }
        c->lora.qu_bytes = qu_bytes;
        c->lora.max_rows = max_rows;
        c->lora.tmp_threads = threads;
    } else {
        c->lora.max_rows = 0; /* float path only */
    }
    c->lora.f32 = c->lora_f32;
    c->lora.n = n;
    c->lora.max_rank = max_rank;
    c->lora.max_tokens = c->n_batch;
    for (int i = 0; i < n; i++) {
        c->lora.pairs[i] = adapters[i]->pairs;
        c->lora.n_pairs[i] = adapters[i]->n_pairs;
        c->lora.scale[i] = scales ? scales[i] : 1.0f;
    }
    c->lora_bytes = bytes;
    pt_llm_state_set_lora(c->state, n ? &c->lora : NULL);
    return PT_OK;
}
