/*
 * tokenizer.c — loading a tokenizer from GGUF metadata, splitting out
 * special tokens, encode/decode entry points and the id accessors.
 * The models themselves live in tokenizer_bpe.c and tokenizer_spm.c.
 *
 * Keys read (all tokenizer.ggml.*): model, tokens, token_type, scores,
 * merges, pre, bos/eos/unknown/eot/eom_token_id, add_bos_token,
 * add_eos_token, add_space_prefix.
 */
#include "tokenizer_impl.h"

#include "status.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vocabulary sizes beyond this are treated as corrupt files: it keeps the
 * 32-bit hash slots and int token ids far from overflow. */
#define PT_VOCAB_MAX (1 << 24)

/* Texts that end a turn in common chat formats; present ones count as
 * end-of-generation tokens (the list llama.cpp uses). */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>",
};

void pt_tokenizer_free(pt_tokenizer *t) {
    if (!t) return;
    free(t->vocab);
    free(t->arena);
    free(t->index.slots);
    free(t->merges.slots);
    free(t->special);
    pt_pretok_free(&t->pretok);
    free(t);
}

/* An optional token id key: absent gives def. A stored id outside
 * [0, n_vocab) -- -1 / 0xFFFFFFFF meaning "none", or a stray value --
 * gives -1 (no such token; llama.cpp warns and goes on), so one stray key
 * does not make a model unloadable. */
static pt_token get_id(const pt_gguf *g, const char *key, int n_vocab, pt_token def) {
    int64_t v;
    if (!pt_gguf_get_i64(g, key, &v)) return def;
    if (v < 0 || v >= n_vocab) return -1;
    return (pt_token)v;
}

static bool get_bool(const pt_gguf *g, const char *key, bool def) {
    bool b;
    return pt_gguf_get_bool(g, key, &b) ? b : def;
}

/* A numeric array under key with n elements, or NULL when absent.
 * *bad is set when it exists with the wrong shape. */
static const pt_gguf_value *numeric_array(const pt_gguf *g, const char *key, uint64_t n, bool *bad) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    *bad = false;
    if (!kv) return NULL;
    const pt_gguf_value *v = &kv->value;
    if (v->type != PT_GGUF_ARRAY || v->v.arr.n != n || v->v.arr.elem_type == PT_GGUF_STRING ||
        v->v.arr.elem_type == PT_GGUF_ARRAY || v->v.arr.elem_type == PT_GGUF_BOOL) {
        *bad = true;
        return NULL;
    }
    return v;
}

static void add_eog(pt_tokenizer *t, pt_token id) {
    if (id < 0 || t->n_eog == PT_EOG_MAX) return;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return;
    t->eog[t->n_eog++] = id;
}

typedef struct special_key {
    unsigned char first;
    uint32_t len;
    pt_token id;
} special_key;

static int special_cmp(const void *a, const void *b) {
    const special_key *x = a, *y = b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1; /* longest first */
    return x->id < y->id ? -1 : x->id > y->id;
}

static bool is_special_type(int32_t type) {
    return type == PT_TOKEN_CONTROL || type == PT_TOKEN_UNKNOWN || type == PT_TOKEN_USER_DEFINED;
}

static bool build_specials(pt_tokenizer *t) {
    int n = 0;
    for (int i = 0; i < t->n_vocab; i++)
        if (is_special_type(t->vocab[i].type) && t->vocab[i].len > 0) n++;
    special_key *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    t->special = malloc((size_t)(n ? n : 1) * sizeof *t->special);
    if (!keys || !t->special) {
        free(keys);
        return false;
    }
    n = 0;
    for (int i = 0; i < t->n_vocab; i++)
        if (is_special_type(t->vocab[i].type) && t->vocab[i].len > 0)
            keys[n++] = (special_key){(unsigned char)t->vocab[i].text[0], t->vocab[i].len, i};
    qsort(keys, (size_t)n, sizeof *keys, special_cmp);
    memset(t->special_first, 0, sizeof t->special_first);
    for (int i = 0; i < n; i++) {
        t->special[i] = keys[i].id;
        t->special_first[keys[i].first + 1]++;
    }
    for (int b = 0; b < 256; b++) t->special_first[b + 1] += t->special_first[b];
    t->n_special = n;
    free(keys);
    return true;
}

