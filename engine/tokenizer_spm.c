/*
 * tokenizer_spm.c — SentencePiece BPE ("llama" vocabularies: Llama 1/2,
 * Mistral, TinyLlama ...), following sentencepiece's bpe_model.cc.
 *
 * Encoding one piece of raw text:
 *   1. every ASCII space becomes U+2581 "▁"; with add_space_prefix a "▁" is
 *      put in front (at the start of the text and after a special token);
 *   2. each character is a symbol;
 *   3. adjacent symbols are merged while some adjacent pair's concatenation
 *      is a vocabulary piece, always taking the piece with the highest score
 *      (leftmost on ties);
 *   4. each final symbol is its piece's id; an UNUSED piece is taken apart
 *      again into two parts, recursively (see spm_unused); a character outside
 *      the vocabulary becomes its UTF-8 bytes as <0xXX> tokens (byte
 *      fallback), or the unknown token when the vocabulary has no bytes.
 */
#include "tokenizer_impl.h"

#include "status.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pt_status pt_spm_load(pt_tokenizer *t, const pt_gguf *g, pt_error *err) {
    (void)g;
    (void)err;
    for (unsigned b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        pt_token id = pt_vocab_lookup(t, name, 6);
        t->byte_token[b] = id >= 0 && t->vocab[id].type == PT_TOKEN_BYTE ? id : -1;
    }
    return PT_OK;
}

/* Pieces that merges may produce: SentencePiece's ordinary pieces (normal,
 * user-defined, unused). Control, unknown and byte pieces never come out of
 * a merge, so a literal "<s>" in text stays text. */
static bool mergeable(const pt_tokenizer *t, pt_token id) {
    if (id < 0) return false;
    int32_t ty = t->vocab[id].type;
    return ty == PT_TOKEN_NORMAL || ty == PT_TOKEN_USER_DEFINED || ty == PT_TOKEN_UNUSED ||
           ty == PT_TOKEN_UNDEFINED;
}

/* A candidate merge that would make an UNUSED piece: its text's place in the
 * escaped text and where the left part ends. SentencePiece keeps these in a
 * map from text to (left, right) that the *last* candidate of each text
 * overwrites; an UNUSED final symbol is split back along that entry. */
typedef struct spm_unused {
    uint32_t off, n, n_left;
} spm_unused;

/* Scratch of one encode call. Symbols are indexed in text order; symbol i
 * covers bytes [off[i], off[i] + n[i]) of the escaped text, n[i] == 0 once it
 * was merged into its left neighbour. */
typedef struct spm_work {
    const char *text; /* escaped text */
    uint32_t *off, *n;
    int32_t *prev, *next;
    pt_bigram_heap heap;
    spm_unused *unused;
    size_t n_unused, cap_unused;
    uint32_t *stack; /* (off, n) pairs while splitting UNUSED pieces */
} spm_work;

static bool push_pair(const pt_tokenizer *t, spm_work *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return true;
    uint32_t size = w->n[l] + w->n[r];
    pt_token id = pt_vocab_lookup(t, w->text + w->off[l], size);
    if (!mergeable(t, id)) return true;
    if (t->vocab[id].type == PT_TOKEN_UNUSED) {
        if (w->n_unused == w->cap_unused) {
            size_t cap = w->cap_unused ? 2 * w->cap_unused : 16;
            spm_unused *u = realloc(w->unused, cap * sizeof *u);
            if (!u) return false;
            w->unused = u;
            w->cap_unused = cap;
        }
        w->unused[w->n_unused++] = (spm_unused){w->off[l], size, w->n[l]};
    }
    pt_bigram b = {.prio = -(double)t->vocab[id].score, .left = l, .right = r, .size = size};
    return pt_bigram_push(&w->heap, b);
}

/* Where the last candidate with this text split it, or 0 when none. */
static uint32_t unused_split(const spm_work *w, const char *s, uint32_t n) {
    for (size_t i = w->n_unused; i-- > 0;)
        if (w->unused[i].n == n && memcmp(w->text + w->unused[i].off, s, n) == 0) return w->unused[i].n_left;
    return 0;
}

/* A character outside the vocabulary: its bytes as <0xXX> pieces, or one
 * unknown token when the vocabulary lacks them. */
