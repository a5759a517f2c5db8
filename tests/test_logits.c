/*
 * test_logits.c — pt_llm_forward against transformers.
 *
 * References (committed, made by tools/gen_tiny_models.py and
 * tools/gen_logits_fixture.py): the float32 transformers model whose
 * weights are exactly the gguf-py dequantization of each GGUF, run on
 * fixed prompts, logits saved at every position.
 *   - tiny_{llama,llama_rs,llama3,qwen2,qwen3}: seeded random weights
 *     covering every supported tensor type, GQA (2:1 and 4:1), tied and
 *     separate output, linear rope scaling (new and old key), Llama 3.1
 *     rope_freqs, qwen2 biases, qwen3 Q/K norms and head_dim != E/H.
 *     Whole logit rows at every position.
 *   - SmolLM2-135M-Instruct Q4_1: 4 ChatML prompts; at every position the
 *     reference top-1 and top-64 logits, whole rows at two positions.
 * Each prompt runs as one batch, in caller-made pieces through a small
 * n_batch (so chunks continue a non-empty KV cache), and token by token
 * (the decode path). Checked: top-1 at every position, and max |Δlogit|
 * over every stored logit within a tolerance (see TOL_* below).
 *
 * Also: the loader's errors (missing / renamed / mis-shaped tensor,
 * unsupported type, unknown architecture, bad hyperparameters) and
 * pt_llm_forward's argument errors (token id out of range, context full).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gguf.h"
#include "llm.h"
#include "logits_fixture.h"

/*
 * Tolerances. Both sides compute in float32 from identical weights; only
 * the summation order differs (8-lane blocked dot products and double
 * accumulators in norms/softmax here, BLAS kernels in torch), so a dot
 * product of length K differs by roughly sqrt(K) * 2^-24 of the size of
 * its terms, and layers carry that forward.
 *   Tiny models (2-3 layers, K <= 256, |logit| up to ~50): measured max
 *   |dlogit| 2.1e-6 of the largest |logit| of the model's fixture; the
 *   bound is 2e-5 of it (10x margin).
 *   SmolLM2 (30 layers, K up to 1536, |logit| up to ~39): measured max
 *   |dlogit| 6.3e-5 over every stored logit; the bound is 5e-4 (8x).
 * Batch, pieces and one-by-one runs give bitwise-equal logits with the
 * reference kernels (pt_matmul_ref sums each row in the same order for
 * any number of tokens), so they share the bound. A real bug (a wrong
 * rope pair, a missing bias, a wrong norm) moves logits by 0.1 to 10.
 */
#define TOL_TINY_REL 2e-5
#define TOL_SMOLLM2 5e-4

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- comparing against a reference -------------------------------------- */

/* Compare logits [n_tok][V] of prompt p with the reference: top-1 at every
 * position (with the reference gap shown on a mismatch) and max |Δ| over
 * the stored top-k and whole rows. Returns max |Δ|. */
static double compare(const lf_logits *f, const lf_prompt *p, const float *logits, double tol,
                      const char *what) {
    const int V = f->n_vocab;
    double maxd = 0.0;
    int top1_bad = 0;
    for (int t = 0; t < p->n_tok; t++) {
        const float *row = logits + (size_t)t * V;
        float gap;
        int top = lf_argmax(row, V, &gap);
        /* a reference near-tie would make top-1 a coin toss: the fixture
         * generators pick prompts without them */
        CHECK(p->gap[t] > 2 * tol, "%s: position %d: reference top-1/top-2 gap %.3g is within 2 x tol",
              what, t, p->gap[t]);
        if (top != p->top1[t]) {
            top1_bad++;
            fprintf(stderr, "%s: position %d: top-1 %d (gap %.5f), reference %d (gap %.5f)\n", what, t,
                    top, gap, p->top1[t], p->gap[t]);
        }
        for (int j = 0; j < f->top_k; j++) {
            const size_t i = (size_t)t * f->top_k + j;
            double d = fabs((double)row[p->top_ids[i]] - p->top_vals[i]);
            if (!(d <= maxd)) maxd = d; /* NaN sticks */
        }
    }
    for (int j = 0; j < p->n_full; j++) {
        const float *row = logits + (size_t)p->full_pos[j] * V, *ref = p->full + (size_t)j * V;
        for (int i = 0; i < V; i++) {
            double d = fabs((double)row[i] - ref[i]);
            if (!(d <= maxd)) maxd = d;
        }
    }
    CHECK(top1_bad == 0, "%s: top-1 differs at %d of %d positions", what, top1_bad, p->n_tok);
    CHECK(maxd <= tol, "%s: max |dlogit| %.3g exceeds %.3g", what, maxd, tol);
    return maxd;
}

