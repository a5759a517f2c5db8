/*
 * generate.c — prefill a prompt, then sample and stream tokens.
 *
 * State machine of one pt_generate call:
 *   PREFILL  prompt fed in n_batch chunks (cancel checked between chunks)
 *   SAMPLE   pick a token from the current logits
 *   EMIT     end-of-generation token -> stop (not emitted); else its bytes
 *            go through the UTF-8 stream to on_text
 *   DECODE   the token is fed back; loop to SAMPLE
 * Stops on EOG, n_predict, a full context, on_text returning false, or the
 * cancel flag. Whatever stop, the UTF-8 tail is flushed to on_text.
 */
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

    /* PREFILL */
    double t0 = now_seconds();
    for (int i = 0; i < n_prompt; i += ctx->n_batch) {
        if (cancelled(params)) {
            st.stop = PT_STOP_CANCELLED;
            goto done;
        }
        int n = n_prompt - i < ctx->n_batch ? n_prompt - i : ctx->n_batch;
        status = pt_decode(ctx, prompt + i, n, NULL, err);
        if (status != PT_OK) goto done;
        st.n_prompt += n;
    }
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
        if (status != PT_OK) break;
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
