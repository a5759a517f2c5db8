/*
 * tokenizer_bpe.c — byte-level BPE ("gpt2" vocabularies: GPT-2, SmolLM2,
 * Llama 3, Qwen2 ...).
 *
 * Encoding one piece of raw text:
 *   1. the pre-tokenizer splits it into words (tokenizer_pretok.c);
 *   2. every byte of a word becomes the token of its character in the GPT-2
 *      byte alphabet (below);
 *   3. adjacent symbols are merged, always taking the pair with the lowest
 *      merge rank (leftmost on ties) until no ranked pair is left.
 * The merge loop uses a heap of candidate pairs with lazy deletion, so a
 * word of n bytes costs O(n log n) instead of the naive O(n^2).
 */
#include "tokenizer_impl.h"

#include "status.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

/* ---- the GPT-2 byte alphabet -------------------------------------------
 * Each byte is shown as a printable character: the 188 bytes that are
 * printable Latin-1 (33..126, 161..172, 174..255) stand for themselves, the
 * other 68 (0..32, 127..160, 173) take U+0100.. in byte order. So a space
 * (32) is U+0120 'Ġ' and a newline (10) U+010A 'Ċ'. */

static uint32_t byte_to_cp(unsigned b) {
    if (b <= 32) return 256 + b;                 /* 256..288 */
    if (b >= 127 && b <= 160) return 289 + (b - 127); /* 289..322 */
    if (b == 173) return 323;
    return b;
}

/* The byte a GPT-2 alphabet character stands for, or -1. */
static int cp_to_byte(uint32_t cp) {
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255)) return (int)cp;
    if (cp >= 256 && cp <= 288) return (int)(cp - 256);
    if (cp >= 289 && cp <= 322) return (int)(cp - 289 + 127);
    if (cp == 323) return 173;
    return -1;
}

size_t pt_bpe_text_to_bytes(const char *text, size_t len, char *buf, size_t cap) {
    size_t i = 0, w = 0;
    while (i < len) {
        size_t n;
        uint32_t cp;
        pt_utf8_result r = pt_utf8_scan((const unsigned char *)text + i, len - i, &n, &cp);
        int b = r == PT_UTF8_VALID ? cp_to_byte(cp) : -1;
        if (b >= 0) {
            if (w < cap) buf[w] = (char)b;
            w++;
        } else {
            /* Not in the alphabet (a vocabulary that stores raw text):
             * pass the bytes through unchanged. */
            for (size_t k = 0; k < n; k++, w++)
                if (w < cap) buf[w] = text[i + k];
        }
        i += n;
    }
    return w;
}

/* ---- loading ------------------------------------------------------------ */

pt_status pt_bpe_load(pt_tokenizer *t, const pt_gguf *g, pt_error *err) {
    for (unsigned b = 0; b < 256; b++) {
        char c[4];
        size_t n = pt_utf8_encode(byte_to_cp(b), c);
        t->byte_token[b] = pt_vocab_lookup(t, c, n);
    }

    const pt_gguf_value *merges = pt_gguf_get_arr(g, "tokenizer.ggml.merges", PT_GGUF_STRING);
    if (!merges)
        return pt_fail(err, PT_ERR_FORMAT, "gpt2 tokenizer has no tokenizer.ggml.merges string array");
    if (merges->v.arr.n > INT32_MAX)
        return pt_fail(err, PT_ERR_FORMAT, "tokenizer.ggml.merges has %llu entries, too many",
                       (unsigned long long)merges->v.arr.n);
    if (!pt_merge_index_init(&t->merges, merges->v.arr.n))
        return pt_fail(err, PT_ERR_NOMEM, "no memory for %llu BPE merges",
                       (unsigned long long)merges->v.arr.n);
    for (uint64_t i = 0; i < merges->v.arr.n; i++) {
        pt_gguf_str s = merges->v.arr.items[i].v.s;
        /* "left right": split at the first space after the first byte (the
         * byte alphabet has no space, but a raw-text vocabulary might start
         * a piece with one). */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        if (!sp)
            return pt_fail(err, PT_ERR_FORMAT, "tokenizer.ggml.merges[%llu] \"%.*s\" is not \"left right\"",
                           (unsigned long long)i, (int)(s.len > 40 ? 40 : s.len), s.ptr);
        size_t nl = (size_t)(sp - s.ptr), nr = s.len - nl - 1;
        pt_token l = pt_vocab_lookup(t, s.ptr, nl);
        pt_token r = pt_vocab_lookup(t, sp + 1, nr);
        pt_token m = pt_vocab_lookup2(t, s.ptr, nl, sp + 1, nr);
        /* A merge whose parts or result are missing from the vocabulary can
         * never apply; skip it as llama.cpp does. */
        if (l < 0 || r < 0 || m < 0) continue;
        pt_merge_index_add(&t->merges, l, r, (int32_t)i, m);
    }

    pt_gguf_str pre = {0};
    pt_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    return pt_pretok_init(&t->pretok, pre.ptr, (size_t)pre.len, err);
}

