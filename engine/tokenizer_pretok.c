/*
 * tokenizer_pretok.c — pre-tokenizer regexes of byte-level BPE vocabularies,
 * chosen by tokenizer.ggml.pre (the names llama.cpp's convert script writes).
 *
 * The regexes are those of the models' tokenizer.json files (HF tokenizers)
 * and of llama.cpp's llm_tokenizer_bpe, with one change made for fidelity
 * to HF: \s and \S are spelled out as the class WS below. HF compiles the
 * regexes with Oniguruma, whose Unicode \s is TAB..CR, U+0085 and the Z
 * categories; PCRE2's \s under PCRE2_UCP differs between versions (U+0085
 * in particular), so the class is written explicitly.
 *
 * Supported names (several map to one regex set):
 *   gpt2     "gpt2" "gpt-2" "mpt" "olmo" "jais" "phi-2"
 *   smollm   "smollm" "starcoder" "refact" "command-r" "codeshell" "exaone"
 *            "minerva-7b": \p{N} split singly (HF Digits(individual_digits))
 *            then the GPT-2 regex (HF ByteLevel(use_regex))
 *   llama3   "llama3" "llama-v3" "llama-bpe" "falcon3" (and ignore_merges)
 *   smaug    "smaug-bpe" "dbrx" "chatglm-bpe": the llama3 regex, merges applied
 *   qwen2    "qwen2" "stablelm2" "deepseek-r1-qwen"
 *   default  "default", or no tokenizer.ggml.pre: llama.cpp's fallback set
 */
#include "tokenizer_impl.h"

#include "status.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* Oniguruma's Unicode \s, as the inside of a character class. */
#define WS "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Z}"

/* GPT-2: 's 't ... contractions, letters, numbers, other symbols (each with
 * one optional leading space), then whitespace runs that leave the last
 * space to the next word. */
#define RE_GPT2                                                                     \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+"          \
    "|[" WS "]+(?![^" WS "])|[" WS "]+"

/* Llama 3 (tiktoken cl100k style): case-insensitive contractions, a letter
 * run with one optional leading non-letter/non-digit, 1..3 digits. */
#define RE_LLAMA3                                                                   \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"         \
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

/* Qwen2: the Llama 3 regex with digits one at a time. */
#define RE_QWEN2                                                                    \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"              \
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

typedef struct pretok_def {
    const char *name;
    const char *aliases; /* space-separated tokenizer.ggml.pre values */
    bool ignore_merges;
    const char *re[PT_PRETOK_MAX_REGEX]; /* NULL-terminated when fewer */
} pretok_def;

static const pretok_def PRETOK_DEFS[] = {
    {"gpt2", "gpt2 gpt-2 mpt olmo jais phi-2", false, {RE_GPT2}},
    {"smollm", "smollm starcoder refact command-r codeshell exaone minerva-7b", false,
     {"\\p{N}", RE_GPT2}},
    {"llama3", "llama3 llama-v3 llama-bpe falcon3", true, {RE_LLAMA3}},
    {"smaug", "smaug-bpe dbrx chatglm-bpe", false, {RE_LLAMA3}},
    {"qwen2", "qwen2 stablelm2 deepseek-r1-qwen", false, {RE_QWEN2}},
    {"default", "default", false,
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
};

static bool alias_match(const char *aliases, const char *name, size_t n) {
    const char *p = aliases;
    while (*p) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0) return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

pt_status pt_pretok_init(pt_pretok *p, const char *pre, size_t pre_len, pt_error *err) {
    memset(p, 0, sizeof *p);
    if (!pre || pre_len == 0) pre = "default", pre_len = 7;
    const pretok_def *def = NULL;
    for (size_t i = 0; i < sizeof PRETOK_DEFS / sizeof PRETOK_DEFS[0]; i++)
        if (alias_match(PRETOK_DEFS[i].aliases, pre, pre_len)) def = &PRETOK_DEFS[i];
    if (!def)
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "tokenizer.ggml.pre \"%.*s\" is not a pre-tokenizer petrel knows "
                       "(known: smollm, gpt2, llama-bpe, qwen2, smaug-bpe, default and aliases)",
                       (int)(pre_len > 64 ? 64 : pre_len), pre);
    p->name = def->name;
    p->ignore_merges = def->ignore_merges;
    for (int i = 0; i < PT_PRETOK_MAX_REGEX && def->re[i]; i++) {
        int code;
        PCRE2_SIZE at;
        /* MATCH_INVALID_UTF: ill-formed input is allowed and simply never
         * matched, so it lands in gap words instead of failing the match. */
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)def->re[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code,
                                       &at, NULL);
        if (!re) {
            char msg[128];
            pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof msg);
            pt_pretok_free(p);
            return pt_fail(err, PT_ERR_UNSUPPORTED,
                           "pre-tokenizer \"%s\" regex %d does not compile at offset %zu: %s",
                           def->name, i, (size_t)at, msg);
        }
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter is the fallback */
        p->re[p->n_re++] = re;
    }
    return PT_OK;
}

void pt_pretok_free(pt_pretok *p) {
    for (int i = 0; i < p->n_re; i++) pcre2_code_free(p->re[i]);
    p->n_re = 0;
}

static bool span_push(pt_spanvec *v, size_t off, size_t len) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        pt_span *n = realloc(v->v, cap * sizeof *n);
        if (!n) return false;
        v->v = n;
        v->cap = cap;
    }
    v->v[v->n++] = (pt_span){off, len};
    return true;
}

/* Split the span `in` of text by one regex: matches and the gaps between
 * them, in order, appended to out. */
static bool split_span(const pcre2_code *re, pcre2_match_data *md, const char *text, pt_span in,
                       pt_spanvec *out) {
    PCRE2_SPTR subject = (PCRE2_SPTR)(text + in.off);
    size_t n = in.len, pos = 0, last = 0;
    while (pos < n) {
        int rc = pcre2_match(re, subject, n, pos, 0, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(re, subject, n, pos, PCRE2_NO_JIT, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return false;
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (e <= s) { /* an empty match is no word: step over one character */
            pos = s + pt_utf8_char_len(text + in.off + s, n - s);
            continue;
        }
        if (s > last && !span_push(out, in.off + last, s - last)) return false;
        if (!span_push(out, in.off + s, e - s)) return false;
        last = pos = e;
    }
    if (last < n && !span_push(out, in.off + last, n - last)) return false;
    return true;
}

bool pt_pretok_split(const pt_pretok *p, const char *text, size_t len, pt_spanvec *out) {
    out->n = 0;
    if (len == 0) return true;
    if (!span_push(out, 0, len)) return false;
    pt_spanvec tmp = {0};
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    bool ok = md != NULL;
    /* Each regex re-splits the words of the one before (ping-pong between
     * *out and tmp; *out holds the result after every round). */
    for (int r = 0; ok && r < p->n_re; r++) {
        tmp.n = 0;
        for (size_t i = 0; ok && i < out->n; i++) ok = split_span(p->re[r], md, text, out->v[i], &tmp);
        pt_spanvec swap = *out;
        *out = tmp;
        tmp = swap;
    }
    free(tmp.v);
    pcre2_match_data_free(md);
    return ok;
}
