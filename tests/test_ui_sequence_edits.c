/*
 * test_ui_sequence_edits.c — a chat's KV reuse measured by the engine
 * (pt_context_get_counters, pt_context_tokens) on SmolLM2, greedy:
 *   - the second turn prefills only the tokens the cache does not hold:
 *     the rendered prompt past its longest common prefix with
 *     pt_context_tokens (found here from the tokens, not from the
 *     session's own numbers), and that prefix covers the first turn's
 *     whole prompt;
 *   - regenerating the last reply (the same conversation again) prefills
 *     one token and gives the tokens of a fresh session;
 *   - editing the last user message prefills from the first token that
 *     differs, and the reply is a fresh session's;
 *   - at the engine level, pt_context_truncate then pt_generate gives
 *     the tokens a fresh context gives on the truncated text;
 *   - the context-full policy (below).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ui/session.h"
#include "check.h"

#define N_PREDICT 8

static pt_chat_settings greedy(void) {
    pt_chat_settings set = {.sampler = pt_sampler_default_params(), .n_predict = N_PREDICT};
    set.sampler.temperature = 0;
    return set;
}

static bool open_session(pt_session *s) {
    pt_error err = {0};
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 512;
    cp.n_threads = 2;
    pt_status st = pt_session_open(s, test_smollm2_path(), NULL, &cp, &err);
    CHECK(st == PT_OK, "open: %s", err.msg);
    return st == PT_OK;
}

/* Tokens of the prompt a turn on msgs[0..n) renders. */
static pt_token *prompt_tokens(pt_session *s, const pt_chat_message *msgs, int n, int *nt) {
    pt_token *t = NULL;
    pt_error err = {0};
    CHECK(pt_chat_tokenize(s->model, msgs, n, true, true, &t, nt, &err) == PT_OK, "tokenize: %s", err.msg);
    return t;
}