/* How the tokens of a prompt are fed. */
typedef enum feed { FEED_BATCH, FEED_PIECES, FEED_ONE_BY_ONE } feed;
static const char *const feed_name[] = {"batch", "pieces", "one-by-one"};

/* Run prompt p from an empty state and return logits [n_tok][V]
 * (malloc'd), or NULL on an error (counted as a failure). */
static float *run_prompt(const pt_llm *m, const lf_prompt *p, feed how, int n_ctx) {
    const pt_llm_hparams *hp = pt_llm_get_hparams(m);
    const size_t V = (size_t)hp->n_vocab;
    const int n = p->n_tok;
    /* FEED_PIECES: n_batch 4 and pieces of 1, 2, 3, ... tokens, so pieces
     * of more than 4 are split again inside pt_llm_forward. */
    const int n_batch = how == FEED_PIECES ? 4 : n_ctx;
    pt_llm_state *s = NULL;
    pt_error err = {0};
    pt_status st = pt_llm_state_new(m, n_ctx, n_batch, 1, &s, &err);
    CHECK(st == PT_OK, "state: %s", err.msg);
    if (st) return NULL;
    float *out = malloc((size_t)n * V * sizeof(float));
    float *last = malloc(V * sizeof(float));
    if (how == FEED_BATCH) {
        st = pt_llm_forward(m, s, (const pt_token *)p->tokens, n, last, out, &err);
        CHECK(st == PT_OK, "forward: %s", err.msg);
        CHECK(memcmp(last, out + (size_t)(n - 1) * V, V * sizeof(float)) == 0,
              "last_logits differs from the last row of all_logits");
    } else {
        int i = 0, piece = 1;
        while (st == PT_OK && i < n) {
            int k = how == FEED_ONE_BY_ONE ? 1 : (piece <= n - i ? piece : n - i);
            /* One by one reads last_logits only (the decode path); pieces
             * read both. */
            float *rows = how == FEED_PIECES ? out + (size_t)i * V : NULL;
            st = pt_llm_forward(m, s, (const pt_token *)p->tokens + i, k, last, rows, &err);
            CHECK(st == PT_OK, "forward: %s", err.msg);
            if (rows)
                CHECK(memcmp(last, rows + (size_t)(k - 1) * V, V * sizeof(float)) == 0,
                      "last_logits differs from the last row of all_logits");
            else
                memcpy(out + (size_t)i * V, last, V * sizeof(float));
            i += k;
            piece++;
            CHECK(pt_llm_state_n_past(s) == i, "n_past %d after %d tokens", pt_llm_state_n_past(s), i);
        }
    }
    free(last);
    pt_llm_state_free(s);
    if (st) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---- models ------------------------------------------------------------- */

typedef struct tiny_case {
    const char *gguf, *logits;
    const char *arch;
    int n_vocab, n_layer, n_head, n_head_kv, head_dim, n_ff;
    bool neox, tied;
    float rope_base, freq_scale;
} tiny_case;

static const tiny_case TINY[] = {
    {"tiny_llama.gguf", "tiny_llama.logits", "llama", 320, 3, 4, 2, 16, 160, false, false, 50000.0f, 1.0f},
    {"tiny_llama_rs.gguf", "tiny_llama_rs.logits", "llama", 288, 2, 4, 1, 16, 128, false, true, 20000.0f, 0.5f},
    {"tiny_llama_rs_oldkey.gguf", "tiny_llama_rs.logits", "llama", 288, 2, 4, 1, 16, 128, false, true, 20000.0f, 0.5f},
    {"tiny_llama3.gguf", "tiny_llama3.logits", "llama", 272, 2, 4, 2, 16, 96, false, true, 500000.0f, 1.0f},
    {"tiny_qwen2.gguf", "tiny_qwen2.logits", "qwen2", 384, 2, 4, 2, 16, 256, true, false, 1e6f, 1.0f},
    {"tiny_qwen3.gguf", "tiny_qwen3.logits", "qwen3", 352, 3, 4, 2, 32, 256, true, true, 1e6f, 1.0f},
};

static void test_tiny(const tiny_case *c) {
    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(test_data(c->gguf), &g, &err);
    CHECK(st == PT_OK, "%s: %s", c->gguf, err.msg);
    if (st) return;
    st = pt_llm_load(g, &m, &err);
    CHECK(st == PT_OK, "%s: %s", c->gguf, err.msg);
    if (st) {
        pt_gguf_close(g);
        return;
    }
    const pt_llm_hparams *hp = pt_llm_get_hparams(m);
    CHECK(strcmp(hp->arch_name, c->arch) == 0, "%s: arch %s", c->gguf, hp->arch_name);
    CHECK(hp->n_vocab == c->n_vocab && hp->n_layer == c->n_layer && hp->n_head == c->n_head &&
              hp->n_head_kv == c->n_head_kv && hp->head_dim == c->head_dim && hp->n_ff == c->n_ff &&
              hp->n_embd == 64 && hp->n_rot == c->head_dim,
          "%s: hparams V %d L %d H %d Hkv %d D %d F %d", c->gguf, hp->n_vocab, hp->n_layer,
          hp->n_head, hp->n_head_kv, hp->head_dim, hp->n_ff);
    CHECK(hp->rope_neox == c->neox && hp->tied_output == c->tied, "%s: neox %d tied %d", c->gguf,
          hp->rope_neox, hp->tied_output);
    CHECK(hp->rope_base == c->rope_base && hp->rope_freq_scale == c->freq_scale,
          "%s: rope base %g scale %g", c->gguf, hp->rope_base, hp->rope_freq_scale);

    lf_logits f;
    lf_logits_load(test_data(c->logits), &f);
    CHECK(f.n_vocab == hp->n_vocab, "%s: fixture vocab %d", c->logits, f.n_vocab);
    double scale = 1.0;
    for (int i = 0; i < f.n_prompts; i++)
        for (size_t j = 0; j < (size_t)f.prompts[i].n_full * f.n_vocab; j++)
            scale = fmax(scale, fabs(f.prompts[i].full[j]));
    const double tol = TOL_TINY_REL * scale;
    for (int i = 0; i < f.n_prompts; i++) {
        const lf_prompt *p = &f.prompts[i];
        for (int how = FEED_BATCH; how <= FEED_ONE_BY_ONE; how++) {
            char what[160];
            snprintf(what, sizeof what, "%s prompt %d (%d tokens, %s)", c->gguf, i, p->n_tok, feed_name[how]);
            float *logits = run_prompt(m, p, (feed)how, 40);
            if (!logits) continue;
            double d = compare(&f, p, logits, tol, what);
            printf("%-52s max |dlogit| %.3g (%.2g of max |logit| %.1f)\n", what, d, d / scale, scale);
            free(logits);
        }
    }
    lf_logits_free(&f);
    pt_llm_free(m);
    pt_gguf_close(g);
}

static void test_smollm2(void) {
    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(test_smollm2_path(), &g, &err);
    CHECK(st == PT_OK, "smollm2: %s", err.msg);
    if (st) return;
    st = pt_llm_load(g, &m, &err);
    CHECK(st == PT_OK, "smollm2: %s", err.msg);
    if (st) {
        pt_gguf_close(g);
        return;
    }
    const pt_llm_hparams *hp = pt_llm_get_hparams(m);
    CHECK(hp->arch == PT_ARCH_LLAMA && hp->n_vocab == 49152 && hp->n_embd == 576 && hp->n_layer == 30 &&
              hp->n_head == 9 && hp->n_head_kv == 3 && hp->head_dim == 64 && hp->n_ff == 1536 &&
              hp->n_rot == 64 && hp->n_ctx_train == 8192 && !hp->rope_neox && hp->tied_output &&
              hp->rope_base == 100000.0f && hp->rope_freq_scale == 1.0f && fabsf(hp->norm_eps - 1e-5f) < 1e-9f,
          "smollm2 hparams");

    lf_logits f;
    lf_logits_load(test_data("smollm2.logits"), &f);
    CHECK(f.n_vocab == hp->n_vocab, "smollm2 fixture vocab %d", f.n_vocab);
    /* every prompt as one batch; the first also one by one, the second
     * also in pieces. Sanitizer builds: the first one by one and the
     * second in pieces only. */
    if (LF_SANITIZED) printf("sanitizer build: SmolLM2 prompt 0 one by one and prompt 1 in pieces only\n");
    for (int i = 0; i < f.n_prompts; i++) {
        const lf_prompt *p = &f.prompts[i];
        for (int how = FEED_BATCH; how <= FEED_ONE_BY_ONE; how++) {
            if ((how == FEED_ONE_BY_ONE && i != 0) || (how == FEED_PIECES && i != 1)) continue;
            if (LF_SANITIZED && how == FEED_BATCH) continue;
            char what[160];
            snprintf(what, sizeof what, "smollm2 prompt %d (%d tokens, %s)", i, p->n_tok, feed_name[how]);
            double t0 = now_s();
            float *logits = run_prompt(m, p, (feed)how, 64);
            double dt = now_s() - t0;
            if (!logits) continue;
            double d = compare(&f, p, logits, TOL_SMOLLM2, what);
            printf("%-52s max |dlogit| %.3g  (%.1f tokens/s)\n", what, d, p->n_tok / dt);
            free(logits);
        }
    }
    lf_logits_free(&f);
    pt_llm_free(m);
    pt_gguf_close(g);
}

/* ---- errors ------------------------------------------------------------- */

/* pt_llm_load on a file must fail with `code` and a message containing
 * `needle`. */
static void expect_load_error(const char *file, pt_status code, const char *needle) {
    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(test_data(file), &g, &err);
    CHECK(st == PT_OK, "%s: %s", file, err.msg);
    if (st) return;
    st = pt_llm_load(g, &m, &err);
    CHECK(st == code, "%s: status %s (%s), expected %s", file, pt_status_name(st), err.msg,
          pt_status_name(code));
    CHECK(m == NULL, "%s: model set on failure", file);
    CHECK(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", file, err.msg, needle);
    pt_llm_free(m);
    pt_gguf_close(g);
}

/* A GGUF v3 in memory with only metadata (no tensors): enough to reach
 * each hyperparameter check, which runs before any tensor lookup. */
typedef struct mini_gguf {
    unsigned char buf[4096];
    size_t len;
    uint64_t n_kv;
} mini_gguf;

static void mg_bytes(mini_gguf *b, const void *p, size_t n) {
    if (b->len + n > sizeof b->buf) abort();
    memcpy(b->buf + b->len, p, n);
    b->len += n;
}
static void mg_u32(mini_gguf *b, uint32_t v) { mg_bytes(b, &v, 4); }
static void mg_u64(mini_gguf *b, uint64_t v) { mg_bytes(b, &v, 8); }
static void mg_str(mini_gguf *b, const char *s) {
    mg_u64(b, strlen(s));
    mg_bytes(b, s, strlen(s));
}
static void mg_key_u32(mini_gguf *b, const char *k, uint32_t v) {
    mg_str(b, k), mg_u32(b, 4 /* UINT32 */), mg_u32(b, v), b->n_kv++;
}
static void mg_key_f32(mini_gguf *b, const char *k, float v) {
    mg_str(b, k), mg_u32(b, 6 /* FLOAT32 */), mg_bytes(b, &v, 4), b->n_kv++;
}
static void mg_key_str(mini_gguf *b, const char *k, const char *v) {
    mg_str(b, k), mg_u32(b, 8 /* STRING */), mg_str(b, v), b->n_kv++;
}

/* Hyperparameters of a small llama, with one key overridden or left out:
 * skip names a key to leave out; (okey, oval) an integer to override. */
static void make_llama_meta(mini_gguf *kvs, const char *skip, const char *okey, uint32_t oval) {
    static const struct { const char *k; uint32_t v; } ints[] = {
        {"llama.context_length", 128}, {"llama.embedding_length", 64}, {"llama.block_count", 2},
        {"llama.feed_forward_length", 128}, {"llama.attention.head_count", 4},
        {"llama.attention.head_count_kv", 2}, {"llama.vocab_size", 256},
    };
    memset(kvs, 0, sizeof *kvs);
    mg_key_str(kvs, "general.architecture", "llama");
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (skip && strcmp(skip, ints[i].k) == 0) continue;
        mg_key_u32(kvs, ints[i].k, okey && strcmp(okey, ints[i].k) == 0 ? oval : ints[i].v);
    }
    if (okey && !strstr("llama.context_length llama.embedding_length llama.block_count "
                        "llama.feed_forward_length llama.attention.head_count "
                        "llama.attention.head_count_kv llama.vocab_size", okey))
        mg_key_u32(kvs, okey, oval);
    if (!skip || strcmp(skip, "llama.attention.layer_norm_rms_epsilon") != 0)
        mg_key_f32(kvs, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
}

/* Wrap metadata into a whole GGUF and expect pt_llm_load to fail. */
static void expect_meta_error(mini_gguf *kvs, pt_status code, const char *needle) {
    mini_gguf file = {0};
    mg_bytes(&file, "GGUF", 4);
    mg_u32(&file, 3);
    mg_u64(&file, 0);       /* tensors */
    mg_u64(&file, kvs->n_kv);
    mg_bytes(&file, kvs->buf, kvs->len);
    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open_memory(file.buf, file.len, &g, &err);
    CHECK(st == PT_OK, "mini gguf: %s", err.msg);
    if (st) return;
    st = pt_llm_load(g, &m, &err);
    CHECK(st == code && strstr(err.msg, needle) != NULL,
          "expected %s with '%s', got %s: '%s'", pt_status_name(code), needle, pt_status_name(st), err.msg);
    pt_llm_free(m);
    pt_gguf_close(g);
}

static void test_load_errors(void) {
    expect_load_error("tiny_llama_rs_missing.gguf", PT_ERR_FORMAT, "missing tensor 'blk.1.attn_k.weight'");
    expect_load_error("tiny_llama_rs_renamed.gguf", PT_ERR_FORMAT, "missing tensor 'blk.1.ffn_up.weight'");
    expect_load_error("tiny_llama_rs_badshape.gguf", PT_ERR_FORMAT,
                      "tensor 'blk.0.attn_v.weight' has shape [64, 8], expected [64, 16]");
    expect_load_error("tiny_llama_rs_badarch.gguf", PT_ERR_UNSUPPORTED, "unknown architecture 'foo'");
    expect_load_error("tiny_qwen2_iq2xs.gguf", PT_ERR_UNSUPPORTED,
                      "tensor 'blk.1.ffn_down.weight' has unsupported type IQ2_XS");

    mini_gguf kvs;
    /* the metadata alone passes every hyperparameter check and stops at
     * the first tensor */
    make_llama_meta(&kvs, NULL, NULL, 0);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "missing tensor 'token_embd.weight'");
    make_llama_meta(&kvs, "llama.embedding_length", NULL, 0);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "missing key 'llama.embedding_length'");
    make_llama_meta(&kvs, "llama.attention.layer_norm_rms_epsilon", NULL, 0);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "layer_norm_rms_epsilon");
    make_llama_meta(&kvs, NULL, "llama.attention.head_count_kv", 3);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "head_count (4) is not a multiple of head_count_kv (3)");
    make_llama_meta(&kvs, NULL, "llama.block_count", 0);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "key 'llama.block_count' is 0");
    make_llama_meta(&kvs, NULL, "llama.embedding_length", 0x80000000u);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "key 'llama.embedding_length' is 2147483648");
    make_llama_meta(&kvs, NULL, "llama.attention.head_count", 6);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "embedding_length (64) is not a multiple of head_count (6)");
    make_llama_meta(&kvs, NULL, "llama.rope.dimension_count", 80);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "key 'llama.rope.dimension_count' is 80");
    make_llama_meta(&kvs, NULL, "llama.attention.value_length", 8);
    expect_meta_error(&kvs, PT_ERR_UNSUPPORTED, "value_length (8) differs from key_length (16)");
    make_llama_meta(&kvs, NULL, NULL, 0);
    mg_key_str(&kvs, "llama.rope.scaling.type", "yarn");
    expect_meta_error(&kvs, PT_ERR_UNSUPPORTED, "rope scaling type 'yarn'");
    make_llama_meta(&kvs, NULL, NULL, 0);
    mg_key_f32(&kvs, "llama.rope.freq_base", -1.0f);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "key 'llama.rope.freq_base' is -1");
    make_llama_meta(&kvs, NULL, NULL, 0);
    mg_key_u32(&kvs, "llama.rope.freq_base", 10000);
    expect_meta_error(&kvs, PT_ERR_FORMAT, "key 'llama.rope.freq_base' has type");
}

