/*
 * clip_tokenizer.c — CLIP BPE (see clip_tokenizer.h), transcribed from
 * transformers 4.x CLIPTokenizer._tokenize / .bpe / tokenize().
 *
 * Symbols: every string BPE can produce or look up (each vocab.json key,
 * both sides of each merge and their concatenation) is interned once as a
 * symbol id, so a merge is a pair of ints in the engine's merge index
 * (tokenizer_index.c) and a word is an array of symbol ids. A byte whose
 * alphabet character is no symbol can take part in no merge and is no
 * vocabulary entry, so it is kept as symbol -1 and emitted as the unknown
 * token (<|endoftext|>), as transformers does.
 *
 * Merging: the lowest-ranked adjacent pair first, leftmost on ties, with
 * a heap of candidates (O(n log n) per word, as tokenizer_bpe.c). This
 * equals transformers' loop (the lowest-ranked bigram, every occurrence
 * left to right, then again) whenever a merge's parts rank before the
 * merge itself, which holds for every merges.txt a BPE trainer writes;
 * for hand-made files where a later-made pair has a lower rank the order
 * of equal-rank merges may differ.
 */
#include "clip_tokenizer.h"

#include "clip_text.h"
#include "status.h"
#include "tokenizer_impl.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CLIP_MAX_MERGES (49152 - 256 - 2) /* transformers reads merges[1 : 48895] */

static const char BOS_TEXT[] = "<|startoftext|>";
static const char EOS_TEXT[] = "<|endoftext|>";

static const char CLIP_PATTERN[] =
    "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|"
    "[^\\s\\p{L}\\p{N}]+";

struct sd_clip_tokenizer {
    /* Symbol s is arena[off[s] .. off[s] + len[s]); vocab[s] its id in
     * vocab.json or -1. n_sym <= cap_sym entries in each array. */
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *off, *len;
    int32_t *vocab;
    int32_t n_sym, cap_sym;
    /* Open-addressing hash of symbols by text: slot[] holds a symbol id
     * or -1; capacity mask + 1 is a power of two >= 2 * n_sym. */
    int32_t *slot;
    uint64_t mask;

    pt_merge_index merges;     /* (left sym, right sym) -> rank, merged sym */
    int32_t byte_sym[256];     /* symbol of byte b's alphabet character, or -1 */
    int32_t byte_sym_end[256]; /* the same character + "</w>", or -1 */
    int32_t bos, eos, n_vocab;
    int32_t *id_sym;           /* [n_vocab]: the symbol of each id, or -1 */
    sd_clip_flavour flavour;
    pcre2_code *re;
};

/* ---- symbols ------------------------------------------------------------ */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

/* Symbol of text s[0..n), or -1. */
static int32_t sym_find(const sd_clip_tokenizer *t, const char *s, size_t n) {
    if (!t->slot) return -1;
    for (uint64_t i = hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        int32_t id = t->slot[i];
        if (id < 0) return -1;
        if (t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0) return id;
    }
}

static bool sym_rehash(sd_clip_tokenizer *t, uint64_t cap) {
    int32_t *slot = malloc(cap * sizeof *slot);
    if (!slot) return false;
    for (uint64_t i = 0; i < cap; i++) slot[i] = -1;
    for (int32_t id = 0; id < t->n_sym; id++) {
        uint64_t i = hash_bytes(t->arena + t->off[id], t->len[id]) & (cap - 1);
        while (slot[i] >= 0) i = (i + 1) & (cap - 1);
        slot[i] = id;
    }
    free(t->slot);
    t->slot = slot;
    t->mask = cap - 1;
    return true;
}

/* Symbol of s[0..n) followed by s2[0..n2), interned if new; -1 when out
 * of memory or past the 32-bit limits. */
