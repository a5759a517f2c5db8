/* slash.c — chat settings and slash commands (see slash.h). */
#include "slash.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pt_chat_settings_default(pt_chat_settings *s) {
    s->sampler = pt_sampler_default_params();
    s->n_predict = 256;
}

const pt_slash_cmd pt_slash_cmds[] = {
    {"help", "?", PT_SLASH_HELP, "", "show commands and keys", false},
    {"reset", "clear", PT_SLASH_RESET, "", "start a new conversation (clears the KV cache)", false},
    {"system", NULL, PT_SLASH_SYSTEM, "[TEXT]", "show or set the system prompt (\"-\" clears it)", false},
    {"model", NULL, PT_SLASH_MODEL, "[NAME]", "switch model (no name: open the Models screen)", false},
    {"models", NULL, PT_SLASH_MODELS, "", "the Models screen (plain chat: list local models)", false},
    {"save", NULL, PT_SLASH_SAVE, "[NAME]", "save the conversation as JSON in the data directory, its KV cache beside it", false},
    {"load", NULL, PT_SLASH_LOAD, "NAME", "load a saved conversation (and its KV cache)", false},
    {"chats", NULL, PT_SLASH_CHATS, "", "list saved conversations", false},
    {"set", NULL, PT_SLASH_SET, "[NAME VALUE]", "show settings, or change one", false},
    {"stats", NULL, PT_SLASH_STATS, "", "throughput and memory of the last reply", false},
    {"retry", NULL, PT_SLASH_RETRY, "", "generate the last reply again (F8)", false},
    {"edit", NULL, PT_SLASH_EDIT, "[TEXT]", "edit the last message and send it again (F9; TEXT: replace it)", false},
    {"demo", NULL, PT_SLASH_DEMO, "", "toggle demo mode (scripted prompts, large gauges)", true},
    {"mouse", NULL, PT_SLASH_MOUSE, "[on|off]", "mouse wheel scrolling (off lets the terminal select text)", true},
    {"imagine", NULL, PT_SLASH_IMAGINE, "PROMPT", "draw a picture into the chat (studio settings)", true},
    {"studio", NULL, PT_SLASH_STUDIO, "", "open the image studio (F6 or ^X)", true},
    {"lora", NULL, PT_SLASH_LORA, "PATH [SCALE]", "LoRA adapter on, stacked (/lora -NAME: off, /lora off: all, /lora: list)", true},
    {"quit", "exit", PT_SLASH_QUIT, "", "leave petrel", false},
};
const int pt_slash_n_cmds = (int)(sizeof pt_slash_cmds / sizeof pt_slash_cmds[0]);

#define SET_OFF(field) offsetof(pt_chat_settings, field)
const pt_slash_setting pt_slash_settings[] = {
    {"temp", "temperature", "sampling temperature (0 = greedy)", 'f', SET_OFF(sampler.temperature), 0, 10},
    {"top_k", "topk", "keep the k most likely tokens (0 = off)", 'i', SET_OFF(sampler.top_k), 0, 1000000},
    {"top_p", "topp", "nucleus sampling mass (1 = off)", 'f', SET_OFF(sampler.top_p), 0, 1},
    {"min_p", "minp", "drop tokens below min_p x the best (0 = off)", 'f', SET_OFF(sampler.min_p), 0, 1},
    {"repeat", "repeat_penalty", "repetition penalty (1 = off)", 'f', SET_OFF(sampler.repeat_penalty), 0, 10},
    {"presence", "presence_penalty", "presence penalty (0 = off)", 'f', SET_OFF(sampler.presence_penalty), -10, 10},
    {"frequency", "frequency_penalty", "frequency penalty (0 = off)", 'f', SET_OFF(sampler.frequency_penalty), -10, 10},
    {"last_n", "penalty_last_n", "tokens the penalties look back over", 'i', SET_OFF(sampler.penalty_last_n), 0, 1000000},
    {"seed", NULL, "sampler seed", 'u', SET_OFF(sampler.seed), 0, 0},
    {"max", "n_predict", "max tokens per reply", 'i', SET_OFF(n_predict), 1, 1000000},
};
const int pt_slash_n_settings = (int)(sizeof pt_slash_settings / sizeof pt_slash_settings[0]);

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool word_eq(const char *w, size_t n, const char *name) {
    return name && strlen(name) == n && strncmp(w, name, n) == 0;
}

