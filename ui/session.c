/* session.c — model + context + sampler, and one chat turn (see session.h). */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double pt_ui_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pt_status err_set(pt_error *err, pt_status code, const char *msg) {
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}

bool pt_session_is_open(const pt_session *s) { return s->model && s->ctx; }

void pt_session_close(pt_session *s) {
    if (s->sampler) pt_sampler_free(s->sampler);
    if (s->ctx) pt_context_free(s->ctx);
    if (s->model) pt_model_free(s->model);
    free(s->toks);
    memset(s, 0, sizeof *s);
}

pt_status pt_session_open(pt_session *s, const char *path, const pt_model_params *mp,
                          const pt_context_params *cp, pt_error *err) {
    memset(s, 0, sizeof *s);
    pt_status st = pt_model_load(path, mp, &s->model, err);
    if (st != PT_OK) { s->model = NULL; return st; }
    st = pt_context_new(s->model, cp, &s->ctx, err);
    if (st != PT_OK) {
        pt_model_free(s->model);
        memset(s, 0, sizeof *s);
        return st;
    }
    pt_model_get_info(s->model, &s->info);
    snprintf(s->path, sizeof s->path, "%s", path);
    return PT_OK;
}

void pt_session_reset(pt_session *s) {
    if (s->ctx) pt_context_reset(s->ctx);
    s->n_toks = 0;
}

static bool toks_reserve(pt_session *s, int n) {
    if (n <= s->cap_toks) return true;
    int cap = s->cap_toks ? s->cap_toks : 1024;
    while (cap < n) cap *= 2;
    pt_token *t = realloc(s->toks, (size_t)cap * sizeof *t);
    if (!t) return false;
    s->toks = t;
    s->cap_toks = cap;
    return true;
}

bool pt_session_kv_path(const char *json_path, char *buf, size_t cap) {
    size_t n = strlen(json_path);
    if (n >= 5 && strcmp(json_path + n - 5, ".json") == 0) n -= 5;
    return snprintf(buf, cap, "%.*s.kv", (int)n, json_path) < (int)cap;
}

pt_status pt_session_save_kv(pt_session *s, const char *path, pt_error *err) {
    if (!pt_session_is_open(s)) return err_set(err, PT_ERR_ARG, "no model loaded");
    return pt_context_save_session(s->ctx, path, err);
}

pt_status pt_session_load_kv(pt_session *s, const char *path, pt_error *err) {
    if (!pt_session_is_open(s)) return err_set(err, PT_ERR_ARG, "no model loaded");
    pt_status st = pt_context_load_session(s->ctx, path, err);
    if (st != PT_OK) return st;
    int n = 0;
    const pt_token *held = pt_context_tokens(s->ctx, &n);
    if (!toks_reserve(s, n)) {
        pt_session_reset(s);
        return err_set(err, PT_ERR_NOMEM, "out of memory");
    }
    memcpy(s->toks, held, sizeof *held * (size_t)n);
    s->n_toks = n;
    return PT_OK;
}

/* Render and tokenize msgs[first..n) after the system prompt (msgs[0] when
 * has_system). Returns a malloc'd token array and its count in *n_out. */
static pt_token *render(pt_session *s, const pt_chat_message *msgs, int n, bool has_system,
                        int first, int *n_out, pt_error *err, pt_status *st) {
    pt_chat_message *sel = malloc(sizeof *sel * (size_t)(n + 1));
    if (!sel) { *st = err_set(err, PT_ERR_NOMEM, "out of memory"); return NULL; }
    int k = 0;
    if (has_system) sel[k++] = msgs[0];
    for (int i = first; i < n; i++) sel[k++] = msgs[i];
    /* Special tokens typed in a message stay text: no forged turns. The
     * engine also keeps a single BOS when the template spells one. */
    pt_token *toks = NULL;
    *st = pt_chat_tokenize(s->model, sel, k, true, true, &toks, n_out, err);
    free(sel);
    return *st == PT_OK ? toks : NULL;
}

typedef struct turn_cb_state {
    pt_turn_text_cb cb;
    void *user;
    pt_turn_live live;
    double t0;
    char *reply;
    size_t len, cap;
    bool oom;
} turn_cb_state;

static bool on_text(const char *text, size_t len, void *user) {
    turn_cb_state *t = user;
    double now = pt_ui_now() - t->t0;
    if (t->live.t_first < 0) t->live.t_first = now;
    t->live.t_now = now;
    t->live.n_chunks++;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + len + 1) cap *= 2;
        char *r = realloc(t->reply, cap);
        if (!r) { t->oom = true; return false; }
        t->reply = r;
        t->cap = cap;
    }
    memcpy(t->reply + t->len, text, len);
    t->len += len;
    t->reply[t->len] = 0;
    return t->cb ? t->cb(text, len, &t->live, t->user) : true;
}

