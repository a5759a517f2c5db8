/*
 * clip_text.c — CLIP's prompt cleanup (see clip_text.h for the steps),
 * transcribed from transformers 4.x tokenization_clip.py: BasicTokenizer
 * ._clean_text, ._tokenize_chinese_chars, unicodedata.normalize("NFC"),
 * whitespace_tokenize and str.lower(), with the Unicode tables of utf8proc.
 *
 * Buffers: the text is decoded once into an array of code points (at most
 * 3 per input byte after the CJK spacing), NFC goes through UTF-8 (that is
 * what utf8proc_map takes), and the output is at most 3 UTF-8 bytes per
 * input byte of the NFC text (U+0130, 2 bytes, lower-cases to 3), plus one.
 */
#include "clip_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* BasicTokenizer._is_chinese_char */
static bool is_cjk(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* _is_control: a C* category, TAB/LF/CR excepted (utf8proc reports an
 * unassigned code point as Cn, as Python does). */
static bool is_control(int32_t cp) {
    if (cp == '\t' || cp == '\n' || cp == '\r') return false;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF ||
           c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CO;
}

/* _is_whitespace */
static bool is_ws(int32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
           utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS;
}

/* What str.split() still splits on once the cleanup has run: every other
 * Python whitespace character is C* (removed) or Zs (now a space). */
static bool is_split(int32_t cp) { return cp == ' ' || cp == 0x2028 || cp == 0x2029; }

/* Python's _PyUnicode_IsCased: Lowercase, Uppercase or Lt. Approximated
 * by the categories Lu, Ll, Lt (the Other_Lowercase/Other_Uppercase
 * extras, e.g. U+00AA, only matter next to a capital sigma). */
static bool is_cased(int32_t cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

/* Python's _PyUnicode_IsCaseIgnorable: Mn, Me, Cf, Lm, Sk, or Word_Break
 * MidLetter / MidNumLet / Single_Quote (listed). */
static bool is_case_ignorable(int32_t cp) {
    switch (cp) {
    case 0x27: case 0x2E: case 0x3A: case 0xB7: case 0x387: case 0x55F: case 0x5F4:
    case 0x2018: case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52:
    case 0xFE55: case 0xFF07: case 0xFF0E: case 0xFF1A:
        return true;
    default:
        break;
    }
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_ME || c == UTF8PROC_CATEGORY_CF ||
           c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_SK;
}

/* CPython's handle_capital_sigma: U+03A3 at w[i] of the word w[0..n)
 * lower-cases to final U+03C2 when a cased letter precedes it and none
 * follows (case-ignorable characters skipped both ways). */
static int32_t lower_sigma(const int32_t *w, size_t n, size_t i) {
    size_t j = i;
    while (j > 0 && is_case_ignorable(w[j - 1])) j--;
    if (j == 0 || !is_cased(w[j - 1])) return 0x3C3;
    size_t k = i + 1;
    while (k < n && is_case_ignorable(w[k])) k++;
    return (k == n || !is_cased(w[k])) ? 0x3C2 : 0x3C3;
}

/* Decode, clean and space out CJK: cp[] gets the code points, returns
 * their count. cp must hold 3 * len entries. */
static size_t decode_clean(const uint8_t *s, size_t len, int32_t *cp) {
    size_t n = 0, i = 0;
    while (i < len) {
        int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0) { /* ill-formed: one byte becomes U+FFFD, which goes */
            i++;
            continue;
        }
        i += (size_t)k;
        if (c == 0 || c == 0xFFFD || is_control(c)) continue;
        if (is_ws(c)) {
            cp[n++] = ' ';
        } else if (is_cjk(c)) {
            cp[n++] = ' ';
            cp[n++] = c;
            cp[n++] = ' ';
        } else {
            cp[n++] = c;
        }
    }
    return n;
}

char *sd_clip_clean_text(const char *text, size_t len, size_t *out_len) {
    *out_len = 0;
    if (len > SIZE_MAX / 16) return NULL;
    int32_t *cp = malloc((3 * len + 1) * sizeof *cp);
    uint8_t *u8 = malloc(12 * len + 1); /* 3 code points of <= 4 bytes per byte */
    if (!cp || !u8) {
        free(cp);
        free(u8);
        return NULL;
    }
    size_t n = decode_clean((const uint8_t *)text, len, cp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) m += (size_t)utf8proc_encode_char(cp[i], u8 + m);
    u8[m] = 0;

    /* NFC. utf8proc_map allocates its result (NULL for an empty string). */
    uint8_t *nfc = NULL;
    utf8proc_ssize_t nn = m ? utf8proc_map(u8, (utf8proc_ssize_t)m, &nfc,
                                           UTF8PROC_STABLE | UTF8PROC_COMPOSE)
                            : 0;
    free(u8);
    if (nn < 0) { /* only UTF8PROC_ERROR_NOMEM can happen on valid UTF-8 */
        free(cp);
        return NULL;
    }
    /* NFC never lengthens beyond the decomposed form, and the code points
     * of nn bytes fit in nn entries. */
    int32_t *w = realloc(cp, ((size_t)nn + 1) * sizeof *w);
    char *out = malloc(3 * (size_t)nn + 1);
    if (!w || !out) {
        free(w ? w : cp);
        free(out);
        free(nfc);
        return NULL;
    }
    n = 0;
    for (utf8proc_ssize_t i = 0; i < nn;) {
        int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(nfc + i, nn - i, &c);
        if (k <= 0) break; /* cannot happen: utf8proc wrote it */
        w[n++] = c;
        i += k;
    }
    free(nfc);

    /* Words (maximal runs of non-split characters), each lower-cased,
     * joined by one space. */
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (is_split(w[i])) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < n && !is_split(w[end])) end++;
        if (o) out[o++] = ' ';
        for (size_t j = i; j < end; j++) {
            int32_t c = w[j];
            if (c == 0x130) { /* SpecialCasing: İ -> i + combining dot above */
                out[o++] = 'i';
                o += (size_t)utf8proc_encode_char(0x307, (uint8_t *)out + o);
                continue;
            }
            c = c == 0x3A3 ? lower_sigma(w + i, end - i, j - i) : utf8proc_tolower(c);
            o += (size_t)utf8proc_encode_char(c, (uint8_t *)out + o);
        }
        i = end;
    }
    out[o] = 0;
    free(w);
    *out_len = o;
    return out;
}

