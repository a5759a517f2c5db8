/*
 * test_seams.c — the API seams of petrel.h on SmolLM2:
 *   - pt_model_params / pt_context_params: the size field (an older,
 *     shorter struct is read with defaults for the rest; a larger one is
 *     refused), a backend and a KV type that do not exist, a negative
 *     KV budget;
 *   - a metadata-only load repacks nothing, describes the model exactly as
 *     a full load does, tokenizes the same, and cannot make a context;
 *   - pt_context_truncate: cut, then decode again, gives bitwise the
 *     logits of a fresh context fed the same tokens;
 *   - one pt_threadpool shared by the load and two contexts (also driven
 *     from two threads at once) gives the logits of private pools.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "petrel.h"

#define N_TOK 40 /* tokens of the test sequences */

/* A fixed token sequence: ids spread over the vocabulary, varied by seed. */
static void fill_tokens(pt_token *t, int n, int seed) {
    for (int i = 0; i < n; i++) t[i] = (pt_token)(100 + (37 * i + 101 * seed) % 20000);
}

static pt_context *new_ctx(pt_model *m, pt_threadpool *pool, int n_threads) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 16;
    cp.n_threads = n_threads;
    cp.threadpool = pool;
    pt_context *c = NULL;
    pt_error err = {0};
    CHECK(pt_context_new(m, &cp, &c, &err) == PT_OK, "context: %s", err.msg);
    return c;
}

/* Logits after every one of tokens[0..n), decoded in one call. */
static float *decode_all(pt_context *c, const pt_token *tokens, int n, int n_vocab) {
    float *all = malloc(sizeof(float) * (size_t)n * (size_t)n_vocab);
    pt_error err = {0};
    if (!c || !all || pt_decode(c, tokens, n, all, &err) != PT_OK) {
        CHECK(0, "decode: %s", err.msg);
        free(all);
        return NULL;
    }
    return all;
}

static bool same_floats(const float *a, const float *b, size_t n) {
    return a && b && memcmp(a, b, n * sizeof(float)) == 0;
}

static void test_params_size(const char *path) {
    pt_model *m = NULL;
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    CHECK(mp.size == sizeof mp && mp.backend == PT_BACKEND_CPU && !mp.cpu && !mp.threadpool,
          "model defaults");
    mp.size = sizeof mp + 8;
    CHECK(pt_model_load(path, &mp, &m, &err) == PT_ERR_ARG && !m && strstr(err.msg, "size"),
          "a newer, larger pt_model_params is refused: %s", err.msg);
    mp = pt_model_default_params();
    CHECK(mp.device_layers < 0 && !mp.device_cache && !mp.device_required, "device defaults: all layers");
    mp.backend = (pt_backend)2; /* 0 CPU, 1 OpenCL */
    CHECK(pt_model_load(path, &mp, &m, &err) == PT_ERR_UNSUPPORTED && !m, "backend 2: %s", err.msg);
    mp = pt_model_default_params();
    mp.cpu = "no-such-cpu";
    CHECK(pt_model_load(path, &mp, &m, &err) == PT_ERR_UNSUPPORTED && strstr(err.msg, "no-such-cpu"),
          "bad cpu name: %s", err.msg);

    /* an older caller: the struct up to progress_user, the rest unknown to
     * it (garbage here) must come from the defaults */
    _Alignas(pt_model_params) unsigned char old[sizeof(pt_model_params)];
    memset(old, 0xA5, sizeof old);
    mp = pt_model_default_params();
    mp.size = offsetof(pt_model_params, metadata_only);
    memcpy(old, &mp, mp.size);
    CHECK(pt_model_load(path, (const pt_model_params *)old, &m, &err) == PT_OK, "older params: %s",
          err.msg);
    if (!m) return;
    pt_model_info info;
    pt_model_get_info(m, &info);
    CHECK(info.n_repacked > 0 || strcmp(info.kernels, "ref") == 0,
          "older params: metadata_only taken from past the size");

    pt_context_params cp = pt_context_default_params();
    CHECK(cp.size == sizeof cp && cp.kv_type == PT_KV_F32 && !cp.threadpool, "context defaults");
    pt_context *c = NULL;
    cp.kv_type = (pt_kv_type)(PT_KV_Q8F8 + 1); /* past the last type */
    CHECK(pt_context_new(m, &cp, &c, &err) == PT_ERR_UNSUPPORTED && !c, "kv type past q8f8: %s", err.msg);
    cp.kv_type = PT_KV_F32;
    cp.kv_ram_mb = -1;
    CHECK(pt_context_new(m, &cp, &c, &err) == PT_ERR_ARG && !c, "negative KV budget: %s", err.msg);
    cp = pt_context_default_params();
    cp.size = sizeof cp + 1;
    CHECK(pt_context_new(m, &cp, &c, &err) == PT_ERR_ARG && !c, "larger context params: %s", err.msg);
    _Alignas(pt_context_params) unsigned char old_cp[sizeof(pt_context_params)];
    memset(old_cp, 0xA5, sizeof old_cp);
    cp = pt_context_default_params();
    cp.n_ctx = 64;
    cp.size = offsetof(pt_context_params, kv_type);
    memcpy(old_cp, &cp, cp.size);
    CHECK(pt_context_new(m, (const pt_context_params *)old_cp, &c, &err) == PT_OK &&
              pt_context_n_ctx(c) == 64,
          "older context params: %s", err.msg);
    pt_context_free(c);
    pt_model_free(m);
}