/* ---- encoding ----------------------------------------------------------- */

/* Scratch of one encode call: the symbols of the current word as a doubly
 * linked list over arrays indexed by the symbol's first byte position.
 * id[i] < 0 marks a symbol merged into its left neighbour. */
typedef struct bpe_work {
    int32_t *id, *prev, *next;
    size_t cap;
    pt_bigram_heap heap;
    char *mapped; /* the word in the byte alphabet (ignore_merges lookup) */
    size_t mapped_cap;
} bpe_work;

static bool work_reserve(bpe_work *w, size_t n) {
    if (n <= w->cap) return true;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n) cap *= 2;
    int32_t *id = realloc(w->id, cap * sizeof *id);
    if (id) w->id = id;
    int32_t *prev = realloc(w->prev, cap * sizeof *prev);
    if (prev) w->prev = prev;
    int32_t *next = realloc(w->next, cap * sizeof *next);
    if (next) w->next = next;
    if (!id || !prev || !next) return false;
    w->cap = cap;
    return true;
}

static void work_free(bpe_work *w) {
    free(w->id);
    free(w->prev);
    free(w->next);
    free(w->heap.v);
    free(w->mapped);
}

static bool push_pair(const pt_tokenizer *t, bpe_work *w, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return true;
    pt_token merged;
    int32_t rank = pt_merge_index_find(&t->merges, w->id[left], w->id[right], &merged);
    if (rank < 0) return true;
    return pt_bigram_push(&w->heap, (pt_bigram){.prio = rank, .left = left, .right = right});
}

/* With ignore_merges, a word that is itself a token is emitted whole.
 * Returns the id or -1 (also on out-of-memory: then BPE runs normally). */
static pt_token whole_word(const pt_tokenizer *t, bpe_work *w, const unsigned char *s, size_t n) {
    if (n > SIZE_MAX / 2 - 1) return -1;
    if (w->mapped_cap < 2 * n) {
        char *m = realloc(w->mapped, 2 * n);
        if (!m) return -1;
        w->mapped = m;
        w->mapped_cap = 2 * n;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += pt_utf8_encode(byte_to_cp(s[i]), w->mapped + k);
    return pt_vocab_lookup(t, w->mapped, k);
}

static bool encode_word(const pt_tokenizer *t, bpe_work *w, const unsigned char *s, size_t n,
                        pt_tokvec *out) {
    if (t->pretok.ignore_merges) {
        pt_token whole = whole_word(t, w, s, n);
        if (whole >= 0) return pt_tokvec_push(out, whole);
    }
    if (n > INT32_MAX || !work_reserve(w, n)) return false; /* symbol indices are 32-bit */
    /* One symbol per byte; a byte whose character is not in the vocabulary
     * is dropped (HF's BPE without an unk token does the same). */
    int32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        pt_token id = t->byte_token[s[i]];
        if (id < 0) continue;
        w->id[m] = id;
        w->prev[m] = m - 1;
        w->next[m] = m + 1;
        m++;
    }
    if (m == 0) return true;
    w->next[m - 1] = -1;
    w->heap.n = 0;
    for (int32_t i = 0; i + 1 < m; i++)
        if (!push_pair(t, w, i, i + 1)) return false;

    pt_bigram b;
    while (pt_bigram_pop(&w->heap, &b)) {
        int32_t l = b.left, r = b.right;
        /* Stale entries: a side was merged away, the neighbours changed, or
         * the pair's text changed (then its rank changed too). */
        if (w->id[l] < 0 || w->id[r] < 0 || w->next[l] != r) continue;
        pt_token merged;
        if (pt_merge_index_find(&t->merges, w->id[l], w->id[r], &merged) != (int32_t)b.prio) continue;
        w->id[l] = merged;
        w->id[r] = -1;
        w->next[l] = w->next[r];
        if (w->next[r] >= 0) w->prev[w->next[r]] = l;
        if (!push_pair(t, w, w->prev[l], l) || !push_pair(t, w, l, w->next[l])) return false;
    }
    /* Symbol 0 is never merged away (it has no left neighbour). */
    for (int32_t i = 0; i >= 0; i = w->next[i])
        if (!pt_tokvec_push(out, w->id[i])) return false;
    return true;
}

bool pt_bpe_encode(const pt_tokenizer *t, const char *text, size_t len, pt_tokvec *out) {
    pt_spanvec words = {0};
    bpe_work w = {0};
    bool ok = pt_pretok_split(&t->pretok, text, len, &words);
    for (size_t i = 0; ok && i < words.n; i++)
        ok = encode_word(t, &w, (const unsigned char *)text + words.v[i].off, words.v[i].len, out);
    free(words.v);
    work_free(&w);
    return ok;
}