pt_status pt_session_turn(pt_session *s, const pt_chat_message *msgs, int n,
                          const pt_chat_settings *set, pt_turn_text_cb cb, void *user,
                          atomic_bool *cancel, pt_turn_result *res, pt_error *err) {
    memset(res, 0, sizeof *res);
    res->ttft = -1;
    if (!pt_session_is_open(s)) return err_set(err, PT_ERR_ARG, "no model loaded");
    if (n < 1) return err_set(err, PT_ERR_ARG, "nothing to reply to");
    double t_start = pt_ui_now();
    int n_ctx = pt_context_n_ctx(s->ctx);
    bool has_system = strcmp(msgs[0].role, "system") == 0;
    int first = has_system ? 1 : 0;

    /* Room for the reply: at least a quarter of the context or n_predict,
     * whichever is smaller, must stay free after the prompt. */
    int want = set->n_predict < n_ctx / 4 ? set->n_predict : n_ctx / 4;
    if (want < 1) want = 1;
    pt_status st;
    int nt = 0;
    pt_token *toks = NULL;
    for (;;) {
        toks = render(s, msgs, n, has_system, first, &nt, err, &st);
        if (!toks) return st;
        if (nt + want <= n_ctx) break;
        /* drop the oldest exchange (keep the last message, the question) */
        free(toks);
        if (first >= n - 1)
            return err_set(err, PT_ERR_CONTEXT_FULL, "the message is too long for the context window");
        first++;
        while (first < n - 1 && strcmp(msgs[first].role, "user") != 0) first++;
        res->n_dropped_msgs = first - (has_system ? 1 : 0);
    }

    /* Reuse the longest prefix the cache shares with the new prompt: cut
     * the cache to it and prefill only the rest. The last prompt token is
     * always decoded again (its logits start the reply). */
    int common = 0, n_held = 0;
    const pt_token *held = pt_context_tokens(s->ctx, &n_held); /* the engine's record */
    while (common < n_held && common < nt && held[common] == toks[common]) common++;
    if (nt > 0 && common >= nt) common = nt - 1;
    if (common == 0 || pt_context_truncate(s->ctx, common, NULL) != PT_OK) {
        pt_session_reset(s);
        common = 0;
    }
    s->n_toks = common;
    int n_new = nt - common;
    int room = n_ctx - nt;
    int n_predict = set->n_predict < room ? set->n_predict : room;
    if (n_predict < 1) { free(toks); return err_set(err, PT_ERR_CONTEXT_FULL, "the context window is full"); }

    if (!toks_reserve(s, nt + n_predict)) { free(toks); return err_set(err, PT_ERR_NOMEM, "out of memory"); }
    /* the whole prompt (its first `common` tokens are the cache's); n_toks
     * follows once we know what the engine kept */
    memcpy(s->toks, toks, sizeof *toks * (size_t)nt);
    free(toks);

    if (!s->sampler || memcmp(&s->sampler_params, &set->sampler, sizeof set->sampler) != 0) {
        if (s->sampler) pt_sampler_free(s->sampler);
        s->sampler = pt_sampler_new(&set->sampler, s->info.n_vocab);
        s->sampler_params = set->sampler;
        if (!s->sampler) return err_set(err, PT_ERR_NOMEM, "cannot create the sampler");
    } else {
        pt_sampler_reset(s->sampler);
    }
    /* The penalty window sees the whole history: the cached prefix here,
     * the prefilled tail in pt_generate, so a warm turn samples as a cold
     * one would. */
    for (int i = 0; i < common; i++) pt_sampler_accept(s->sampler, s->toks[i]);

    turn_cb_state t = {.cb = cb, .user = user};
    t.live.n_prompt = n_new;
    t.live.n_cached = common;
    t.live.t_first = -1;
    pt_generate_params gp = {
        .n_predict = n_predict,
        .on_text = on_text,
        .user = &t,
        .cancel = cancel,
        .render_special = false,
    };
    t.t0 = pt_ui_now();
    if (cb) cb(NULL, 0, &t.live, user);
    st = pt_generate(s->ctx, s->sampler, s->toks + common, n_new, &gp,
                     s->toks + nt, &res->gen, err);
    double t_end = pt_ui_now();
    res->ttft = t.live.t_first >= 0 ? t.live.t_first : -1;
    res->wall = t_end - t_start;
    res->n_cached = common;
    if (st == PT_ERR_CANCELLED) {
        st = PT_OK;
        res->gen.stop = PT_STOP_CANCELLED;
    }
    if (t.oom && st == PT_OK) st = err_set(err, PT_ERR_NOMEM, "out of memory while streaming");
    res->reply = t.reply ? t.reply : strdup("");

    /* The cache now holds the prompt plus the generated tokens the engine
     * fed back (usually all but the last sampled one): s->toks[0..n_past)
     * is what pt_context_tokens says. */
    s->n_toks = pt_context_n_past(s->ctx);
    return st;
}
