/* context.c — a model's per-conversation state: KV cache, logits. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model_internal.h"
#include "status.h"

#define PT_DEFAULT_CTX 4096
#define PT_DEFAULT_BATCH 256

pt_context_params pt_context_default_params(void) {
    return (pt_context_params){.size = sizeof(pt_context_params), .n_ctx = 0, .n_threads = 0,
                               .n_batch = PT_DEFAULT_BATCH, .kv_type = PT_KV_F32};
}

/* The caller's params over the defaults, reading only its first `size`
 * bytes (see pt_model_params in petrel.h). */
static pt_status read_context_params(const pt_context_params *given, pt_context_params *p,
                                     pt_error *err) {
    *p = pt_context_default_params();
    pt_status st = pt_params_overlay(p, sizeof *p, given, "pt_context_params", err);
    if (st != PT_OK) return st;
    if (p->kv_type < PT_KV_F32 || p->kv_type > PT_KV_Q8F8)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "KV cache type %d is not available (f32, f16, q8, q8f8)",
                       (int)p->kv_type);
    if (p->kv_qk < PT_KV_QK_AUTO || p->kv_qk > PT_KV_QK_INT8)
        return pt_fail(err, PT_ERR_ARG, "KV Q.K mode %d is not one of auto, float, int8", (int)p->kv_qk);
    if (p->kv_ram_mb < 0)
        return pt_fail(err, PT_ERR_ARG, "KV RAM budget (%d MiB) must not be negative", p->kv_ram_mb);
    return PT_OK;
}

pt_status pt_context_new(pt_model *model, const pt_context_params *params, pt_context **out,
                         pt_error *err) {
    *out = NULL;
    pt_context_params p;
    pt_status st = read_context_params(params, &p, err);
    if (st != PT_OK) return st;
    if (model->metadata_only)
        return pt_fail(err, PT_ERR_ARG, "the model was loaded with metadata only: it cannot run");
    const pt_llm_hparams *hp = pt_llm_get_hparams(model->llm);
    if (p.n_ctx < 0 || p.n_batch < 0 || p.n_threads < 0)
        return pt_fail(err, PT_ERR_ARG, "context size, batch and threads must not be negative");
    if (p.n_ctx == 0) p.n_ctx = hp->n_ctx_train < PT_DEFAULT_CTX ? hp->n_ctx_train : PT_DEFAULT_CTX;
    if (p.n_batch == 0) p.n_batch = PT_DEFAULT_BATCH;
    if (p.n_batch > p.n_ctx) p.n_batch = p.n_ctx;
    if (p.n_threads == 0 && !p.threadpool) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        p.n_threads = n > 0 ? (int)n : 1;
    }
    pt_context *c = calloc(1, sizeof *c);
    float *logits = calloc((size_t)hp->n_vocab, sizeof *logits);
    pt_token *toks = malloc((size_t)p.n_ctx * sizeof *toks);
    if (!c || !logits || !toks) {
        free(c);
        free(logits);
        free(toks);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory creating a context");
    }
    c->model = model;
    c->n_ctx = p.n_ctx;
    c->n_batch = p.n_batch;
    c->logits = logits;
    c->toks = toks;
    c->lora_f32 = p.lora_f32;
    const pt_llm_kv_params kvp = {(int)p.kv_type, (uint64_t)p.kv_ram_mb << 20, p.kv_spill_dir,
                                   (int)p.kv_qk};
    st = pt_llm_state_new_kv(model->llm, p.n_ctx, p.n_batch, p.n_threads, p.threadpool, &kvp, &c->state, err);
    if (st != PT_OK) {
        pt_context_free(c);
        return st;
    }
    *out = c;
    return PT_OK;
}

void pt_context_free(pt_context *c) {
    if (!c) return;
    pt_llm_state_free(c->state);
    free(c->lora.u);
    free(c->lora.qu);
    free(c->lora.tmp);
    free(c->logits);
    free(c->toks);
    free(c);
}

void pt_context_reset(pt_context *c) {
    pt_llm_state_reset(c->state);
    c->have_logits = false;
}

pt_status pt_context_truncate(pt_context *c, int n_keep, pt_error *err) {
    const int n_past = pt_llm_state_n_past(c->state);
    if (n_keep < 0 || n_keep > n_past)
        return pt_fail(err, PT_ERR_ARG, "cannot keep %d positions of a cache holding %d", n_keep, n_past);
    if (n_keep == n_past) return PT_OK;
    pt_llm_state_truncate(c->state, n_keep);
    c->have_logits = false; /* they were the last position's, now cut */
    return PT_OK;
}

int pt_context_n_past(const pt_context *c) { return pt_llm_state_n_past(c->state); }
int pt_context_n_ctx(const pt_context *c) { return c->n_ctx; }

const pt_token *pt_context_tokens(const pt_context *c, int *n) {
    *n = pt_llm_state_n_past(c->state);
    return c->toks;
}

void pt_context_get_counters(const pt_context *c, pt_context_counters *out) { *out = c->counters; }

pt_status pt_decode(pt_context *c, const pt_token *tokens, int n, float *all_logits,
                    pt_error *err) {
    if (n <= 0 || !tokens) return pt_fail(err, PT_ERR_ARG, "pt_decode needs at least one token");
    const int n_past = pt_llm_state_n_past(c->state);
    pt_status st = pt_llm_forward(c->model->llm, c->state, tokens, n, c->logits, all_logits, err);
    if (st == PT_OK) {
        /* pt_llm_forward checked n_past + n <= n_ctx before running */
        memcpy(c->toks + n_past, tokens, (size_t)n * sizeof *tokens);
        c->counters.n_evaluated += (uint64_t)n;
        c->have_logits = true;
    }
    return st;
}

const float *pt_context_logits(const pt_context *c) { return c->have_logits ? c->logits : NULL; }

/* Pages of [addr, addr+len) resident in memory, in bytes (mincore). */
static uint64_t resident_bytes(const void *addr, uint64_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || !addr || len == 0) return 0;
    uint64_t pages = (len + (uint64_t)page - 1) / (uint64_t)page;
    unsigned char *vec = malloc(pages);
    if (!vec) return 0;
    uint64_t resident = 0;
    if (mincore((void *)addr, len, vec) == 0)
        for (uint64_t i = 0; i < pages; i++) resident += vec[i] & 1;
    free(vec);
    return resident * (uint64_t)page;
}

void pt_context_memory(const pt_context *c, pt_memory_stats *out) {
    const pt_gguf *g = c->model->gguf;
    memset(out, 0, sizeof *out);
    out->model_mapped = g->size;
    out->model_resident = g->owns_map ? resident_bytes(g->map, g->size) : g->size;
    out->kv_bytes_ram = pt_llm_state_kv_bytes(c->state);
    out->kv_tokens = pt_llm_state_n_past(c->state);
    out->kv_capacity = c->n_ctx;
    out->lora_bytes = c->lora_bytes;
    out->n_lora = c->lora.n;
}

void pt_context_kv_stats(const pt_context *c, pt_kv_stats *out) { pt_llm_state_kv_stats(c->state, out); }