/* Oniguruma's Unicode \s, which tokenizers' Replace(Regex("\\s+")) uses. */
static bool is_onig_space(int32_t cp) {
    if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return true;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

char *sd_clip_normalize_fast(const char *text, size_t len, size_t *out_len) {
    *out_len = 0;
    if (len > SIZE_MAX / 16) return NULL;
    /* valid UTF-8 only (ill-formed bytes dropped), then NFC */
    uint8_t *u8 = malloc(len + 1);
    if (!u8) return NULL;
    size_t m = 0;
    for (size_t i = 0; i < len;) {
        int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0) {
            i++;
            continue;
        }
        memcpy(u8 + m, text + i, (size_t)k);
        m += (size_t)k;
        i += (size_t)k;
    }
    uint8_t *nfc = NULL;
    utf8proc_ssize_t nn = m ? utf8proc_map(u8, (utf8proc_ssize_t)m, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE) : 0;
    free(u8);
    if (nn < 0) return NULL;
    char *out = malloc(3 * (size_t)nn + 1); /* lower-casing grows a code point by 1.5x at most */
    if (!out) {
        free(nfc);
        return NULL;
    }
    size_t o = 0;
    bool in_space = false;
    for (utf8proc_ssize_t i = 0; i < nn;) {
        int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(nfc + i, nn - i, &c);
        if (k <= 0) break; /* cannot happen: utf8proc wrote it */
        i += k;
        if (is_onig_space(c)) {
            if (!in_space) out[o++] = ' ';
            in_space = true;
            continue;
        }
        in_space = false;
        if (c == 0x130) {
            out[o++] = 'i';
            o += (size_t)utf8proc_encode_char(0x307, (uint8_t *)out + o);
            continue;
        }
        o += (size_t)utf8proc_encode_char(utf8proc_tolower(c), (uint8_t *)out + o);
    }
    out[o] = 0;
    free(nfc);
    *out_len = o;
    return out;
}
