/*
 * test_ui_session.c — the chat session's KV reuse (ui/session.c) on
 * SmolLM2 with greedy sampling: when the new prompt diverges from what the
 * cache holds (the last user message edited), the cache is cut to the
 * common prefix (pt_context_truncate) and only the rest is prefilled; the
 * reply is the one a fresh session gives; the same prompt again prefills
 * one token. And with penalties on (repeat, presence, frequency;
 * temperature > 0 and a seed) a warm turn samples exactly the tokens a
 * cold turn samples: the penalty window holds the whole token history
 * either way, whatever the KV cache reused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../ui/session.c"

static pt_session open_session(const char *path) {
    pt_session s;
    pt_error err = {0};
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 512;
    cp.n_threads = 2;
    CHECK(pt_session_open(&s, path, NULL, &cp, &err) == PT_OK, "open: %s", err.msg);
    return s;
}

/* One turn; returns the result (reply malloc'd). */
static pt_turn_result turn(pt_session *s, const pt_chat_message *msgs, int n) {
    pt_chat_settings set = {.sampler = pt_sampler_default_params(), .n_predict = 12};
    set.sampler.temperature = 0;
    pt_turn_result res;
    pt_error err = {0};
    CHECK(pt_session_turn(s, msgs, n, &set, NULL, NULL, NULL, &res, &err) == PT_OK, "turn: %s", err.msg);
    return res;
}

static pt_chat_settings penalty_settings(void) {
    pt_chat_settings set = {0};
    set.sampler = pt_sampler_default_params();
    set.sampler.temperature = 0.9f;
    set.sampler.top_k = 0;
    set.sampler.top_p = 1.0f;
    set.sampler.min_p = 0.0f;
    set.sampler.repeat_penalty = 1.5f;
    set.sampler.presence_penalty = 0.8f;
    set.sampler.frequency_penalty = 0.8f;
    set.sampler.penalty_last_n = 256;
    set.sampler.seed = 1234;
    set.n_predict = 12;
    return set;
}

static bool open_penalty_session(pt_session *s) {
    pt_error err = {0};
    memset(s, 0, sizeof *s);
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 2;
    pt_status st = pt_session_open(s, test_smollm2_path(), NULL, &cp, &err);
    CHECK(st == PT_OK, "open: %s", err.msg);
    return st == PT_OK;
}

/* Stop turn 1 at its first text: the KV cache then holds exactly the
 * rendered prompt, a prefix of turn 2's prompt, so turn 2 runs warm. */
static bool stop_at_first_text(const char *text, size_t len, const pt_turn_live *live, void *user) {
    (void)len;
    (void)live;
    (void)user;
    return text == NULL;
}

static void test_warm_equals_cold(void) {
    const pt_chat_settings set = penalty_settings();
    pt_session warm, cold;
    if (!open_penalty_session(&warm) || !open_penalty_session(&cold)) return;
    pt_error err = {0};
    pt_turn_result r1, r2w, r2c;

    pt_chat_message msgs[3] = {{"user", "hello there, how are you"}, {"assistant", NULL},
                               {"user", "tell me more about it"}};
    pt_status st = pt_session_turn(&warm, msgs, 1, &set, stop_at_first_text, NULL, NULL, &r1, &err);
    CHECK(st == PT_OK, "turn 1: %s", err.msg);
    msgs[1].content = r1.reply;

    st = pt_session_turn(&warm, msgs, 3, &set, NULL, NULL, NULL, &r2w, &err);
    CHECK(st == PT_OK, "warm turn 2: %s", err.msg);
    CHECK(r2w.n_cached > 0, "turn 2 reused no KV: the test would prove nothing");
    st = pt_session_turn(&cold, msgs, 3, &set, NULL, NULL, NULL, &r2c, &err);
    CHECK(st == PT_OK, "cold turn 2: %s", err.msg);
    CHECK(r2c.n_cached == 0, "cold turn reused %d tokens", r2c.n_cached);
    CHECK(r2w.gen.n_generated > 1, "warm turn generated %d tokens", r2w.gen.n_generated);

    int n = r2w.gen.n_generated;
    CHECK(n == r2c.gen.n_generated, "generated %d warm, %d cold", n, r2c.gen.n_generated);
    const int at_w = warm.n_toks - n + 1, at_c = cold.n_toks - n + 1; /* last token not fed back */
    CHECK(n == r2c.gen.n_generated && memcmp(warm.toks + at_w, cold.toks + at_c, (size_t)(n - 1) * sizeof(pt_token)) == 0,
          "warm and cold turns sampled different tokens");
    CHECK(strcmp(r2w.reply, r2c.reply) == 0, "warm reply [%s] != cold reply [%s]", r2w.reply, r2c.reply);
    free(r1.reply);
    free(r2w.reply);
    free(r2c.reply);
    pt_session_close(&warm);
    pt_session_close(&cold);
}

int main(void) {
    const char *path = test_smollm2_path();
    const pt_chat_message first[] = {{"system", "You are a terse assistant."}, {"user", "What is 2+2?"}};
    const pt_chat_message edited[] = {{"system", "You are a terse assistant."},
                                      {"user", "Name a colour of the sky."}};

    pt_session s = open_session(path);
    if (!pt_session_is_open(&s)) return check_done("ui_session");
    pt_turn_result r1 = turn(&s, first, 2);
    CHECK(r1.n_cached == 0 && r1.gen.n_prompt > 10, "first turn: %d cached, %d prefilled", r1.n_cached,
          r1.gen.n_prompt);

    /* the user message edited: system prompt and user header are reused */
    pt_turn_result r2 = turn(&s, edited, 2);
    const int n_prompt2 = r2.n_cached + r2.gen.n_prompt;
    printf("  edited turn: %d of %d prompt tokens reused, %d prefilled\n", r2.n_cached, n_prompt2,
           r2.gen.n_prompt);
    CHECK(r2.n_cached > 10 && r2.gen.n_prompt < n_prompt2 - 10,
          "edited turn: only %d tokens reused, %d prefilled", r2.n_cached, r2.gen.n_prompt);

    /* the same prompt again: everything but its last token is reused */
    pt_turn_result r3 = turn(&s, edited, 2);
    CHECK(r3.gen.n_prompt == 1 && r3.n_cached == n_prompt2 - 1, "repeated turn: %d cached, %d prefilled",
          r3.n_cached, r3.gen.n_prompt);

    /* a fresh session gives the same greedy reply to the edited prompt */
    pt_session f = open_session(path);
    if (pt_session_is_open(&f)) {
        pt_turn_result rf = turn(&f, edited, 2);
        CHECK(rf.n_cached == 0 && rf.gen.n_prompt == n_prompt2, "fresh: %d prefilled, want %d",
              rf.gen.n_prompt, n_prompt2);
        CHECK(r2.reply && rf.reply && !strcmp(r2.reply, rf.reply) && !strcmp(r3.reply, rf.reply),
              "reply after the cut '%s' differs from a fresh session's '%s'", r2.reply, rf.reply);
        free(rf.reply);
        pt_session_close(&f);
    }
    free(r1.reply);
    free(r2.reply);
    free(r3.reply);
    pt_session_close(&s);
    test_warm_equals_cold();
    return check_done("ui_session");
}
