/*
 * test_ui_session.c — the chat session's KV reuse (ui/session.c) on
 * SmolLM2 with greedy sampling: when the new prompt diverges from what the
 * cache holds (the last user message edited), the cache is cut to the
 * common prefix (pt_context_truncate) and only the rest is prefilled; the
 * reply is the one a fresh session gives; the same prompt again prefills
 * one token.
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
    return check_done("ui_session");
}