/* Token texts, types and scores into the tokenizer's own memory. */
static pt_status load_vocab(pt_tokenizer *t, const pt_gguf *g, pt_error *err) {
    const pt_gguf_value *tokens = pt_gguf_get_arr(g, "tokenizer.ggml.tokens", PT_GGUF_STRING);
    if (!tokens) return pt_fail(err, PT_ERR_FORMAT, "no tokenizer.ggml.tokens string array");
    uint64_t n = tokens->v.arr.n;
    if (n == 0 || n > PT_VOCAB_MAX)
        return pt_fail(err, PT_ERR_FORMAT, "tokenizer.ggml.tokens has %llu entries (want 1..%d)",
                       (unsigned long long)n, PT_VOCAB_MAX);
    bool bad;
    const pt_gguf_value *types = numeric_array(g, "tokenizer.ggml.token_type", n, &bad);
    if (bad) return pt_fail(err, PT_ERR_FORMAT, "tokenizer.ggml.token_type is not a number array of %llu", (unsigned long long)n);
    const pt_gguf_value *scores = numeric_array(g, "tokenizer.ggml.scores", n, &bad);
    if (bad) return pt_fail(err, PT_ERR_FORMAT, "tokenizer.ggml.scores is not a number array of %llu", (unsigned long long)n);

    size_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = tokens->v.arr.items[i].v.s.len;
        if (len > UINT32_MAX / 2)
            return pt_fail(err, PT_ERR_FORMAT, "token %llu is %llu bytes long", (unsigned long long)i,
                           (unsigned long long)len);
        total += (size_t)len + 1;
    }
    t->n_vocab = (int)n;
    t->vocab = calloc((size_t)n, sizeof *t->vocab);
    t->arena = malloc(total);
    if (!t->vocab || !t->arena)
        return pt_fail(err, PT_ERR_NOMEM, "no memory for a vocabulary of %llu tokens", (unsigned long long)n);
    char *p = t->arena;
    for (uint64_t i = 0; i < n; i++) {
        pt_gguf_str s = tokens->v.arr.items[i].v.s;
        pt_vocab_entry *e = &t->vocab[i];
        if (s.len) memcpy(p, s.ptr, (size_t)s.len);
        p[s.len] = 0;
        e->text = p;
        e->len = (uint32_t)s.len;
        p += s.len + 1;
        e->type = types ? (int32_t)pt_gguf_arr_i64(types, i) : PT_TOKEN_NORMAL;
        e->score = scores ? (float)pt_gguf_arr_f64(scores, i) : 0.0f;
        e->byte = -1;
        unsigned v;
        char tail;
        /* "<0xXX>": exactly six bytes, two hex digits */
        if (e->type == PT_TOKEN_BYTE && e->len == 6 && sscanf(e->text, "<0x%2x%c", &v, &tail) == 2 &&
            tail == '>' && v < 256)
            e->byte = (int16_t)v;
    }
    if (!pt_vocab_index_build(t)) return pt_fail(err, PT_ERR_NOMEM, "no memory for the vocabulary index");
    return PT_OK;
}

pt_status pt_tokenizer_load(const pt_gguf *g, pt_tokenizer **out, pt_error *err) {
    if (!out) return pt_fail(err, PT_ERR_ARG, "pt_tokenizer_load: out is NULL");
    *out = NULL;
    if (!g) return pt_fail(err, PT_ERR_ARG, "pt_tokenizer_load: no GGUF");
    pt_gguf_str model;
    if (!pt_gguf_get_str(g, "tokenizer.ggml.model", &model))
        return pt_fail(err, PT_ERR_FORMAT, "no tokenizer.ggml.model key: the GGUF carries no tokenizer");
    pt_tok_kind kind;
    if (pt_gguf_str_eq(model, "gpt2"))
        kind = PT_TOK_GPT2;
    else if (pt_gguf_str_eq(model, "llama"))
        kind = PT_TOK_SPM;
    else
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "tokenizer.ggml.model \"%.*s\" is not supported (petrel reads gpt2 and llama)",
                       (int)(model.len > 32 ? 32 : model.len), model.ptr);

    pt_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return pt_fail(err, PT_ERR_NOMEM, "no memory for the tokenizer");
    t->kind = kind;
    pt_status st = load_vocab(t, g, err);
    if (st == PT_OK) st = kind == PT_TOK_GPT2 ? pt_bpe_load(t, g, err) : pt_spm_load(t, g, err);
    if (st != PT_OK) {
        pt_tokenizer_free(t);
        return st;
    }

    /* SentencePiece vocabularies put <unk> <s> </s> at 0 1 2 by convention. */
    bool spm = kind == PT_TOK_SPM;
    int n = t->n_vocab;
    t->bos = get_id(g, "tokenizer.ggml.bos_token_id", n, spm && n > 1 ? 1 : -1);
    t->eos = get_id(g, "tokenizer.ggml.eos_token_id", n, spm && n > 2 ? 2 : -1);
    t->unk = get_id(g, "tokenizer.ggml.unknown_token_id", n, spm ? 0 : -1);
    t->eot = get_id(g, "tokenizer.ggml.eot_token_id", n, -1);
    t->eom = get_id(g, "tokenizer.ggml.eom_token_id", n, -1);
    /* llama.cpp's defaults: SentencePiece and Llama 3 add BOS, GPT-2 style
     * vocabularies do not; add_space_prefix only matters for SentencePiece. */
    bool bos_default = spm || (t->pretok.name && strcmp(t->pretok.name, "llama3") == 0);
    t->add_bos = get_bool(g, "tokenizer.ggml.add_bos_token", bos_default);
    t->add_eos = get_bool(g, "tokenizer.ggml.add_eos_token", false);
    t->add_space_prefix = get_bool(g, "tokenizer.ggml.add_space_prefix", spm);

    add_eog(t, t->eos);
    add_eog(t, t->eot);
    add_eog(t, t->eom);
    for (size_t i = 0; i < sizeof EOG_TEXTS / sizeof EOG_TEXTS[0]; i++)
        add_eog(t, pt_tokenizer_find(t, EOG_TEXTS[i]));

    if (!build_specials(t)) {
        pt_tokenizer_free(t);
        return pt_fail(err, PT_ERR_NOMEM, "no memory for the special-token table");
    }
    *out = t;
    return PT_OK;
}

