/*
 * reply.c — the probe's reply parser (reply.h says which replies). A
 * small state machine after ECMA-48's: ground, ESC, a CSI being
 * collected, a string (DCS, APC, OSC) being collected, and ESC inside a
 * string (ESC \ ends it; ESC and anything else aborts it and starts over).
 * Bytes outside a sequence are dropped, so typed keys cannot confuse it.
 */
#include <string.h>

#include "reply.h"

enum {
    ST_GROUND = 0,
    ST_ESC,     /* after ESC */
    ST_CSI,     /* after ESC [: parameter and intermediate bytes in seq */
    ST_DCS,     /* after ESC P: the string in seq */
    ST_APC,     /* after ESC _ */
    ST_OSC,     /* after ESC ] (collected only to be skipped whole) */
    ST_STR_ESC, /* ESC inside a string: its kind is in seq_kind below */
};

void pt_gfx_replies_init(pt_gfx_replies *r) {
    memset(r, 0, sizeof *r);
}

/* The numbers of a parameter string "a;b;c" (digits and ';' only, after
 * the private prefix): up to max of them, each clamped to 1e6; an empty
 * field is 0. Returns how many, or -1 when the string has other bytes. */
static int params(const char *s, size_t n, int *out, int max) {
    int count = 0;
    long v = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ';') {
            if (count < max) out[count] = (int)v;
            count++;
            v = 0;
        } else if (s[i] >= '0' && s[i] <= '9') {
            if (v < 1000000) v = v * 10 + (s[i] - '0');
            if (v > 1000000) v = 1000000;
        } else {
            return -1;
        }
    }
    return count < max ? count : max;
}

static void on_csi(pt_gfx_replies *r, char final) {
    const char *s = r->seq;
    size_t n = r->len;
    int v[32];
    if (final == 'c' && n >= 1 && s[0] == '?') {
        /* DA1: CSI ? 6x ; attributes c (ctlseqs "Send Device Attributes") */
        int k = params(s + 1, n - 1, v, 32);
        if (k < 0) return;
        r->da1 = true;
        for (int i = 1; i < k; i++)
            if (v[i] == 4) r->sixel = true;
    } else if (final == 'S' && n >= 1 && s[0] == '?') {
        /* XTSMGRAPHICS reply: CSI ? Pi ; Ps ; Pv S, Ps 0 = success */
        int k = params(s + 1, n - 1, v, 4);
        if (k < 3 || v[1] != 0) return;
        if (v[0] == 1 && v[2] > 0) r->sixel_colors = v[2];
        if (v[0] == 2 && k >= 4 && v[2] > 0 && v[3] > 0) {
            r->sixel_max_w = v[2];
            r->sixel_max_h = v[3];
        }
    } else if (final == 't') {
        /* CSI 6 ; h ; w t (cell, from CSI 16t), CSI 4 ; h ; w t (text area, CSI 14t) */
        int k = params(s, n, v, 3);
        if (k != 3 || v[1] <= 0 || v[2] <= 0) return;
        if (v[0] == 6) {
            r->cell_h = v[1];
            r->cell_w = v[2];
        } else if (v[0] == 4) {
            r->text_h = v[1];
            r->text_w = v[2];
        }
    }
}

static void on_dcs(pt_gfx_replies *r) {
    /* XTVERSION: DCS > | text ST */
    if (r->len < 2 || r->seq[0] != '>' || r->seq[1] != '|') return;
    size_t o = 0;
    for (size_t i = 2; i < r->len && o + 1 < sizeof r->version; i++) {
        unsigned char c = (unsigned char)r->seq[i];
        r->version[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    r->version[o] = '\0';
}

static void on_apc(pt_gfx_replies *r) {
    /* kitty: APC G i=31 ; OK ST, or ; ERRORCODE:message on failure */
    if (r->len < 1 || r->seq[0] != 'G') return;
    const char *semi = memchr(r->seq, ';', r->len);
    if (!semi) return;
    r->kitty_answered = true;
    size_t rest = r->len - (size_t)(semi + 1 - r->seq);
    r->kitty_ok = rest == 2 && !memcmp(semi + 1, "OK", 2);
}

/* The string of kind `kind` (ST_DCS / ST_APC / ST_OSC) ended. */
static void end_string(pt_gfx_replies *r, int kind) {
    if (!r->too_long) {
        if (kind == ST_DCS) on_dcs(r);
        else if (kind == ST_APC) on_apc(r);
    }
    r->state = ST_GROUND;
}

static void start(pt_gfx_replies *r, int state) {
    r->state = state;
    r->len = 0;
    r->too_long = false;
}

static void keep(pt_gfx_replies *r, char c) {
    if (r->len < sizeof r->seq) r->seq[r->len++] = c;
    else r->too_long = true;
}

/* The kind of string whose ESC we are after: kept in the top bits of
 * state so that ST_STR_ESC knows what it ends. */
#define STR_ESC_OF(kind) (ST_STR_ESC | ((kind) << 4))

bool pt_gfx_replies_feed(pt_gfx_replies *r, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)p[i];
    again:;
        const int state = r->state & 0xf, kind = r->state >> 4;
        switch (state) {
        case ST_GROUND:
            if (c == 0x1b) r->state = ST_ESC;
            break;
        case ST_ESC:
            if (c == '[') start(r, ST_CSI);
            else if (c == 'P') start(r, ST_DCS);
            else if (c == '_') start(r, ST_APC);
            else if (c == ']') start(r, ST_OSC);
            else if (c != 0x1b) r->state = ST_GROUND; /* ESC ESC: still after ESC */
            break;
        case ST_CSI:
            if (c >= 0x20 && c <= 0x3f) {
                keep(r, (char)c); /* parameter (0x30-0x3f) and intermediate (0x20-0x2f) bytes */
            } else if (c >= 0x40 && c <= 0x7e) {
                if (!r->too_long) on_csi(r, (char)c);
                r->state = ST_GROUND;
            } else if (c == 0x1b) {
                r->state = ST_ESC; /* the CSI was cut short: a new sequence */
            } else if (c >= 0x80) {
                r->state = ST_GROUND;
            } /* C0 controls inside a CSI are executed, not part of it: skip */
            break;
        case ST_DCS:
        case ST_APC:
        case ST_OSC:
            if (c == 0x1b) r->state = STR_ESC_OF(state);
            else if (c == 0x07 || c == 0x9c) end_string(r, state);
            else keep(r, (char)c);
            break;
        case ST_STR_ESC:
            if (c == '\\') {
                end_string(r, kind);
            } else {
                /* not ST: the string is abandoned, this ESC starts something
                 * new: c is looked at again as the byte after an ESC (which
                 * never comes back here, so this runs once per byte) */
                r->state = ST_ESC;
                goto again;
            }
            break;
        default:
            r->state = ST_GROUND;
        }
    }
    return r->da1;
}