static void test_forward_errors(void) {
    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_llm_state *s = NULL;
    pt_error err = {0};
    if (pt_gguf_open(test_data("tiny_qwen3.gguf"), &g, &err) || pt_llm_load(g, &m, &err)) {
        CHECK(0, "tiny_qwen3: %s", err.msg);
        pt_gguf_close(g);
        return;
    }
    const int V = pt_llm_get_hparams(m)->n_vocab;
    CHECK(pt_llm_state_new(m, 0, 4, 1, &s, &err) == PT_ERR_ARG && s == NULL, "n_ctx 0 accepted");
    CHECK(pt_llm_state_new(m, 8, 0, 1, &s, &err) == PT_ERR_ARG && s == NULL, "n_batch 0 accepted");
    pt_status st = pt_llm_state_new(m, 8, 4, 1, &s, &err);
    CHECK(st == PT_OK, "state: %s", err.msg);
    if (st) goto done;

    float *logits = malloc((size_t)V * sizeof(float));
    pt_token toks[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    pt_token bad_hi[2] = {5, (pt_token)V}, bad_neg[1] = {-1};
    st = pt_llm_forward(m, s, bad_hi, 2, logits, NULL, &err);
    CHECK(st == PT_ERR_ARG && strstr(err.msg, "outside the vocabulary"), "token %d: %s (%s)", V,
          pt_status_name(st), err.msg);
    st = pt_llm_forward(m, s, bad_neg, 1, logits, NULL, &err);
    CHECK(st == PT_ERR_ARG, "token -1: %s", pt_status_name(st));
    CHECK(pt_llm_state_n_past(s) == 0, "n_past moved on a failed call: %d", pt_llm_state_n_past(s));

    st = pt_llm_forward(m, s, toks, 6, logits, NULL, &err);
    CHECK(st == PT_OK && pt_llm_state_n_past(s) == 6, "6 tokens: %s", err.msg);
    st = pt_llm_forward(m, s, toks, 3, logits, NULL, &err);
    CHECK(st == PT_ERR_CONTEXT_FULL, "9 tokens in a context of 8: %s", pt_status_name(st));
    CHECK(pt_llm_state_n_past(s) == 6, "n_past %d after a refused call", pt_llm_state_n_past(s));
    st = pt_llm_forward(m, s, toks, 2, logits, NULL, &err);
    CHECK(st == PT_OK && pt_llm_state_n_past(s) == 8, "filling the context: %s", err.msg);
    st = pt_llm_forward(m, s, toks, 1, logits, NULL, &err);
    CHECK(st == PT_ERR_CONTEXT_FULL, "token past a full context: %s", pt_status_name(st));
    pt_llm_state_reset(s);
    CHECK(pt_llm_state_n_past(s) == 0, "reset");
    st = pt_llm_forward(m, s, toks, 8, NULL, NULL, &err);
    CHECK(st == PT_OK && pt_llm_state_n_past(s) == 8, "8 tokens, no logits: %s", err.msg);
    free(logits);
done:
    pt_llm_state_free(s);
    pt_llm_free(m);
    pt_gguf_close(g);
}

int main(void) {
    for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++) test_tiny(&TINY[i]);
    test_load_errors();
    test_forward_errors();
    test_smollm2();
    return check_done("logits");
}