/* ---- encoding ----------------------------------------------------------- */

/* The longest special token that starts at s and may be matched, or -1. */
static pt_token match_special(const pt_tokenizer *t, const char *s, size_t n, bool parse_special) {
    unsigned char b = (unsigned char)s[0];
    for (uint32_t i = t->special_first[b]; i < t->special_first[b + 1]; i++) {
        const pt_vocab_entry *e = &t->vocab[t->special[i]];
        if (e->len > n || memcmp(e->text, s, e->len) != 0) continue;
        /* USER_DEFINED tokens are plain text that must stay whole: always
         * matched (HF added tokens with special=false, llama.cpp alike). */
        if (parse_special || e->type == PT_TOKEN_USER_DEFINED) return t->special[i];
    }
    return -1;
}

static bool encode_raw(const pt_tokenizer *t, const char *s, size_t n, bool after_special, pt_tokvec *v) {
    if (t->kind == PT_TOK_GPT2) return pt_bpe_encode(t, s, n, v);
    /* SentencePiece: the dummy " " prefix goes before the text at the start
     * and after every special token (llama.cpp; HF Llama "legacy" mode). */
    return pt_spm_encode(t, s, n, t->add_space_prefix && after_special, v);
}

/* Whether [lo, hi) overlaps one of plain[0..n). */
static bool overlaps_plain(const pt_text_span *plain, int n, size_t lo, size_t hi) {
    for (int k = 0; k < n; k++)
        if (plain[k].lo < hi && lo < plain[k].hi) return true;
    return false;
}

/* The special token that may start at text[i]: parse_special, except
 * inside the plain spans. */
static pt_token special_at(const pt_tokenizer *t, const char *text, size_t len, size_t i,
                           bool parse_special, const pt_text_span *plain, int n_plain) {
    pt_token sp = match_special(t, text + i, len - i, parse_special);
    if (sp >= 0 && parse_special && n_plain > 0 && t->vocab[sp].type != PT_TOKEN_USER_DEFINED &&
        overlaps_plain(plain, n_plain, i, i + t->vocab[sp].len))
        sp = match_special(t, text + i, len - i, false);
    return sp;
}

static int encode(const pt_tokenizer *t, const char *text, size_t len, bool add_special,
                  bool parse_special, const pt_text_span *plain, int n_plain, pt_token *out,
                  int cap);

int pt_tokenizer_encode(const pt_tokenizer *t, const char *text, size_t len, bool add_special,
                        bool parse_special, pt_token *out, int cap) {
    return encode(t, text, len, add_special, parse_special, NULL, 0, out, cap);
}

int pt_tokenizer_encode_spans(const pt_tokenizer *t, const char *text, size_t len, bool add_special,
                              const pt_text_span *plain, int n_plain, pt_token *out, int cap) {
    if (n_plain < 0 || (n_plain > 0 && !plain)) return -1;
    return encode(t, text, len, add_special, true, plain, n_plain, out, cap);
}

