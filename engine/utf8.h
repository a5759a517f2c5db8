/*
 * utf8.h — strict UTF-8 decoding helpers. Internal to the engine.
 *
 * "Strict" means RFC 3629: no overlong forms, no surrogates (U+D800..DFFF),
 * nothing above U+10FFFF. Ill-formed input is reported as a "maximal
 * subpart" (Unicode 15, section 3.9 / U+FFFD substitution of maximal
 * subparts): the longest prefix that could still begin a well-formed
 * sequence, or one byte when even the first byte cannot. Replacing each
 * maximal subpart by one U+FFFD gives the same result as Python's
 * bytes.decode("utf-8", "replace").
 */
#ifndef PETREL_UTF8_H
#define PETREL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_UTF8_REPLACEMENT 0xFFFDu

typedef enum pt_utf8_result {
    PT_UTF8_VALID,      /* a whole well-formed sequence */
    PT_UTF8_INVALID,    /* an ill-formed maximal subpart */
    PT_UTF8_INCOMPLETE, /* a well-formed prefix cut short by the end of the buffer */
} pt_utf8_result;

/* Examine the sequence starting at s (n >= 1 bytes available). Sets *len to
 * the bytes it spans (1..4; for INCOMPLETE, all n bytes) and, when VALID,
 * *cp to the code point. */
pt_utf8_result pt_utf8_scan(const unsigned char *s, size_t n, size_t *len, uint32_t *cp);

/* Length of the sequence at s for splitting text into characters: the
 * well-formed length, or the maximal subpart length when ill-formed or cut
 * short (so a split never loses or duplicates bytes). n >= 1. */
size_t pt_utf8_char_len(const char *s, size_t n);

/* Write the UTF-8 form of cp (<= U+10FFFF, not a surrogate) to out; returns
 * 1..4. Invalid code points are written as U+FFFD. */
size_t pt_utf8_encode(uint32_t cp, char out[4]);

/* True when all n bytes are well-formed UTF-8. */
bool pt_utf8_valid(const char *s, size_t n);

#endif
