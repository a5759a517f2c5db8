/*
 * session.h — one loaded model with its context and sampler, and the
 * running of one chat turn. Used by the full-screen UI's worker thread and
 * by `petrel chat --plain` on the main thread; no terminal code.
 *
 * KV reuse: a turn renders the whole conversation with the chat template
 * and tokenizes it; the cache is cut (pt_context_truncate) to the longest
 * prefix the result shares with the tokens it holds (pt_context_tokens)
 * and only the rest is prefilled, so an edited or
 * regenerated turn, or a different system prompt's tail, costs only what
 * changed. When the conversation no longer fits (the context-full policy),
 * the oldest messages after the system prompt are dropped and what follows
 * the system prompt is read again.
 */
#ifndef PETREL_UI_SESSION_H
#define PETREL_UI_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>

#include "petrel.h"
#include "slash.h"

typedef struct pt_session {
    pt_model *model;
    pt_context *ctx;
    pt_sampler *sampler;
    pt_sampler_params sampler_params;  /* what sampler was built with */
    pt_model_info info;
    char path[4096];
    pt_token *toks;        /* the last turn's prompt and reply tokens; [0..n_toks)
                              are those in the KV cache (n_toks == n_past) */
    int n_toks, cap_toks;
} pt_session;

/* Live numbers while a turn runs, passed to the text callback. Times are
 * seconds since the turn started (pt_generate called). */
typedef struct pt_turn_live {
    int n_prompt;          /* tokens being prefilled (the new tail only) */
    int n_cached;          /* prompt tokens reused from the KV cache */
    int n_chunks;          /* text callbacks so far (one per token that completes text) */
    double t_first;        /* time of the first text, -1 before */
    double t_now;
} pt_turn_live;

/* Called once with text == NULL when the prompt is ready and prefill
 * starts (live.n_prompt and n_cached known), then with each chunk of the
 * reply. Returning false stops the reply. */
typedef bool (*pt_turn_text_cb)(const char *text, size_t len, const pt_turn_live *live, void *user);

typedef struct pt_turn_result {
    pt_generate_stats gen;   /* from the engine */
    double ttft;             /* seconds from the call to the first text; -1 if none */
    double wall;             /* seconds the whole turn took */
    int n_cached;            /* prompt tokens reused from the KV cache */
    int n_dropped_msgs;      /* messages dropped to fit the context */
    char *reply;             /* malloc'd reply text (possibly partial) */
} pt_turn_result;

/* mp, cp: model and context parameters (NULL: the defaults); a thread
 * pool in them is shared, not owned (free it after closing the session). */
pt_status pt_session_open(pt_session *s, const char *path, const pt_model_params *mp,
                          const pt_context_params *cp, pt_error *err);
void pt_session_close(pt_session *s);
bool pt_session_is_open(const pt_session *s);
/* Forget the conversation in the KV cache. */
void pt_session_reset(pt_session *s);

/* Run one turn: the reply to msgs[0..n) (which must end with a user
 * message). Streams text through cb; cancel may be set from any thread.
 * A cancelled turn returns PT_OK with res->gen.stop == PT_STOP_CANCELLED
 * and the partial reply. */
pt_status pt_session_turn(pt_session *s, const pt_chat_message *msgs, int n,
                          const pt_chat_settings *set, pt_turn_text_cb cb, void *user,
                          atomic_bool *cancel, pt_turn_result *res, pt_error *err);

/* A chat's KV cache kept beside its saved JSON conversation: PATH.json
 * -> PATH.kv (".kv" appended to any other name). False when it does not
 * fit cap. */
bool pt_session_kv_path(const char *json_path, char *buf, size_t cap);
/* Save the context (tokens, logits, KV cache) to a session file, or
 * restore one (pt_context_save_session / pt_context_load_session): the
 * next turn then reuses whatever prefix of its prompt the file held. A
 * refused file leaves the session as it was. */
pt_status pt_session_save_kv(pt_session *s, const char *path, pt_error *err);
pt_status pt_session_load_kv(pt_session *s, const char *path, pt_error *err);

double pt_ui_now(void);   /* monotonic clock */

#endif