static bool emit_unknown(const pt_tokenizer *t, const char *s, uint32_t n, pt_tokvec *out) {
    for (uint32_t k = 0; k < n; k++)
        if (t->byte_token[(unsigned char)s[k]] < 0) return t->unk < 0 || pt_tokvec_push(out, t->unk);
    for (uint32_t k = 0; k < n; k++)
        if (!pt_tokvec_push(out, t->byte_token[(unsigned char)s[k]])) return false;
    return true;
}

/* Ids of one final symbol: its piece, an UNUSED piece's parts, or bytes. */
static bool emit_symbol(const pt_tokenizer *t, spm_work *w, uint32_t off, uint32_t n, pt_tokvec *out) {
    size_t sp = 0;
    w->stack[sp++] = off;
    w->stack[sp++] = n;
    while (sp > 0) {
        n = w->stack[--sp];
        off = w->stack[--sp];
        const char *s = w->text + off;
        pt_token id = pt_vocab_lookup(t, s, n);
        uint32_t split = id >= 0 && t->vocab[id].type == PT_TOKEN_UNUSED ? unused_split(w, s, n) : 0;
        if (split > 0) {
            /* right part pushed first so the left one comes out next; each
             * part is shorter, so the stack never holds more than the
             * symbol's byte count in pairs */
            w->stack[sp++] = off + split;
            w->stack[sp++] = n - split;
            w->stack[sp++] = off;
            w->stack[sp++] = split;
        } else if (id >= 0) {
            if (!pt_tokvec_push(out, id)) return false;
        } else if (!emit_unknown(t, s, n, out)) {
            return false;
        }
    }
    return true;
}

static void work_free(spm_work *w) {
    free((void *)w->text);
    free(w->off);
    free(w->n);
    free(w->prev);
    free(w->next);
    free(w->heap.v);
    free(w->unused);
    free(w->stack);
}

bool pt_spm_encode(const pt_tokenizer *t, const char *text, size_t len, bool with_prefix,
                   pt_tokvec *out) {
    static const char SPACE_MARK[3] = {'\xE2', '\x96', '\x81'}; /* U+2581 */
    if (len == 0) return true;
    if (len > (INT32_MAX - 3) / 3) return false; /* symbol indices and offsets are 32-bit */
    spm_work w = {0};
    bool ok = false;
    size_t cap = 3 * len + 3; /* every byte may become "▁"; plus the prefix */
    char *esc = malloc(cap);
    w.text = esc;
    if (!esc) goto done;
    size_t m = 0;
    if (with_prefix) memcpy(esc, SPACE_MARK, 3), m = 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ')
            memcpy(esc + m, SPACE_MARK, 3), m += 3;
        else
            esc[m++] = text[i];
    }

    /* At most one symbol per byte. */
    w.off = malloc(m * sizeof *w.off);
    w.n = malloc(m * sizeof *w.n);
    w.prev = malloc(m * sizeof *w.prev);
    w.next = malloc(m * sizeof *w.next);
    w.stack = malloc(2 * (m + 1) * sizeof *w.stack);
    if (!w.off || !w.n || !w.prev || !w.next || !w.stack) goto done;

    int32_t ns = 0;
    for (size_t i = 0; i < m;) {
        size_t n = pt_utf8_char_len(esc + i, m - i);
        w.off[ns] = (uint32_t)i;
        w.n[ns] = (uint32_t)n;
        w.prev[ns] = ns - 1;
        w.next[ns] = ns + 1;
        ns++;
        i += n;
    }
    w.next[ns - 1] = -1;
    for (int32_t i = 0; i + 1 < ns; i++)
        if (!push_pair(t, &w, i, i + 1)) goto done;

    pt_bigram b;
    while (pt_bigram_pop(&w.heap, &b)) {
        int32_t l = b.left, r = b.right;
        /* Stale: a side is gone, or a side grew since the pair was pushed. */
        if (w.n[l] == 0 || w.n[r] == 0 || w.next[l] != r || w.n[l] + w.n[r] != b.size) continue;
        w.n[l] = b.size;
        w.n[r] = 0;
        w.next[l] = w.next[r];
        if (w.next[r] >= 0) w.prev[w.next[r]] = l;
        if (!push_pair(t, &w, w.prev[l], l) || !push_pair(t, &w, l, w.next[l])) goto done;
    }
    ok = true;
    for (int32_t i = 0; ok && i >= 0; i = w.next[i]) ok = emit_symbol(t, &w, w.off[i], w.n[i], out);
done:
    work_free(&w);
    return ok;
}