static int common_prefix(const pt_token *a, int na, const pt_token *b, int nb) {
    int i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

typedef struct turn_out {
    pt_turn_result res;
    uint64_t prefilled;   /* engine counter delta */
    int expect_prefill;   /* what the cache did not hold */
    int n_prompt;         /* tokens of the rendered prompt */
    pt_token gen[N_PREDICT];
    int n_gen;
} turn_out;

/* One turn; the prefill the engine should do is computed first, from
 * pt_context_tokens and the rendered prompt. */
static turn_out turn(pt_session *s, const pt_chat_message *msgs, int n) {
    turn_out o = {0};
    int nt = 0, nh = 0;
    pt_token *p = prompt_tokens(s, msgs, n, &nt);
    const pt_token *held = pt_context_tokens(s->ctx, &nh);
    int common = p ? common_prefix(held, nh, p, nt) : 0;
    if (common >= nt) common = nt - 1; /* the last prompt token is always decoded (its logits) */
    o.expect_prefill = nt - common;
    o.n_prompt = nt;
    free(p);
    pt_context_counters c0, c1;
    pt_context_get_counters(s->ctx, &c0);
    pt_chat_settings set = greedy();
    pt_error err = {0};
    CHECK(pt_session_turn(s, msgs, n, &set, NULL, NULL, NULL, &o.res, &err) == PT_OK, "turn: %s", err.msg);
    pt_context_get_counters(s->ctx, &c1);
    o.prefilled = c1.n_prefilled - c0.n_prefilled;
    o.n_gen = o.res.gen.n_generated < N_PREDICT ? o.res.gen.n_generated : N_PREDICT;
    memcpy(o.gen, s->toks + nt, sizeof(pt_token) * (size_t)o.n_gen);
    return o;
}

/* A fresh run: a second session, emptied (pt_session_reset) before each
 * turn, so it reads the whole prompt. */
static pt_session g_fresh;

static turn_out fresh_turn(const pt_chat_message *msgs, int n) {
    turn_out o = {0};
    if (!pt_session_is_open(&g_fresh) && !open_session(&g_fresh)) return o;
    pt_session_reset(&g_fresh);
    o = turn(&g_fresh, msgs, n);
    CHECK(o.prefilled == (uint64_t)o.n_prompt, "a fresh session prefilled %llu of %d",
          (unsigned long long)o.prefilled, o.n_prompt);
    return o;
}

static bool same_tokens(const turn_out *a, const turn_out *b) {
    return a->n_gen == b->n_gen && memcmp(a->gen, b->gen, sizeof(pt_token) * (size_t)a->n_gen) == 0;
}

static void test_chat(void) {
    pt_session s;
    if (!open_session(&s)) return;
    pt_chat_message msgs[4] = {{"system", "You are a terse assistant."},
                               {"user", "What is the capital of France?"},
                               {"assistant", NULL},
                               {"user", "And of Spain?"}};
    turn_out t1 = turn(&s, msgs, 2);
    CHECK(t1.prefilled == (uint64_t)t1.n_prompt, "turn 1 prefilled %llu of %d", (unsigned long long)t1.prefilled,
          t1.n_prompt);

    /* regenerate: the same conversation again */
    turn_out again = turn(&s, msgs, 2);
    CHECK(again.prefilled == 1 && again.expect_prefill == 1, "regenerate prefilled %llu tokens",
          (unsigned long long)again.prefilled);
    turn_out f1 = fresh_turn(msgs, 2);
    CHECK(same_tokens(&again, &t1) && same_tokens(&again, &f1), "regenerated reply differs from a fresh one");

    /* second turn: only what the cache lacks */
    msgs[2].content = t1.res.reply;
    turn_out t2 = turn(&s, msgs, 4);
    printf("  second turn: %d prompt tokens, %llu prefilled\n", t2.n_prompt, (unsigned long long)t2.prefilled);
    CHECK(t2.prefilled == (uint64_t)t2.expect_prefill, "second turn prefilled %llu, the cache lacked %d",
          (unsigned long long)t2.prefilled, t2.expect_prefill);
    CHECK(t2.n_prompt - t2.expect_prefill >= t1.n_prompt, "second turn reused %d tokens, turn 1's prompt was %d",
          t2.n_prompt - t2.expect_prefill, t1.n_prompt);
    turn_out f2 = fresh_turn(msgs, 4);
    CHECK(same_tokens(&t2, &f2), "second turn's reply differs from a fresh session's");

    /* edit the last user message: prefill from the first changed token */
    msgs[3].content = "And of Italy?";
    int na = 0, nb = 0;
    pt_token *before = prompt_tokens(&s, (pt_chat_message[]){msgs[0], msgs[1], msgs[2], {"user", "And of Spain?"}}, 4, &na);
    pt_token *after = prompt_tokens(&s, msgs, 4, &nb);
    const int first_diff = common_prefix(before, na, after, nb);
    free(before);
    free(after);
    turn_out t3 = turn(&s, msgs, 4);
    printf("  edited turn: %d prompt tokens, first change at %d, %llu prefilled\n", t3.n_prompt, first_diff,
           (unsigned long long)t3.prefilled);
    CHECK(t3.prefilled == (uint64_t)(nb - first_diff), "edit prefilled %llu, want %d from the change",
          (unsigned long long)t3.prefilled, nb - first_diff);
    turn_out f3 = fresh_turn(msgs, 4);
    CHECK(same_tokens(&t3, &f3), "edited turn's reply differs from a fresh session's");

    turn_out *all[] = {&t1, &again, &f1, &t2, &f2, &t3, &f3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->res.reply);
    pt_session_close(&s);
}

/* Engine level: truncate then generate == a fresh context on the cut text. */
static void test_truncate_generate(void) {
    pt_session s;
    if (!open_session(&s)) return;
    const char *text = "The quick brown fox jumps over the lazy dog and";
    pt_token t[64];
    int n = pt_tokenize(s.model, text, strlen(text), true, false, t, 64);
    pt_error err = {0};
    CHECK(n > 6 && n <= 64, "tokenize: %d tokens", n);
    if (n <= 6 || n > 64) return;
    pt_sampler_params sp = pt_sampler_default_params();
    sp.temperature = 0;
    pt_sampler *smp = pt_sampler_new(&sp, s.info.n_vocab);
    pt_generate_params gp = {.n_predict = 6};
    pt_generate_stats st;
    pt_token out1[6], out2[6];
    CHECK(pt_generate(s.ctx, smp, t, n, &gp, out1, &st, &err) == PT_OK, "generate: %s", err.msg);
    const int keep = n - 3;
    CHECK(pt_context_truncate(s.ctx, keep, &err) == PT_OK, "truncate: %s", err.msg);
    int nh = 0;
    const pt_token *held = pt_context_tokens(s.ctx, &nh);
    CHECK(nh == keep && memcmp(held, t, sizeof *t * (size_t)keep) == 0, "after the cut the context holds %d tokens", nh);
    pt_context_counters c0, c1;
    pt_context_get_counters(s.ctx, &c0);
    pt_sampler_reset(smp);
    pt_generate_stats st2;
    CHECK(pt_generate(s.ctx, smp, t + keep, 3, &gp, out2, &st2, &err) == PT_OK, "regenerate: %s", err.msg);
    pt_context_get_counters(s.ctx, &c1);
    CHECK(c1.n_prefilled - c0.n_prefilled == 3, "regenerate after the cut prefilled %llu",
          (unsigned long long)(c1.n_prefilled - c0.n_prefilled));
    CHECK(st.n_generated == st2.n_generated && memcmp(out1, out2, sizeof(pt_token) * (size_t)st.n_generated) == 0,
          "regenerated tokens differ from the first run");
    /* and a fresh context */
    pt_context *fresh = NULL;
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    CHECK(pt_context_new(s.model, &cp, &fresh, &err) == PT_OK, "context: %s", err.msg);
    pt_token out3[6];
    pt_generate_stats st3;
    pt_sampler_reset(smp);
    CHECK(pt_generate(fresh, smp, t, n, &gp, out3, &st3, &err) == PT_OK, "fresh: %s", err.msg);
    CHECK(st3.n_generated == st2.n_generated && memcmp(out3, out2, sizeof(pt_token) * (size_t)st3.n_generated) == 0,
          "tokens after truncate differ from a fresh run");
    pt_context_free(fresh);
    pt_sampler_free(smp);
    pt_session_close(&s);
}

/* The context-full policy: in a small window, once the conversation does
 * not fit, the oldest turns after the system prompt are dropped
 * (res.n_dropped_msgs of them) and the rest is read again: the prompt is
 * the system prompt and the messages after the dropped ones, the system
 * turn's tokens stay in the cache, and only the tokens past the prefix the
 * cache shares with that prompt are prefilled. */
static void test_context_full(void) {
    pt_session s;
    pt_error err = {0};
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 96;
    cp.n_threads = 2;
    if (pt_session_open(&s, test_smollm2_path(), NULL, &cp, &err) != PT_OK) {
        CHECK(0, "open: %s", err.msg);
        return;
    }
    enum { TURNS = 4 };
    pt_chat_message msgs[2 * TURNS + 1];
    char *replies[TURNS] = {0};
    msgs[0] = (pt_chat_message){"system", "You are a terse assistant."};
    int n_sys = 0;
    pt_token *sys = NULL; /* the system turn alone */
    CHECK(pt_chat_tokenize(s.model, msgs, 1, false, true, &sys, &n_sys, &err) == PT_OK, "tokenize: %s", err.msg);
    pt_token before[96];
    int dropped_turns = 0;
    for (int t = 0; t < TURNS; t++) {
        msgs[1 + 2 * t] = (pt_chat_message){"user", "Tell me one more fact about the moon, please."};
        const int n = 2 + 2 * t;
        int nb = 0;
        const pt_token *held = pt_context_tokens(s.ctx, &nb);
        memcpy(before, held, sizeof *held * (size_t)nb);
        turn_out o = turn(&s, msgs, n);
        replies[t] = o.res.reply;
        const int d = o.res.n_dropped_msgs;
        if (d > 0) {
            dropped_turns++;
            pt_chat_message kept[2 * TURNS + 1];
            kept[0] = msgs[0];
            for (int i = 1 + d; i < n; i++) kept[i - d] = msgs[i];
            int nk = 0;
            pt_token *p = prompt_tokens(&s, kept, n - d, &nk);
            int common = p ? common_prefix(before, nb, p, nk) : 0;
            if (common >= nk) common = nk - 1;
            CHECK(o.prefilled == (uint64_t)(nk - common), "turn %d dropped %d messages: prefilled %llu, want %d", t,
                  d, (unsigned long long)o.prefilled, nk - common);
            CHECK(common >= n_sys, "turn %d: the system turn (%d tokens) was read again (%d kept)", t, n_sys, common);
            CHECK(nk < 96, "turn %d: the prompt after the drop (%d tokens) does not fit", t, nk);
            int na = 0;
            const pt_token *after = pt_context_tokens(s.ctx, &na);
            CHECK(p && na >= nk && memcmp(after, p, sizeof *p * (size_t)nk) == 0,
                  "turn %d: the cache does not hold the prompt after the drop", t);
            free(p);
        } else {
            CHECK(o.prefilled == (uint64_t)o.expect_prefill, "turn %d prefilled %llu, the cache lacked %d", t,
                  (unsigned long long)o.prefilled, o.expect_prefill);
        }
        msgs[2 + 2 * t] = (pt_chat_message){"assistant", o.res.reply};
    }
    printf("  context full: turns dropped old messages %d times in 4\n", dropped_turns);
    CHECK(dropped_turns > 0, "four turns in 96 tokens dropped nothing: the test proves nothing");
    for (int t = 0; t < TURNS; t++) free(replies[t]);
    free(sys);
    pt_session_close(&s);
}

int main(void) {
    test_chat();
    test_context_full();
    pt_session_close(&g_fresh);
    test_truncate_generate();
    return check_done("ui_sequence_edits");
}