static int32_t sym_intern2(sd_clip_tokenizer *t, const char *s, size_t n, const char *s2, size_t n2) {
    size_t total = n + n2;
    char small[256];
    char *key = total <= sizeof small ? small : malloc(total ? total : 1);
    if (!key) return -1;
    memcpy(key, s, n);
    if (n2) memcpy(key + n, s2, n2);
    int32_t id = sym_find(t, key, total);
    if (id >= 0 || total > UINT32_MAX || t->arena_len + total > UINT32_MAX || t->n_sym == INT32_MAX)
        goto done;
    if (t->n_sym == t->cap_sym) {
        int32_t cap = t->cap_sym ? (t->cap_sym > INT32_MAX / 2 ? INT32_MAX : t->cap_sym * 2) : 1024;
        uint32_t *off = realloc(t->off, (size_t)cap * sizeof *off);
        if (off) t->off = off;
        uint32_t *len = realloc(t->len, (size_t)cap * sizeof *len);
        if (len) t->len = len;
        int32_t *voc = realloc(t->vocab, (size_t)cap * sizeof *voc);
        if (voc) t->vocab = voc;
        if (!off || !len || !voc) goto done;
        t->cap_sym = cap;
    }
    /* !t->arena: the first symbol may be the empty string (vocab.json key
     * ""), whose copy below must still get a real pointer */
    if (t->arena_len + total > t->arena_cap || !t->arena) {
        size_t cap = t->arena_cap ? t->arena_cap : 4096;
        while (cap < t->arena_len + total) cap *= 2;
        char *a = realloc(t->arena, cap);
        if (!a) goto done;
        t->arena = a;
        t->arena_cap = cap;
    }
    if ((uint64_t)(t->n_sym + 1) * 2 > t->mask + 1 || !t->slot) {
        if (!sym_rehash(t, t->slot ? (t->mask + 1) * 2 : 2048)) goto done;
    }
    id = t->n_sym++;
    t->off[id] = (uint32_t)t->arena_len;
    t->len[id] = (uint32_t)total;
    t->vocab[id] = -1;
    memcpy(t->arena + t->arena_len, key, total);
    t->arena_len += total;
    uint64_t i = hash_bytes(key, total) & t->mask;
    while (t->slot[i] >= 0) i = (i + 1) & t->mask;
    t->slot[i] = id;
done:
    if (key != small) free(key);
    return id;
}

/* GPT-2's bytes_to_unicode: the printable Latin-1 bytes stand for
 * themselves, the other 68 take U+0100.. in byte order. */
static uint32_t byte_cp(unsigned b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174)) return b;
    if (b <= 32) return 256 + b;
    if (b <= 160) return 289 + (b - 127);
    return 323; /* 173 */
}

/* UTF-8 of byte b's alphabet character (2 bytes at most); returns length. */
static size_t byte_utf8(unsigned b, char *out) {
    uint32_t cp = byte_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* ---- loading ------------------------------------------------------------ */

static pt_status load_vocab(sd_clip_tokenizer *t, const char *json, size_t len, pt_error *err) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return pt_fail(err, PT_ERR_FORMAT, "vocab.json: not a JSON object");
    }
    pt_status st = PT_OK;
    /* Ids index an array of n_vocab entries, so they must be dense-ish: a
     * real vocab.json numbers its keys 0..n-1. An id at or past the number
     * of keys would make one hostile entry cost gigabytes. */
    int64_t n_keys = 0;
    for (const cJSON *e = root->child; e; e = e->next) n_keys++;
    for (const cJSON *e = root->child; e; e = e->next) {
        double v = e->valuedouble;
        if (!cJSON_IsNumber(e) || !(v >= 0 && v < (double)n_keys) || v != (double)(int32_t)v) {
            /* the key escaped: the message stays one line whatever it holds */
            char key[64];
            const char *k = e->string ? e->string : "";
            pt_escape_text(k, strnlen(k, 40), key, sizeof key);
            st = pt_fail(err, PT_ERR_FORMAT, "vocab.json: the id of \"%s\" is not an integer "
                         "0..%lld (one per key)", key, (long long)n_keys - 1);
            break;
        }
        int32_t s = sym_intern2(t, e->string, strlen(e->string), NULL, 0);
        if (s < 0) {
            st = pt_fail(err, PT_ERR_NOMEM, "vocab.json: out of memory");
            break;
        }
        t->vocab[s] = (int32_t)v; /* a repeated key: the last id wins */
        if ((int32_t)v >= t->n_vocab) t->n_vocab = (int32_t)v + 1;
    }
    cJSON_Delete(root);
    return st;
}

