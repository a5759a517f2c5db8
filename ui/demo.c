/* demo.c — the scripted prompts of demo mode. Short questions with
 * answers of a few sentences keep prefill and decode both visible. */
#include "app.h"

static const char *const prompts[] = {
    "Explain what a petrel is in two sentences.",
    "Write a haiku about the sea at night.",
    "List three practical uses of a paperclip.",
    "Why is the sky blue? Answer briefly.",
    "Give a short recipe for a cup of tea.",
    "Describe a lighthouse to a child.",
    "What is the difference between weather and climate?",
    "Suggest a name for a small sailing boat, and say why.",
};

const char *pt_demo_prompt(int i) {
    int n = (int)(sizeof prompts / sizeof prompts[0]);
    return prompts[((i % n) + n) % n];
}
