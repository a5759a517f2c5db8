/*
 * clip_text.h — the text cleanup that transformers' slow CLIPTokenizer runs
 * before its regex when ftfy is not installed (which is how diffusers
 * pipelines run it): BasicTokenizer(strip_accents=False,
 * do_split_on_punc=False).tokenize(text), joined by single spaces.
 * Internal to the engine (clip_tokenizer.c).
 */
#ifndef PETREL_CLIP_TEXT_H
#define PETREL_CLIP_TEXT_H

#include <stddef.h>

/* The cleaned text of text[0..len) (any bytes; ill-formed UTF-8 sequences
 * are dropped byte by byte, as Python's decode(errors="replace") followed
 * by the cleanup's removal of U+FFFD would):
 *   1. U+0000, U+FFFD and every code point of a C* category (Cc, Cf, Cs,
 *      Co, Cn: unassigned too) except TAB, LF, CR are removed; TAB, LF,
 *      CR, SPACE and Zs become a space;
 *   2. each CJK ideograph (BasicTokenizer._is_chinese_char's blocks) gets
 *      a space on either side;
 *   3. Unicode NFC;
 *   4. split into words on the whitespace Python's str.split() still finds
 *      after step 1 (SPACE, U+2028, U+2029);
 *   5. each word lower-cased as Python's str.lower(): the simple lowercase
 *      mapping, plus U+0130 -> "i" U+0307 and the Final_Sigma rule
 *      (Σ -> ς at a word's end);
 *   6. the words joined by one SPACE.
 * Returns a malloc'd NUL-terminated string (its length in *out_len), or
 * NULL when out of memory. Unicode data is utf8proc's (Unicode 15 for
 * utf8proc 2.8); Python's unicodedata may be a version older, which only
 * matters for code points assigned in between. */
char *sd_clip_clean_text(const char *text, size_t len, size_t *out_len);

/* The normalizer of transformers 5's CLIPTokenizer (the tokenizers-backed
 * one, all that transformers 5 has): NFC, every run of Unicode whitespace
 * (TAB..CR, U+0085, Z*) replaced by one space, then each code point
 * lower-cased on its own (full mapping: U+0130 -> "i" U+0307; no final
 * sigma). Control and format characters stay, CJK gets no spaces. Same
 * memory contract as sd_clip_clean_text. */
char *sd_clip_normalize_fast(const char *text, size_t len, size_t *out_len);

#endif