static bool is_field_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* One merge line: exactly two space-separated fields -> *a, *b. */
static bool split_merge(const char *s, size_t n, const char **a, size_t *na, const char **b,
                        size_t *nb) {
    const char *f[3];
    size_t fl[3];
    int k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && is_field_space(s[i])) i++;
        if (i == n) break;
        size_t j = i;
        while (j < n && !is_field_space(s[j])) j++;
        if (k == 3) return false;
        f[k] = s + i;
        fl[k++] = j - i;
        i = j;
    }
    if (k != 2) return false;
    *a = f[0], *na = fl[0], *b = f[1], *nb = fl[1];
    return true;
}

typedef struct merge_line {
    int32_t left, right, merged, rank;
} merge_line;

static pt_status load_merges(sd_clip_tokenizer *t, const char *txt, size_t len, pt_error *err) {
    /* Python: read().strip().split("\n")[1 : 48895] */
    size_t lo = 0, hi = len;
    while (lo < hi && (is_field_space(txt[lo]) || txt[lo] == '\n')) lo++;
    while (hi > lo && (is_field_space(txt[hi - 1]) || txt[hi - 1] == '\n')) hi--;
    size_t cap = 0;
    for (size_t i = lo; i < hi; i++) cap += txt[i] == '\n';
    if (cap > CLIP_MAX_MERGES) cap = CLIP_MAX_MERGES;
    merge_line *ml = malloc((cap + 1) * sizeof *ml);
    if (!ml) return pt_fail(err, PT_ERR_NOMEM, "merges.txt: out of memory");
    int32_t n = 0, line = 0;
    for (size_t i = lo; i < hi && n < (int32_t)cap;) {
        const char *nl = memchr(txt + i, '\n', hi - i);
        size_t end = nl ? (size_t)(nl - txt) : hi;
        if (line++ > 0) {
            const char *a, *b;
            size_t na, nb;
            int32_t rank = line - 2;
            if (rank >= CLIP_MAX_MERGES) break;
            if (split_merge(txt + i, end - i, &a, &na, &b, &nb)) {
                merge_line m = {sym_intern2(t, a, na, NULL, 0), sym_intern2(t, b, nb, NULL, 0),
                                sym_intern2(t, a, na, b, nb), rank};
                if (m.left < 0 || m.right < 0 || m.merged < 0) {
                    free(ml);
                    return pt_fail(err, PT_ERR_NOMEM, "merges.txt: out of memory");
                }
                ml[n++] = m;
            }
        }
        i = end + 1;
    }
    if (!pt_merge_index_init(&t->merges, (uint64_t)n)) {
        free(ml);
        return pt_fail(err, PT_ERR_NOMEM, "merges.txt: out of memory");
    }
    /* The index keeps the first pair added: add the last line first so a
     * repeated pair keeps its last rank (Python's dict(zip(...))). */
    for (int32_t i = n - 1; i >= 0; i--)
        pt_merge_index_add(&t->merges, ml[i].left, ml[i].right, ml[i].rank, ml[i].merged);
    free(ml);
    return PT_OK;
}

