/*
 * test_generate.c — pt_generate's contract on tests/data/tiny_llama3.gguf:
 *   - out_tokens is never written past out_cap (n_predict <= 0 included),
 *     and out_tokens without any size is PT_ERR_ARG;
 *   - a failing decode returns its status with stop == PT_STOP_ERROR;
 *   - a cancel flag set before the prompt is read returns PT_ERR_CANCELLED
 *     and leaves the context (n_past, logits) as it was;
 *   - a cancel during decode is a normal stop (PT_OK, PT_STOP_CANCELLED).
 * Everything is single-threaded: the flag is set before the call or from
 * on_text, never raced.
 */
#include "check.h"
#include "petrel.h"

#include <stdatomic.h>

typedef struct fixture {
    pt_model *model;
    pt_context *ctx;
    pt_sampler *sampler;
    int n_vocab;
} fixture;

static bool fixture_open(fixture *f, int n_ctx, int n_batch) {
    pt_error err = {0};
    *f = (fixture){0};
    pt_status st = pt_model_load(test_data("tiny_llama3.gguf"), NULL, &f->model, &err);
    CHECK(st == PT_OK, "load: %s", err.msg);
    if (st) return false;
    pt_model_info info;
    pt_model_get_info(f->model, &info);
    f->n_vocab = info.n_vocab;
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_threads = 1;
    st = pt_context_new(f->model, &cp, &f->ctx, &err);
    CHECK(st == PT_OK, "context: %s", err.msg);
    pt_sampler_params sp = pt_sampler_default_params();
    sp.temperature = 0; /* greedy */
    f->sampler = pt_sampler_new(&sp, f->n_vocab);
    return st == PT_OK && f->sampler;
}

static void fixture_close(fixture *f) {
    pt_sampler_free(f->sampler);
    pt_context_free(f->ctx);
    pt_model_free(f->model);
}

static const pt_token PROMPT[12] = {5, 17, 42, 99, 3, 77, 120, 8, 64, 33, 200, 11};

/* n_predict 0 runs until EOG or a full context; out_cap bounds out_tokens. */
static void test_out_cap(void) {
    fixture f;
    if (!fixture_open(&f, 64, 16)) return;
    pt_error err = {0};
    pt_generate_stats stats;
    pt_token out[8];
    for (int i = 0; i < 8; i++) out[i] = -77;
    pt_generate_params gp = {.n_predict = 0};
    pt_status st = pt_generate(f.ctx, f.sampler, PROMPT, 4, &gp, out, &stats, &err);
    CHECK(st == PT_ERR_ARG && strstr(err.msg, "out_cap"), "no size: status %d [%s]", st, err.msg);
    CHECK(pt_context_n_past(f.ctx) == 0, "nothing ran: n_past %d", pt_context_n_past(f.ctx));

    gp.out_cap = 3;
    st = pt_generate(f.ctx, f.sampler, PROMPT, 4, &gp, out, &stats, &err);
    CHECK(st == PT_OK, "out_cap 3: %s", err.msg);
    /* the greedy run of this model does not end within 3 tokens */
    CHECK(stats.n_generated == 3 && stats.stop == PT_STOP_OUT_FULL, "n_generated %d, stop %d",
          stats.n_generated, stats.stop);
    for (int i = 3; i < 8; i++) CHECK(out[i] == -77, "out[%d] written past out_cap: %d", i, out[i]);
    fixture_close(&f);
}

/* A prompt token outside the vocabulary makes the prefill decode fail. */
static void test_decode_error(void) {
    fixture f;
    if (!fixture_open(&f, 64, 16)) return;
    pt_error err = {0};
    pt_generate_stats stats;
    pt_token bad[3] = {5, f.n_vocab, 7};
    pt_generate_params gp = {.n_predict = 4};
    pt_status st = pt_generate(f.ctx, f.sampler, bad, 3, &gp, NULL, &stats, &err);
    CHECK(st == PT_ERR_ARG, "bad token: status %d [%s]", st, err.msg);
    CHECK(stats.stop == PT_STOP_ERROR, "bad token: stop %d, want PT_STOP_ERROR", stats.stop);
    CHECK(stats.n_generated == 0, "bad token: generated %d", stats.n_generated);
    fixture_close(&f);
}

/* The flag set before the call: PT_ERR_CANCELLED, context untouched. */
static void test_cancel_prefill(void) {
    fixture f;
    if (!fixture_open(&f, 64, 4)) return;
    pt_error err = {0};
    pt_status st = pt_decode(f.ctx, PROMPT, 5, NULL, &err);
    CHECK(st == PT_OK, "warm-up decode: %s", err.msg);
    float *before = malloc((size_t)f.n_vocab * sizeof *before);
    memcpy(before, pt_context_logits(f.ctx), (size_t)f.n_vocab * sizeof *before);

    atomic_bool cancel = true;
    pt_generate_params gp = {.n_predict = 4, .cancel = &cancel};
    pt_generate_stats stats;
    st = pt_generate(f.ctx, f.sampler, PROMPT + 5, 7, &gp, NULL, &stats, &err);
    CHECK(st == PT_ERR_CANCELLED && strstr(err.msg, "cancelled"), "cancel in prefill: status %d [%s]",
          st, err.msg);
    CHECK(stats.stop == PT_STOP_CANCELLED && stats.n_prompt == 0, "stats: stop %d, n_prompt %d",
          stats.stop, stats.n_prompt);
    CHECK(pt_context_n_past(f.ctx) == 5, "n_past %d after a cancelled prefill, want 5",
          pt_context_n_past(f.ctx));
    const float *after = pt_context_logits(f.ctx);
    CHECK(after && memcmp(before, after, (size_t)f.n_vocab * sizeof *before) == 0,
          "logits changed by a cancelled prefill");
    free(before);
    fixture_close(&f);
}

static bool cancel_on_first_text(const char *text, size_t len, void *user) {
    (void)text;
    (void)len;
    atomic_store((atomic_bool *)user, true);
    return true;
}

/* The flag set from on_text during decode: a normal stop. */
static void test_cancel_decode(void) {
    fixture f;
    if (!fixture_open(&f, 64, 16)) return;
    pt_error err = {0};
    atomic_bool cancel = false;
    pt_generate_params gp = {.n_predict = 20, .cancel = &cancel, .on_text = cancel_on_first_text,
                             .user = &cancel, .render_special = true};
    pt_generate_stats stats;
    pt_status st = pt_generate(f.ctx, f.sampler, PROMPT, 12, &gp, NULL, &stats, &err);
    CHECK(st == PT_OK, "cancel in decode: status %d [%s]", st, err.msg);
    CHECK(stats.stop == PT_STOP_CANCELLED && stats.n_generated == 1,
          "cancel in decode: stop %d after %d tokens", stats.stop, stats.n_generated);
    CHECK(stats.n_prompt == 12, "n_prompt %d", stats.n_prompt);
    fixture_close(&f);
}

int main(void) {
    test_decode_error();
    test_cancel_prefill();
    test_cancel_decode();
    test_out_cap(); /* last: without its fix it overruns out and crashes */
    return check_done("generate");
}