static int encode(const pt_tokenizer *t, const char *text, size_t len, bool add_special,
                  bool parse_special, const pt_text_span *plain, int n_plain, pt_token *out,
                  int cap) {
    if (!t || (!text && len > 0) || cap < 0 || (!out && cap > 0)) return -1;
    pt_tokvec v = {0};
    bool ok = true;
    if (add_special && t->add_bos && t->bos >= 0) ok = pt_tokvec_push(&v, t->bos);

    /* Cut the text at special tokens (leftmost, then longest); the pieces
     * between them go to the model's own encoder. */
    bool after_special = true;
    size_t frag = 0, i = 0;
    while (ok && i < len) {
        pt_token sp = t->n_special ? special_at(t, text, len, i, parse_special, plain, n_plain) : -1;
        if (sp < 0) {
            i++;
            continue;
        }
        if (i > frag) {
            ok = encode_raw(t, text + frag, i - frag, after_special, &v);
            after_special = false;
        }
        ok = ok && pt_tokvec_push(&v, sp);
        after_special = true;
        i += t->vocab[sp].len;
        frag = i;
    }
    if (ok && len > frag) ok = encode_raw(t, text + frag, len - frag, after_special, &v);
    if (ok && add_special && t->add_eos && t->eos >= 0) ok = pt_tokvec_push(&v, t->eos);

    int result = -1;
    if (ok && v.n <= INT_MAX) {
        size_t k = v.n < (size_t)cap ? v.n : (size_t)cap;
        if (k) memcpy(out, v.v, k * sizeof *out);
        result = (int)v.n;
    }
    free(v.v);
    return result;
}

/* ---- decoding ----------------------------------------------------------- */

static size_t copy_out(const char *s, size_t n, char *buf, size_t cap) {
    if (buf && cap) memcpy(buf, s, n < cap ? n : cap);
    return n;
}

/* SentencePiece text: "▁" (E2 96 81) back to a space. */
static size_t unescape_spaces(const char *s, size_t n, char *buf, size_t cap) {
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
            if (w < cap) buf[w] = ' ';
            w++;
            i += 3;
        } else {
            if (w < cap) buf[w] = s[i];
            w++;
            i++;
        }
    }
    return w;
}

size_t pt_tokenizer_decode(const pt_tokenizer *t, pt_token tok, bool render_special, char *buf,
                           size_t cap) {
    if (!t || tok < 0 || tok >= t->n_vocab) return 0;
    if (!buf) cap = 0;
    const pt_vocab_entry *e = &t->vocab[tok];
    switch (e->type) {
    case PT_TOKEN_CONTROL:
    case PT_TOKEN_UNKNOWN:
        return render_special ? copy_out(e->text, e->len, buf, cap) : 0;
    case PT_TOKEN_UNUSED:
        return 0;
    case PT_TOKEN_BYTE:
        if (e->byte >= 0) {
            if (cap) buf[0] = (char)e->byte;
            return 1;
        }
        return copy_out(e->text, e->len, buf, cap);
    case PT_TOKEN_USER_DEFINED:
        /* Added text, stored as is (not in the byte alphabet). */
        if (t->kind == PT_TOK_GPT2) return copy_out(e->text, e->len, buf, cap);
        return unescape_spaces(e->text, e->len, buf, cap);
    default:
        if (t->kind == PT_TOK_GPT2) return pt_bpe_text_to_bytes(e->text, e->len, buf, cap);
        return unescape_spaces(e->text, e->len, buf, cap);
    }
}

/* ---- accessors ---------------------------------------------------------- */

const char *pt_tokenizer_kind(const pt_tokenizer *t) {
    return t->kind == PT_TOK_GPT2 ? "gpt2" : "llama";
}

int pt_tokenizer_n_vocab(const pt_tokenizer *t) { return t->n_vocab; }

const char *pt_tokenizer_piece(const pt_tokenizer *t, pt_token tok) {
    if (!t || tok < 0 || tok >= t->n_vocab) return NULL;
    return t->vocab[tok].text;
}

pt_token pt_tokenizer_find(const pt_tokenizer *t, const char *piece) {
    if (!t || !piece) return -1;
    return pt_vocab_lookup(t, piece, strlen(piece));
}

pt_token pt_tokenizer_bos(const pt_tokenizer *t) { return t->bos; }
pt_token pt_tokenizer_eos(const pt_tokenizer *t) { return t->eos; }

bool pt_tokenizer_is_eog(const pt_tokenizer *t, pt_token tok) {
    if (!t || tok < 0) return false;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == tok) return true;
    return false;
}