pt_status sd_clip_tokenizer_new(const char *vocab_json, size_t vocab_len, const char *merges,
                                size_t merges_len, sd_clip_flavour flavour, sd_clip_tokenizer **out,
                                pt_error *err) {
    *out = NULL;
    if (!vocab_json || !merges) return pt_fail(err, PT_ERR_ARG, "CLIP tokenizer: no vocab.json or merges.txt");
    if (flavour != SD_CLIP_TRANSFORMERS5 && flavour != SD_CLIP_SLOW_NO_FTFY)
        return pt_fail(err, PT_ERR_ARG, "CLIP tokenizer: unknown flavour %d", (int)flavour);
    sd_clip_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return pt_fail(err, PT_ERR_NOMEM, "CLIP tokenizer: out of memory");
    t->flavour = flavour;
    pt_status st = load_vocab(t, vocab_json, vocab_len, err);
    if (st == PT_OK) {
        /* ids -> symbols, for the pad token's text (the last key of an id wins) */
        t->id_sym = malloc((size_t)(t->n_vocab ? t->n_vocab : 1) * sizeof *t->id_sym);
        if (!t->id_sym) st = pt_fail(err, PT_ERR_NOMEM, "vocab.json: out of memory");
        for (int32_t i = 0; st == PT_OK && i < t->n_vocab; i++) t->id_sym[i] = -1;
        for (int32_t sym = 0; st == PT_OK && sym < t->n_sym; sym++)
            if (t->vocab[sym] >= 0) t->id_sym[t->vocab[sym]] = sym;
    }
    if (st == PT_OK) st = load_merges(t, merges, merges_len, err);
    if (st == PT_OK) {
        int32_t b = sym_find(t, BOS_TEXT, sizeof BOS_TEXT - 1);
        int32_t e = sym_find(t, EOS_TEXT, sizeof EOS_TEXT - 1);
        t->bos = b >= 0 ? t->vocab[b] : -1;
        t->eos = e >= 0 ? t->vocab[e] : -1;
        if (t->bos < 0 || t->eos < 0)
            st = pt_fail(err, PT_ERR_FORMAT, "vocab.json: no %s token", t->bos < 0 ? BOS_TEXT : EOS_TEXT);
    }
    for (unsigned b = 0; st == PT_OK && b < 256; b++) {
        char c[8];
        size_t n = byte_utf8(b, c);
        t->byte_sym[b] = sym_find(t, c, n);
        memcpy(c + n, "</w>", 4);
        t->byte_sym_end[b] = sym_find(t, c, n + 4);
    }
    if (st == PT_OK) {
        int code;
        PCRE2_SIZE at;
        t->re = pcre2_compile((PCRE2_SPTR)CLIP_PATTERN, PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_CASELESS, &code, &at, NULL);
        if (!t->re) st = pt_fail(err, PT_ERR_UNSUPPORTED, "CLIP tokenizer: regex does not compile (PCRE2 %d)", code);
        else pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional */
    }
    if (st != PT_OK) {
        sd_clip_tokenizer_free(t);
        return st;
    }
    *out = t;
    return PT_OK;
}

void sd_clip_tokenizer_free(sd_clip_tokenizer *t) {
    if (!t) return;
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->vocab);
    free(t->slot);
    free(t->id_sym);
    free(t->merges.slots);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

int32_t sd_clip_bos(const sd_clip_tokenizer *t) { return t->bos; }
int32_t sd_clip_eos(const sd_clip_tokenizer *t) { return t->eos; }
int32_t sd_clip_vocab_size(const sd_clip_tokenizer *t) { return t->n_vocab; }

/* ---- encoding ----------------------------------------------------------- */

/* Output of one tokenize call: up to cap text tokens. */
typedef struct tok_out {
    int32_t *ids;
    int n, cap;
} tok_out;

static void emit(tok_out *o, int32_t id) {
    if (o->n < o->cap) o->ids[o->n++] = id;
}

/* Scratch of one call: the symbols of the current word as a doubly linked
 * list over arrays indexed by the symbol's first byte position; sym[i] ==
 * -2 marks a symbol merged into its left neighbour (-1 is "no symbol"). */