const pt_slash_setting *pt_slash_find_setting(const char *name, size_t len) {
    for (int i = 0; i < pt_slash_n_settings; i++)
        if (word_eq(name, len, pt_slash_settings[i].name) || word_eq(name, len, pt_slash_settings[i].alias))
            return &pt_slash_settings[i];
    return NULL;
}

const char *pt_slash_literal(const char *line) {
    return (line[0] == '/' && line[1] == '/') ? line + 1 : line;
}

bool pt_slash_parse(const char *line, pt_slash *out) {
    memset(out, 0, sizeof *out);
    while (is_blank(*line)) line++;
    if (line[0] != '/' || line[1] == '/') return false;
    const char *w = line + 1;
    size_t wn = 0;
    while (w[wn] && !is_blank(w[wn])) wn++;
    const char *a = w + wn;
    while (is_blank(*a)) a++;
    size_t an = strlen(a);
    while (an > 0 && is_blank(a[an - 1])) an--;
    out->name = w; out->name_len = wn;
    out->arg = a; out->arg_len = an;
    out->id = PT_SLASH_UNKNOWN;
    for (int i = 0; i < pt_slash_n_cmds; i++) {
        if (word_eq(w, wn, pt_slash_cmds[i].name) || word_eq(w, wn, pt_slash_cmds[i].alias)) {
            out->cmd = &pt_slash_cmds[i];
            out->id = pt_slash_cmds[i].id;
            return true;
        }
    }
    const pt_slash_setting *st = pt_slash_find_setting(w, wn);
    if (st) { out->id = PT_SLASH_SETTING; out->setting = st; }
    return true;
}

void pt_slash_setting_value(const pt_chat_settings *s, const pt_slash_setting *st,
                            char *buf, size_t cap) {
    const char *p = (const char *)s + st->offset;
    switch (st->type) {
    case 'f': { float v; memcpy(&v, p, sizeof v); snprintf(buf, cap, "%g", (double)v); break; }
    case 'i': { int v; memcpy(&v, p, sizeof v); snprintf(buf, cap, "%d", v); break; }
    default: { uint64_t v; memcpy(&v, p, sizeof v); snprintf(buf, cap, "%" PRIu64, v); break; }
    }
}