static void test_metadata_only(const char *path) {
    pt_model *full = NULL, *meta = NULL;
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    CHECK(pt_model_load(path, &mp, &full, &err) == PT_OK, "full load: %s", err.msg);
    mp.metadata_only = true;
    CHECK(pt_model_load(path, &mp, &meta, &err) == PT_OK, "metadata-only load: %s", err.msg);
    if (!full || !meta) goto out;
    pt_model_info a, b;
    pt_model_get_info(full, &a);
    pt_model_get_info(meta, &b);
    CHECK(b.n_repacked == 0 && b.repacked_bytes == 0, "metadata only repacked %d matrices", b.n_repacked);
    CHECK(strcmp(a.kernels, "ref") == 0 || a.n_repacked > 0, "the full load repacked nothing");
    CHECK(!strcmp(a.arch, b.arch) && !strcmp(a.name, b.name) && !strcmp(a.ftype, b.ftype) &&
              !strcmp(a.tokenizer, b.tokenizer) && !strcmp(a.chat_template_kind, b.chat_template_kind),
          "names differ: %s/%s %s/%s", a.arch, b.arch, a.name, b.name);
    CHECK(a.n_vocab == b.n_vocab && a.n_ctx_train == b.n_ctx_train && a.n_embd == b.n_embd &&
              a.n_layer == b.n_layer && a.n_head == b.n_head && a.n_head_kv == b.n_head_kv &&
              a.n_ff == b.n_ff && a.head_dim == b.head_dim && a.rope_base == b.rope_base,
          "hyperparameters differ");
    CHECK(a.n_params == b.n_params && a.file_bytes == b.file_bytes && a.weight_bytes == b.weight_bytes,
          "sizes differ");
    const char *text = "Hello, world! <|im_start|>user";
    pt_token ta[64], tb[64];
    const int na = pt_tokenize(full, text, strlen(text), true, true, ta, 64);
    const int nb = pt_tokenize(meta, text, strlen(text), true, true, tb, 64);
    CHECK(na > 0 && na == nb && memcmp(ta, tb, sizeof *ta * (size_t)na) == 0, "tokens differ");
    char ka[128], va[256], kb[128], vb[256];
    CHECK(pt_model_meta(meta, 0, kb, sizeof kb, vb, sizeof vb, 4) &&
              pt_model_meta(full, 0, ka, sizeof ka, va, sizeof va, 4) && !strcmp(ka, kb) && !strcmp(va, vb),
          "metadata differs");
    pt_context *c = NULL;
    CHECK(pt_context_new(meta, NULL, &c, &err) == PT_ERR_ARG && !c && strstr(err.msg, "metadata"),
          "a context on a metadata-only model: %s", err.msg);
out:
    pt_model_free(meta);
    pt_model_free(full);
}

static void test_truncate(pt_model *m, int n_vocab) {
    pt_token a[N_TOK], b[N_TOK];
    fill_tokens(a, N_TOK, 1);
    fill_tokens(b, N_TOK, 2);
    const int keep = 17, n_new = 23;
    pt_error err = {0};

    /* cut a 40-token cache to 17, then 23 other tokens */
    pt_context *cut = new_ctx(m, NULL, 2);
    if (!cut) return;
    CHECK(pt_decode(cut, a, N_TOK, NULL, &err) == PT_OK, "decode: %s", err.msg);
    CHECK(pt_context_truncate(cut, N_TOK + 1, &err) == PT_ERR_ARG, "keeping more than n_past accepted");
    CHECK(pt_context_truncate(cut, -1, &err) == PT_ERR_ARG, "keeping -1 accepted");
    CHECK(pt_context_truncate(cut, N_TOK, &err) == PT_OK && pt_context_logits(cut) != NULL,
          "keeping everything drops the logits");
    CHECK(pt_context_truncate(cut, keep, &err) == PT_OK && pt_context_n_past(cut) == keep,
          "truncate: %s, n_past %d", err.msg, pt_context_n_past(cut));
    CHECK(pt_context_logits(cut) == NULL, "stale logits after a cut");
    float *got = decode_all(cut, b, n_new, n_vocab);

    /* a fresh context fed a[0..17) + b[0..23) */
    pt_token seq[N_TOK];
    memcpy(seq, a, sizeof *seq * (size_t)keep);
    memcpy(seq + keep, b, sizeof *seq * (size_t)n_new);
    pt_context *fresh = new_ctx(m, NULL, 2);
    float *want = fresh ? decode_all(fresh, seq, keep + n_new, n_vocab) : NULL;
    CHECK(got && want && same_floats(got, want + (size_t)keep * n_vocab, (size_t)n_new * n_vocab),
          "logits after truncate differ from a fresh context's");

    /* down to nothing, then the same tokens again */
    CHECK(pt_context_truncate(cut, 0, &err) == PT_OK && pt_context_n_past(cut) == 0, "truncate to 0");
    float *again = decode_all(cut, seq, keep + n_new, n_vocab);
    CHECK(same_floats(again, want, (size_t)(keep + n_new) * n_vocab), "logits after a cut to 0 differ");
    free(again);
    free(got);
    free(want);
    pt_context_free(fresh);
    pt_context_free(cut);
}