typedef struct bpe_work {
    int32_t *sym, *prev, *next;
    size_t cap;
    pt_bigram_heap heap;
} bpe_work;

static bool push_pair(const sd_clip_tokenizer *t, bpe_work *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return true;
    int32_t merged;
    int32_t rank = pt_merge_index_find(&t->merges, w->sym[l], w->sym[r], &merged);
    if (rank < 0) return true;
    return pt_bigram_push(&w->heap, (pt_bigram){.prio = rank, .left = l, .right = r});
}

static int32_t sym_token(const sd_clip_tokenizer *t, int32_t s) {
    return s >= 0 && t->vocab[s] >= 0 ? t->vocab[s] : t->eos; /* unk = <|endoftext|> */
}

/* BPE of one regex match s[0..n) (raw UTF-8 bytes, n >= 1). */
static bool encode_word(const sd_clip_tokenizer *t, bpe_work *w, const uint8_t *s, size_t n,
                        tok_out *o) {
    /* transformers' bpe cache starts with the two special strings. */
    if (n == sizeof BOS_TEXT - 1 && memcmp(s, BOS_TEXT, n) == 0) return emit(o, t->bos), true;
    if (n == sizeof EOS_TEXT - 1 && memcmp(s, EOS_TEXT, n) == 0) return emit(o, t->eos), true;
    if (n > INT32_MAX) return false;
    if (n > w->cap) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap < n) cap *= 2;
        int32_t *a = realloc(w->sym, cap * sizeof *a);
        if (a) w->sym = a;
        int32_t *b = realloc(w->prev, cap * sizeof *b);
        if (b) w->prev = b;
        int32_t *c = realloc(w->next, cap * sizeof *c);
        if (c) w->next = c;
        if (!a || !b || !c) return false;
        w->cap = cap;
    }
    /* word = tuple(token[:-1]) + (token[-1] + "</w>",) */
    int32_t m = (int32_t)n;
    for (int32_t i = 0; i < m; i++) {
        w->sym[i] = i + 1 < m ? t->byte_sym[s[i]] : t->byte_sym_end[s[i]];
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < m ? i + 1 : -1;
    }
    w->heap.n = 0;
    for (int32_t i = 0; i + 1 < m; i++)
        if (!push_pair(t, w, i, i + 1)) return false;
    pt_bigram b;
    while (pt_bigram_pop(&w->heap, &b)) {
        int32_t l = b.left, r = b.right;
        /* Stale: a side was merged away, the neighbours changed, or the
         * pair's text (and so its rank) changed. */
        if (w->sym[l] == -2 || w->sym[r] == -2 || w->next[l] != r) continue;
        int32_t merged;
        if (pt_merge_index_find(&t->merges, w->sym[l], w->sym[r], &merged) != (int32_t)b.prio) continue;
        w->sym[l] = merged;
        w->sym[r] = -2;
        w->next[l] = w->next[r];
        if (w->next[r] >= 0) w->prev[w->next[r]] = l;
        if (!push_pair(t, w, w->prev[l], l) || !push_pair(t, w, l, w->next[l])) return false;
    }
    for (int32_t i = 0; i >= 0 && o->n < o->cap; i = w->next[i]) emit(o, sym_token(t, w->sym[i]));
    return true;
}

/* Clean text[0..len) (no special strings inside) and BPE every regex
 * match, stopping once the output is full. */
