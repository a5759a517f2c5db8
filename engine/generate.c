/*
 * generate.c — prefill a prompt, then sample and stream tokens.
 *
 * State machine of one pt_generate call:
 *   PREFILL  prompt fed in n_batch chunks (cancel checked between chunks)
 *   SAMPLE   pick a token from the current logits
 *   EMIT     end-of-generation token -> stop (not emitted); else its bytes
 *            go through the UTF-8 stream to on_text
 *   DECODE   the token is fed back; loop to SAMPLE
 * Stops on EOG, n_predict, a full out_tokens, a full context, on_text
 * returning false, the cancel flag, or a decode error. Whatever stop, the
 * UTF-8 tail is flushed to on_text. A cancel during PREFILL is no stop: it
 * undoes the prefill and returns PT_ERR_CANCELLED.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_internal.h"
#include "status.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool cancelled(const pt_generate_params *p) {
    return p->cancel && atomic_load_explicit(p->cancel, memory_order_relaxed);
}

/* Put the context back as it was before a cancelled prefill: n_past, and
 * the logits (saved_logits NULL: none were saved because the first chunk
 * had not run yet, so nothing changed). */
static void undo_prefill(pt_context *ctx, int n_past0, bool had_logits, const float *saved_logits) {
    pt_llm_state_truncate(ctx->state, n_past0); /* n_past0 <= n_past: prefill only adds */
    if (!saved_logits) return;
    size_t n_vocab = (size_t)pt_llm_get_hparams(ctx->model->llm)->n_vocab;
    memcpy(ctx->logits, saved_logits, n_vocab * sizeof *ctx->logits);
    ctx->have_logits = had_logits;
}

/* PREFILL: the prompt in n_batch chunks, the cancel flag read before each.
 * On cancel or error the context is restored (see pt_generate). */
static pt_status prefill(pt_context *ctx, const pt_token *prompt, int n_prompt,
                         const pt_generate_params *params, pt_generate_stats *st, pt_error *err) {
    if (cancelled(params)) {
        st->stop = PT_STOP_CANCELLED;
        return pt_fail(err, PT_ERR_CANCELLED, "cancelled before the prompt was read");
    }
    const int n_past0 = pt_context_n_past(ctx);
    const bool had_logits = ctx->have_logits;
    float *saved = NULL; /* the logits before the call: only a multi-chunk prefill can be undone */
    if (n_prompt > ctx->n_batch) {
        size_t bytes = (size_t)pt_llm_get_hparams(ctx->model->llm)->n_vocab * sizeof *saved;
        saved = malloc(bytes);
        if (!saved) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the prefill");
        memcpy(saved, ctx->logits, bytes);
    }
    pt_status status = PT_OK;
    for (int i = 0; i < n_prompt; i += ctx->n_batch) {
        if (i > 0 && cancelled(params)) {
            undo_prefill(ctx, n_past0, had_logits, saved);
            st->n_prompt = 0;
            st->stop = PT_STOP_CANCELLED;
            status = pt_fail(err, PT_ERR_CANCELLED, "cancelled while reading the prompt");
            break;
        }
        int n = n_prompt - i < ctx->n_batch ? n_prompt - i : ctx->n_batch;
        status = pt_decode(ctx, prompt + i, n, NULL, err);
        if (status != PT_OK) {
            st->stop = PT_STOP_ERROR;
            break;
        }
        st->n_prompt += n;
        ctx->counters.n_prefilled += (uint64_t)n;
    }
    free(saved);
    return status;
}

/* Largest piece we decode in one go; longer pieces are cut (none exist in
 * real vocabularies, which stay under a few hundred bytes). */
#define PT_PIECE_MAX 512

pt_status pt_generate(pt_context *ctx, pt_sampler *sampler, const pt_token *prompt,
                      int n_prompt, const pt_generate_params *params, pt_token *out_tokens,
                      pt_generate_stats *stats, pt_error *err) {
    pt_generate_stats st = {0};
    pt_status status = PT_OK;
    const pt_model *m = ctx->model;
    if (n_prompt <= 0 && !ctx->have_logits)
        return pt_fail(err, PT_ERR_ARG, "nothing to generate from: empty prompt and empty context");
    if (pt_context_n_past(ctx) + n_prompt > ctx->n_ctx)
        return pt_fail(err, PT_ERR_CONTEXT_FULL,
                       "prompt of %d tokens does not fit: %d of %d context tokens already used",
                       n_prompt, pt_context_n_past(ctx), ctx->n_ctx);

    /* out_tokens' room: never written past */
    const int out_cap = params->out_cap > 0 ? params->out_cap : params->n_predict;
    if (out_tokens && out_cap <= 0)
        return pt_fail(err, PT_ERR_ARG, "out_tokens given without a size: set out_cap or n_predict > 0");

    /* PREFILL */
    double t0 = now_seconds();
    status = prefill(ctx, prompt, n_prompt, params, &st, err);
    if (status != PT_OK) goto done;
    for (int i = 0; i < n_prompt; i++) pt_sampler_accept(sampler, prompt[i]);
    st.prefill_seconds = now_seconds() - t0;

    pt_utf8_stream utf8 = {0};
    char piece[PT_PIECE_MAX];
    char text[PT_UTF8_STREAM_OUT(PT_PIECE_MAX)];
    int n_decoded = 0;
    double t1 = now_seconds();
    for (;;) {
        if (params->n_predict > 0 && st.n_generated >= params->n_predict) {
            st.stop = PT_STOP_LENGTH;
            break;
        }
        if (cancelled(params)) {
            st.stop = PT_STOP_CANCELLED;
            break;
        }
        /* SAMPLE */
        pt_token tok = pt_sampler_sample(sampler, ctx->logits);
        pt_sampler_accept(sampler, tok);
        if (pt_token_is_eog(m, tok)) {
            st.stop = PT_STOP_EOG;
            break;
        }
        if (out_tokens && st.n_generated >= out_cap) {
            st.stop = PT_STOP_OUT_FULL;
            break;
        }
        if (out_tokens) out_tokens[st.n_generated] = tok;
        st.n_generated++;
        /* EMIT */
        size_t n = pt_token_to_bytes(m, tok, params->render_special, piece, sizeof piece);
        if (n > sizeof piece) n = sizeof piece;
        size_t n_text = pt_utf8_stream_push(&utf8, piece, n, text);
        if (n_text && params->on_text && !params->on_text(text, n_text, params->user)) {
            st.stop = PT_STOP_CALLBACK;
            break;
        }
        /* DECODE (unless this was the last token we will need) */
        if (params->n_predict > 0 && st.n_generated >= params->n_predict) continue;
        if (pt_context_n_past(ctx) >= ctx->n_ctx) {
            st.stop = PT_STOP_CONTEXT;
            break;
        }
        status = pt_decode(ctx, &tok, 1, NULL, err);
        if (status != PT_OK) {
            st.stop = PT_STOP_ERROR;
            break;
        }
        n_decoded++;
    }
    st.decode_seconds = now_seconds() - t1;
    size_t n_tail = pt_utf8_stream_flush(&utf8, text);
    if (n_tail && params->on_text) params->on_text(text, n_tail, params->user);
    if (n_decoded > 0 && st.decode_seconds > 0) st.decode_tps = n_decoded / st.decode_seconds;

done:
    if (st.n_prompt > 0 && st.prefill_seconds > 0) st.prefill_tps = st.n_prompt / st.prefill_seconds;
    if (stats) *stats = st;
    return status;
}