/* One context decoding seq on a thread, for the two-thread check. */
typedef struct decode_job {
    pt_context *ctx;
    const pt_token *seq;
    int n, n_vocab;
    float *out;
} decode_job;

static void *decode_thread(void *arg) {
    decode_job *j = arg;
    pt_error err = {0};
    if (pt_decode(j->ctx, j->seq, j->n, j->out, &err) != PT_OK) {
        free(j->out);
        j->out = NULL;
    }
    return NULL;
}

static void test_shared_pool(const char *path) {
    pt_threadpool *pool = NULL;
    pt_error err = {0};
    CHECK(pt_threadpool_new(3, &pool, &err) == PT_OK, "pool: %s", err.msg);
    pt_model *m = NULL;
    pt_model_params mp = pt_model_default_params();
    mp.threadpool = pool;
    CHECK(pool && pt_model_load(path, &mp, &m, &err) == PT_OK, "load on the shared pool: %s", err.msg);
    if (!m) {
        pt_threadpool_free(pool);
        return;
    }
    pt_model_info info;
    pt_model_get_info(m, &info);
    const int V = info.n_vocab;
    pt_token a[N_TOK], b[N_TOK];
    fill_tokens(a, N_TOK, 3);
    fill_tokens(b, N_TOK, 4);

    /* private pools of 1 and 3 threads: the reference */
    pt_context *pa = new_ctx(m, NULL, 1), *pb = new_ctx(m, NULL, 3);
    float *want_a = decode_all(pa, a, N_TOK, V), *want_b = decode_all(pb, b, N_TOK, V);

    /* two contexts on the shared pool, interleaved on this thread */
    pt_context *sa = new_ctx(m, pool, 0), *sb = new_ctx(m, pool, 0);
    float *got_a = decode_all(sa, a, N_TOK / 2, V);
    float *got_b = decode_all(sb, b, N_TOK, V);
    float *got_a2 = decode_all(sa, a + N_TOK / 2, N_TOK / 2, V);
    CHECK(same_floats(got_a, want_a, (size_t)(N_TOK / 2) * V) &&
              same_floats(got_a2, want_a + (size_t)(N_TOK / 2) * V, (size_t)(N_TOK / 2) * V),
          "context A on the shared pool differs from a private pool");
    CHECK(same_floats(got_b, want_b, (size_t)N_TOK * V), "context B on the shared pool differs");

    /* the same two contexts driven from two threads at once: they take
     * turns on the pool */
    pt_context_reset(sa);
    pt_context_reset(sb);
    decode_job ja = {sa, a, N_TOK, V, malloc(sizeof(float) * N_TOK * (size_t)V)};
    decode_job jb = {sb, b, N_TOK, V, malloc(sizeof(float) * N_TOK * (size_t)V)};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, decode_thread, &ja) == 0, "thread a");
    CHECK(pthread_create(&tb, NULL, decode_thread, &jb) == 0, "thread b");
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(same_floats(ja.out, want_a, (size_t)N_TOK * V) && same_floats(jb.out, want_b, (size_t)N_TOK * V),
          "contexts sharing a pool from two threads differ");

    free(ja.out);
    free(jb.out);
    free(got_a);
    free(got_a2);
    free(got_b);
    free(want_a);
    free(want_b);
    pt_context_free(sa);
    pt_context_free(sb);
    pt_context_free(pa);
    pt_context_free(pb);

    test_truncate(m, V);
    pt_model_free(m);
    pt_threadpool_free(pool); /* after every user */
}

int main(void) {
    const char *path = test_smollm2_path();
    test_params_size(path);
    test_metadata_only(path);
    test_shared_pool(path);
    return check_done("seams");
}
