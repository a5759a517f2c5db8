/* utf8.c — strict UTF-8 decoding and the streaming detokenizer (pt_utf8_stream). */
#include "utf8.h"

#include "petrel.h"

#include <stdio.h>
#include <string.h>

pt_utf8_result pt_utf8_scan(const unsigned char *s, size_t n, size_t *len, uint32_t *cp) {
    unsigned b0 = s[0];
    if (b0 < 0x80) {
        *len = 1;
        *cp = b0;
        return PT_UTF8_VALID;
    }
    /* Sequence length and the allowed range of the second byte (Table 3-7
     * of the Unicode standard); the narrowed ranges exclude overlongs
     * (E0, F0), surrogates (ED) and code points above U+10FFFF (F4). */
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    uint32_t c;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
        c = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        c = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        c = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        *len = 1; /* C0, C1, F5..FF and stray continuation bytes */
        return PT_UTF8_INVALID;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n) {
            *len = n;
            return PT_UTF8_INCOMPLETE;
        }
        unsigned b = s[i];
        if (b < lo || b > hi) {
            *len = i;
            return PT_UTF8_INVALID;
        }
        lo = 0x80, hi = 0xBF;
        c = (c << 6) | (b & 0x3F);
    }
    *len = need;
    *cp = c;
    return PT_UTF8_VALID;
}

size_t pt_utf8_char_len(const char *s, size_t n) {
    size_t len;
    uint32_t cp;
    pt_utf8_scan((const unsigned char *)s, n, &len, &cp);
    return len;
}

size_t pt_utf8_encode(uint32_t cp, char out[4]) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = PT_UTF8_REPLACEMENT;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool pt_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, len;
    uint32_t cp;
    while (i < n) {
        if (pt_utf8_scan(p + i, n - i, &len, &cp) != PT_UTF8_VALID) return false;
        i += len;
    }
    return true;
}

/* ---- streaming ---------------------------------------------------------- */

/* Invariant between calls: s->pending holds 0..3 bytes that form a
 * well-formed but incomplete prefix of one sequence (scan gives INCOMPLETE).
 * Every other byte has already been written out, as itself when part of a
 * well-formed sequence and as one U+FFFD per ill-formed maximal subpart.
 * Output is therefore at most 3 bytes per input byte (one stray byte gives
 * the 3-byte U+FFFD): 3 * (len + 3) for a push. */

static size_t put_replacement(char *out) {
    return pt_utf8_encode(PT_UTF8_REPLACEMENT, out);
}

/* Decode bytes[0..n) to out; an INCOMPLETE tail is stored in s->pending
 * (it is at most 3 bytes, so it fits). Returns bytes written. */
static size_t stream_run(pt_utf8_stream *s, const unsigned char *bytes, size_t n, char *out) {
    size_t i = 0, w = 0;
    while (i < n) {
        size_t len;
        uint32_t cp;
        pt_utf8_result r = pt_utf8_scan(bytes + i, n - i, &len, &cp);
        if (r == PT_UTF8_INCOMPLETE) {
            memcpy(s->pending, bytes + i, len);
            s->n_pending = (int)len;
            return w;
        }
        if (r == PT_UTF8_VALID) {
            memcpy(out + w, bytes + i, len);
            w += len;
        } else {
            w += put_replacement(out + w);
        }
        i += len;
    }
    return w;
}

size_t pt_utf8_stream_push(pt_utf8_stream *s, const char *bytes, size_t len, char *out) {
    const unsigned char *in = (const unsigned char *)bytes;
    size_t w = 0;
    if (s->n_pending < 0 || s->n_pending > 3) s->n_pending = 0; /* never trust a corrupt struct */
    if (s->n_pending > 0) {
        /* Resolve the held-back sequence first: join it with just enough
         * new bytes to complete it (at most 3 more), decode the sequences
         * that start inside the held-back part, then go on from wherever the
         * last of them ended inside the new bytes. */
        unsigned char joined[7];
        size_t np = (size_t)s->n_pending;
        size_t take = len < 4 - np ? len : 4 - np;
        memcpy(joined, s->pending, np);
        if (take) memcpy(joined + np, in, take);
        size_t jn = np + take, pos = 0;
        s->n_pending = 0;
        while (pos < np) {
            size_t l;
            uint32_t cp;
            pt_utf8_result r = pt_utf8_scan(joined + pos, jn - pos, &l, &cp);
            if (r == PT_UTF8_INCOMPLETE) {
                /* Only possible when the new bytes ran out (take == len):
                 * everything is consumed and the tail stays pending. */
                memmove(s->pending, joined + pos, l);
                s->n_pending = (int)l;
                return w;
            }
            if (r == PT_UTF8_VALID) {
                memcpy(out + w, joined + pos, l);
                w += l;
            } else {
                w += put_replacement(out + w);
            }
            pos += l;
        }
        if (pos > np) {
            in += pos - np;
            len -= pos - np;
        }
    }
    if (len == 0) return w;
    return w + stream_run(s, in, len, out + w);
}

size_t pt_utf8_stream_flush(pt_utf8_stream *s, char *out) {
    /* The pending bytes are one incomplete prefix: one maximal subpart. */
    size_t w = 0;
    if (s->n_pending > 0) w = put_replacement(out);
    s->n_pending = 0;
    return w;
}

size_t pt_escape_text(const char *s, size_t len, char *out, size_t cap) {
    if (!out || cap == 0) return 0;
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        size_t n;
        uint32_t cp = 0;
        pt_utf8_result r = pt_utf8_scan((const unsigned char *)s + i, len - i, &n, &cp);
        char piece[16];
        size_t m;
        if (r != PT_UTF8_VALID) {
            n = 1; /* escape ill-formed input one byte at a time */
            m = (size_t)snprintf(piece, sizeof piece, "\\x%02X", (unsigned char)s[i]);
        } else if (cp == '\n') {
            m = (size_t)snprintf(piece, sizeof piece, "\\n");
        } else if (cp == '\t') {
            m = (size_t)snprintf(piece, sizeof piece, "\\t");
        } else if (cp == '\r') {
            m = (size_t)snprintf(piece, sizeof piece, "\\r");
        } else if (cp == 0x1B) {
            m = (size_t)snprintf(piece, sizeof piece, "\\e");
        } else if (cp < 0x20 || cp == 0x7F) {
            m = (size_t)snprintf(piece, sizeof piece, "\\x%02X", (unsigned)cp);
        } else if (cp >= 0x80 && cp <= 0x9F) {
            m = (size_t)snprintf(piece, sizeof piece, "\\u{%02X}", (unsigned)cp);
        } else {
            memcpy(piece, s + i, n);
            m = n;
        }
        if (w + m + 1 > cap) break;
        memcpy(out + w, piece, m);
        w += m;
        i += n;
    }
    out[w] = 0;
    return w;
}
