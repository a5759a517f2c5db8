/*
 * fuzz_convo.c — the saved-chat reader (ui/convo.c): JSON text of a saved
 * conversation, read into a pt_convo and settings, then written back and
 * read again (what /save then /load would do).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convo.h"

static void read_back(const char *json) {
    pt_convo c;
    pt_convo_init(&c);
    pt_chat_settings s;
    pt_chat_settings_default(&s);
    char err[256];
    if (!pt_convo_from_json(&c, &s, json, err, sizeof err)) abort(); /* our own output must load */
    pt_convo_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json = malloc(size + 1);
    if (!json) return 0;
    memcpy(json, data, size);
    json[size] = '\0';
    pt_convo c;
    pt_convo_init(&c);
    pt_chat_settings s;
    pt_chat_settings_default(&s);
    char err[256];
    if (pt_convo_from_json(&c, &s, json, err, sizeof err)) {
        pt_chat_message msgs[64];
        pt_convo_engine_msgs(&c, msgs, 64);
        char *again = pt_convo_to_json(&c, &s, "fuzz.gguf");
        if (again) read_back(again);
        free(again);
    }
    pt_convo_free(&c);
    free(json);
    return 0;
}