bool pt_slash_set(pt_chat_settings *s, const pt_slash_setting *st, const char *value,
                  size_t value_len, char *msg, size_t msg_cap) {
    char tmp[64];
    while (value_len > 0 && is_blank(*value)) { value++; value_len--; }
    while (value_len > 0 && is_blank(value[value_len - 1])) value_len--;
    if (value_len == 0) {
        char cur[48];
        pt_slash_setting_value(s, st, cur, sizeof cur);
        snprintf(msg, msg_cap, "%s = %s (%s)", st->name, cur, st->help);
        return true;
    }
    if (value_len >= sizeof tmp) {
        snprintf(msg, msg_cap, "%s: value too long", st->name);
        return false;
    }
    memcpy(tmp, value, value_len);
    tmp[value_len] = 0;
    char *end;
    errno = 0;
    char *p = (char *)s + st->offset;
    if (st->type == 'u') {
        if (tmp[0] == '-') goto bad;
        unsigned long long v = strtoull(tmp, &end, 10);
        if (errno || *end) goto bad;
        uint64_t u = v;
        memcpy(p, &u, sizeof u);
    } else {
        double v = strtod(tmp, &end);
        if (errno || *end || !isfinite(v)) goto bad;
        if (v < st->min || v > st->max) {
            snprintf(msg, msg_cap, "%s must be between %g and %g", st->name, st->min, st->max);
            return false;
        }
        if (st->type == 'i') {
            if (v != floor(v)) goto bad;
            int iv = (int)v;
            memcpy(p, &iv, sizeof iv);
        } else {
            float fv = (float)v;
            memcpy(p, &fv, sizeof fv);
        }
    }
    {
        char cur[48];
        pt_slash_setting_value(s, st, cur, sizeof cur);
        snprintf(msg, msg_cap, "%s = %s", st->name, cur);
    }
    return true;
bad:
    /* the value as typed, on one line: a control character (a newline
     * typed with Alt-Enter) shows as '?' */
    for (char *c = tmp; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    snprintf(msg, msg_cap, "%s: not a valid %s: \"%s\"", st->name,
             st->type == 'f' ? "number" : "whole number", tmp);
    return false;
}

bool pt_slash_lora_parse(const char *arg, size_t len, pt_lora_cmd *out, char *msg, size_t msg_cap) {
    memset(out, 0, sizeof *out);
    out->scale = 1.0f;
    while (len > 0 && is_blank(*arg)) { arg++; len--; }
    while (len > 0 && is_blank(arg[len - 1])) len--;
    if (len == 0) { out->op = PT_LORA_LIST; return true; }
    if (word_eq(arg, len, "off")) { out->op = PT_LORA_OFF_ALL; return true; }
    if (arg[0] == '-') {
        arg++; len--;
        while (len > 0 && is_blank(*arg)) { arg++; len--; }
        if (len == 0) { snprintf(msg, msg_cap, "/lora -NAME: which adapter? (/lora lists them)"); return false; }
        out->op = PT_LORA_OFF;
    } else {
        out->op = PT_LORA_ON;
        /* the last word: a scale when it is a number */
        size_t w = len;
        while (w > 0 && !is_blank(arg[w - 1])) w--;
        if (w > 0) {
            char num[64];
            size_t nl = len - w;
            if (nl < sizeof num) {
                memcpy(num, arg + w, nl);
                num[nl] = 0;
                char *end;
                errno = 0;
                double v = strtod(num, &end);
                if (end != num && !*end) {
                    if (errno || !isfinite(v) || v < -100 || v > 100) {
                        snprintf(msg, msg_cap, "/lora: the scale must be a number in [-100, 100], not %s", num);
                        return false;
                    }
                    out->scale = (float)v;
                    len = w;
                    while (len > 0 && is_blank(arg[len - 1])) len--;
                }
            }
        }
    }
    if (len >= sizeof out->target) { snprintf(msg, msg_cap, "/lora: the path is too long"); return false; }
    memcpy(out->target, arg, len);
    out->target[len] = 0;
    return true;
}

/* Append to a bounded buffer while counting the full length. */
typedef struct { char *buf; size_t cap, len; } strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->buf + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n;
}

size_t pt_slash_help(bool tui, char *buf, size_t cap) {
    strbuf b = {buf, cap, 0};
    if (cap) buf[0] = 0;
    for (int i = 0; i < pt_slash_n_cmds; i++) {
        const pt_slash_cmd *c = &pt_slash_cmds[i];
        if (c->tui_only && !tui) continue;
        char head[40];
        snprintf(head, sizeof head, "/%s%s%s", c->name, c->args[0] ? " " : "", c->args);
        sb_printf(&b, "  %-18s %s\n", head, c->help);
    }
    for (int i = 0; i < pt_slash_n_settings; i++) {
        const pt_slash_setting *st = &pt_slash_settings[i];
        char head[40];
        snprintf(head, sizeof head, "/%s %s", st->name, st->type == 'f' ? "X" : "N");
        sb_printf(&b, "  %-18s %s\n", head, st->help);
    }
    sb_printf(&b, "  %-18s %s\n", "//text", "send a message that starts with '/'");
    if (cap && b.len >= cap) buf[cap - 1] = 0;
    return b.len;
}

const char *pt_slash_complete(const char *prefix, size_t len, const char *after) {
    /* commands first, then settings, in table order */
    bool passed = after == NULL;
    for (int i = 0; i < pt_slash_n_cmds + pt_slash_n_settings; i++) {
        const char *name = i < pt_slash_n_cmds ? pt_slash_cmds[i].name
                                               : pt_slash_settings[i - pt_slash_n_cmds].name;
        if (!passed) { if (name == after) passed = true; continue; }
        if (strncmp(name, prefix, len) == 0) return name;
    }
    return NULL;
}