static pt_status encode_piece(const sd_clip_tokenizer *t, bpe_work *w, pcre2_match_data *md,
                              const char *text, size_t len, tok_out *o, pt_error *err) {
    size_t n;
    char *clean = t->flavour == SD_CLIP_SLOW_NO_FTFY ? sd_clip_clean_text(text, len, &n)
                                                     : sd_clip_normalize_fast(text, len, &n);
    if (!clean) return pt_fail(err, PT_ERR_NOMEM, "CLIP tokenizer: out of memory");
    pt_status st = PT_OK;
    PCRE2_SIZE at = 0;
    while (at < n && o->n < o->cap) {
        int rc = pcre2_match(t->re, (PCRE2_SPTR)clean, n, at, 0, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "CLIP tokenizer: regex match failed (PCRE2 %d)", rc);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] <= ov[0]) { /* the pattern never matches empty; be safe */
            at = ov[0] + 1;
            continue;
        }
        if (!encode_word(t, w, (const uint8_t *)clean + ov[0], ov[1] - ov[0], o)) {
            st = pt_fail(err, PT_ERR_NOMEM, "CLIP tokenizer: out of memory");
            break;
        }
        at = ov[1];
    }
    free(clean);
    return st;
}

/* Strings split out of the raw text before anything else (transformers'
 * added special tokens): BOS, EOS and the pad token's text. */
typedef struct special_set {
    const char *s[3];
    size_t len[3];
    int32_t id[3];
    int n;
} special_set;

/* The next special string in s[0..n) at or after from (the longest one at
 * the earliest position): its offset (n if none), length and id. */
static size_t find_special(const special_set *sp, const char *s, size_t n, size_t from, size_t *sl,
                           int32_t *id) {
    for (size_t i = from; i < n; i++) {
        size_t best = 0;
        for (int k = 0; k < sp->n; k++)
            if (sp->len[k] > best && n - i >= sp->len[k] && memcmp(s + i, sp->s[k], sp->len[k]) == 0) {
                best = sp->len[k];
                *sl = best;
                *id = sp->id[k];
            }
        if (best) return i;
    }
    return n;
}

pt_status sd_clip_tokenize(const sd_clip_tokenizer *t, const char *text, size_t text_len,
                           int32_t *ids, int max_len, int32_t pad_id, int *n_real, pt_error *err) {
    if (n_real) *n_real = 0;
    if (!t || !ids || max_len < 2 || (!text && text_len))
        return pt_fail(err, PT_ERR_ARG, "CLIP tokenizer: max_len %d (need >= 2) or a NULL argument", max_len);
    tok_out o = {ids + 1, 0, max_len - 2};
    bpe_work w = {0};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) return pt_fail(err, PT_ERR_NOMEM, "CLIP tokenizer: out of memory");
    pt_status st = PT_OK;
    special_set sps = {{BOS_TEXT, EOS_TEXT}, {sizeof BOS_TEXT - 1, sizeof EOS_TEXT - 1}, {t->bos, t->eos}, 2};
    if (pad_id >= 0 && pad_id < t->n_vocab && pad_id != t->bos && pad_id != t->eos && t->id_sym[pad_id] >= 0 &&
        t->len[t->id_sym[pad_id]] > 0) {
        sps.s[2] = t->arena + t->off[t->id_sym[pad_id]];
        sps.len[2] = t->len[t->id_sym[pad_id]];
        sps.id[2] = pad_id;
        sps.n = 3;
    }
    /* transformers first splits the raw text on the special tokens
     * (tokens_trie.split), then tokenizes each piece between them. */
    for (size_t at = 0; st == PT_OK && at < text_len && o.n < o.cap;) {
        size_t sl = 0;
        int32_t sid = -1;
        size_t sp = find_special(&sps, text, text_len, at, &sl, &sid);
        if (sp > at) st = encode_piece(t, &w, md, text + at, sp - at, &o, err);
        if (sp < text_len) emit(&o, sid);
        at = sp + sl;
    }
    pcre2_match_data_free(md);
    free(w.sym);
    free(w.prev);
    free(w.next);
    free(w.heap.v);
    if (st != PT_OK) return st;
    ids[0] = t->bos;
    ids[o.n + 1] = t->eos;
    for (int i = o.n + 2; i < max_len; i++) ids[i] = pad_id;
    if (n_real) *n_real = o.n + 2;
    return PT_OK;
}
