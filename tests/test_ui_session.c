/*
 * test_ui_session.c — ui/session.c: with penalties on (repeat, presence,
 * frequency; temperature > 0 and a seed) a warm turn, whose prompt mostly
 * comes from the KV cache, samples exactly the tokens a cold turn (fresh
 * session, everything prefilled) samples for the same conversation: the
 * penalty window holds the whole token history either way.
 */
#include "check.h"
#include "../ui/session.c"

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

static bool open_session(pt_session *s) {
    pt_error err = {0};
    memset(s, 0, sizeof *s);
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 2;
    pt_status st = pt_session_open(s, test_smollm2_path(), &cp, NULL, NULL, &err);
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
    if (!open_session(&warm) || !open_session(&cold)) return;
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
    test_warm_equals_cold();
    return check_done("ui_session");
}
