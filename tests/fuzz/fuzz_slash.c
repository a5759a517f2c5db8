/*
 * fuzz_slash.c — the chat's slash command parsing (ui/slash.c): a typed
 * line (the input up to its first NUL) through pt_slash_parse, then what
 * the command's argument goes through: /lora's (pt_slash_lora_parse), a
 * setting's value (pt_slash_set) and Tab completion. Checks: a refused
 * argument has a one-line reason; a /lora scale is finite and within
 * [-100, 100] and its target a terminated string; a setting stays within
 * its bounds.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slash.h"

/* a reason: there, and on one line */
static void check_msg(const char *msg) {
    if (!msg[0] || strchr(msg, '\n')) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *line = malloc(size + 1);
    if (!line) return 0;
    memcpy(line, data, size);
    line[size] = 0;
    pt_slash c;
    if (pt_slash_parse(line, &c)) {
        char msg[512] = "";
        if (c.arg + c.arg_len > line + strlen(line)) abort();
        if (c.id == PT_SLASH_LORA) {
            pt_lora_cmd lc;
            if (pt_slash_lora_parse(c.arg, c.arg_len, &lc, msg, sizeof msg)) {
                if (!isfinite(lc.scale) || lc.scale < -100 || lc.scale > 100) abort();
                if (memchr(lc.target, 0, sizeof lc.target) == NULL) abort();
                if (lc.op == PT_LORA_ON && !lc.target[0]) abort();
                if (lc.op == PT_LORA_OFF && !lc.target[0]) abort();
            } else {
                check_msg(msg);
            }
        } else if (c.id == PT_SLASH_SETTING && c.setting) {
            pt_chat_settings s;
            pt_chat_settings_default(&s);
            bool ok = pt_slash_set(&s, c.setting, c.arg, c.arg_len, msg, sizeof msg);
            check_msg(msg);
            if (ok && c.setting->type != 'u') {
                char v[64];
                pt_slash_setting_value(&s, c.setting, v, sizeof v);
                double d = strtod(v, NULL);
                if (!(d >= c.setting->min && d <= c.setting->max)) abort();
            }
        }
        for (const char *h = pt_slash_complete(c.name, c.name_len, NULL); h;
             h = pt_slash_complete(c.name, c.name_len, h))
            if (strncmp(h, c.name, c.name_len) != 0) abort();
    }
    free(line);
    return 0;
}
