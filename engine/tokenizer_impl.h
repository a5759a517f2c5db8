/*
 * tokenizer_impl.h — the inside of pt_tokenizer, shared by the tokenizer_*.c
 * files only. Everything here hangs off one pt_tokenizer and is read-only
 * after pt_tokenizer_load, so one tokenizer may encode on several threads
 * at once (each encode call allocates its own scratch).
 *
 * Files:
 *   tokenizer.c         loading, special-token splitting, encode entry, decode
 *   tokenizer_index.c   vocab hash, merge hash, bigram heap, id vector
 *   tokenizer_pretok.c  pre-tokenizer regexes per tokenizer.ggml.pre
 *   tokenizer_bpe.c     "gpt2": GPT-2 byte alphabet + BPE merges by rank
 *   tokenizer_spm.c     "llama": SentencePiece BPE by score + byte fallback
 */
#ifndef PETREL_TOKENIZER_IMPL_H
#define PETREL_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum pt_token_type {
    PT_TOKEN_UNDEFINED = 0,
    PT_TOKEN_NORMAL = 1,
    PT_TOKEN_UNKNOWN = 2,
    PT_TOKEN_CONTROL = 3,
    PT_TOKEN_USER_DEFINED = 4,
    PT_TOKEN_UNUSED = 5,
    PT_TOKEN_BYTE = 6,
};

typedef enum pt_tok_kind {
    PT_TOK_GPT2, /* byte-level BPE */
    PT_TOK_SPM,  /* SentencePiece BPE */
} pt_tok_kind;

typedef struct pt_vocab_entry {
    const char *text; /* NUL-terminated copy in pt_tokenizer.arena */
    uint32_t len;     /* bytes of text, without the NUL (text may hold NULs) */
    float score;      /* SentencePiece merge priority (higher merges first); 0 if absent */
    int32_t type;     /* enum pt_token_type; NORMAL when the file has no token_type */
    int16_t byte;     /* BYTE tokens "<0xXX>": the byte value; otherwise -1 */
} pt_vocab_entry;

/* Token text -> id. Open addressing with linear probing; slots[i] is id + 1,
 * 0 marks an empty slot; the keys are the vocabulary texts themselves.
 * mask + 1 is a power of two at least twice the vocabulary size, so a
 * probe always ends at an empty slot. */
typedef struct pt_vocab_index {
    uint32_t *slots;
    uint32_t mask;
} pt_vocab_index;

/* (left id, right id) -> (merge rank, merged id), for byte-level BPE.
 * key = (uint64_t)left << 32 | right; rank < 0 marks an empty slot. */
typedef struct pt_merge_slot {
    uint64_t key;
    int32_t rank;
    int32_t id;
} pt_merge_slot;

typedef struct pt_merge_index {
    pt_merge_slot *slots;
    uint64_t mask; /* capacity - 1; capacity a power of two >= 2 * n merges */
} pt_merge_index;

#define PT_PRETOK_MAX_REGEX 4

/* A pre-tokenizer: regexes applied in order, each splitting every piece the
 * previous one produced into matches and the gaps between them (both kept,
 * as HF's Split(behavior="isolated") and llama.cpp's unicode_regex_split). */
typedef struct pt_pretok {
    const char *name; /* canonical name of the regex set, e.g. "smollm" */
    int n_re;
    pcre2_code *re[PT_PRETOK_MAX_REGEX];
    bool ignore_merges; /* a word that is itself a token skips BPE (llama3) */
} pt_pretok;

#define PT_EOG_MAX 16

struct pt_tokenizer {
    pt_tok_kind kind;
    int n_vocab;
    pt_vocab_entry *vocab; /* n_vocab entries */
    char *arena;           /* all token texts, each NUL-terminated */
    pt_vocab_index index;

    pt_token bos, eos, unk, eot, eom; /* -1 when absent */
    bool add_bos, add_eos;
    bool add_space_prefix;            /* SPM: prepend " " to text after a special token or at the start */

    pt_token eog[PT_EOG_MAX]; /* end-of-generation ids, no duplicates */
    int n_eog;

    /* Tokens matched literally before any other splitting: CONTROL and
     * UNKNOWN tokens when parse_special, USER_DEFINED always. Sorted by
     * first byte, then by length descending, so the first hit at a position
     * is the longest; special_first[b] .. special_first[b + 1] - 1 are the
     * ones starting with byte b. */
    pt_token *special;
    int n_special;
    uint32_t special_first[257];

    /* gpt2 only */
    pt_merge_index merges;
    pt_pretok pretok;
    /* gpt2: id of the one-character token for byte b in the GPT-2 byte
     * alphabet; spm: id of the "<0xXX>" byte-fallback token. -1 if none. */
    pt_token byte_token[256];
};

/* ---- growable id list (tokenizer_index.c) ---- */

typedef struct pt_tokvec {
    pt_token *v;
    size_t n, cap;
} pt_tokvec;

bool pt_tokvec_push(pt_tokvec *vec, pt_token id); /* false when out of memory */

/* ---- vocabulary index ---- */

bool pt_vocab_index_build(pt_tokenizer *t);
/* Id of the token whose text is a followed by b (either may be empty), or -1. */
pt_token pt_vocab_lookup2(const pt_tokenizer *t, const char *a, size_t na, const char *b, size_t nb);
static inline pt_token pt_vocab_lookup(const pt_tokenizer *t, const char *s, size_t n) {
    return pt_vocab_lookup2(t, s, n, NULL, 0);
}

/* ---- merge index ---- */

bool pt_merge_index_init(pt_merge_index *m, uint64_t n_merges);
/* Adds the pair unless present (the first, lowest rank wins). */
void pt_merge_index_add(pt_merge_index *m, pt_token left, pt_token right, int32_t rank, pt_token merged);
/* Rank of merging left+right (-1 when they do not merge); *merged gets the id. */
int32_t pt_merge_index_find(const pt_merge_index *m, pt_token left, pt_token right, pt_token *merged);

/* ---- bigram heap: the next merge to apply ---- */

/* A candidate merge of the symbols at left and right (adjacent when
 * pushed). prio is the rank (BPE) or minus the score (SPM): the smallest
 * prio pops first, ties go to the leftmost pair, as in HF and
 * SentencePiece. size is the byte length of the merged text (SPM uses it
 * to detect stale entries). */
typedef struct pt_bigram {
    double prio;
    int32_t left, right;
    uint32_t size;
} pt_bigram;

typedef struct pt_bigram_heap {
    pt_bigram *v;
    size_t n, cap;
} pt_bigram_heap;

bool pt_bigram_push(pt_bigram_heap *h, pt_bigram b);
bool pt_bigram_pop(pt_bigram_heap *h, pt_bigram *out); /* false when empty */

/* ---- pre-tokenizer (tokenizer_pretok.c) ---- */

/* Pick the regex set for tokenizer.ggml.pre (NULL or "" -> "default") and
 * compile it. PT_ERR_UNSUPPORTED for a name petrel does not know. */
pt_status pt_pretok_init(pt_pretok *p, const char *pre, size_t pre_len, pt_error *err);
void pt_pretok_free(pt_pretok *p);

/* A piece of the input: bytes [off, off + len). */
typedef struct pt_span {
    size_t off, len;
} pt_span;

typedef struct pt_spanvec {
    pt_span *v;
    size_t n, cap;
} pt_spanvec;

/* Split text[0..len) into words; *out is reset and filled in order (the
 * words tile the text exactly). Invalid UTF-8 never matches a regex and so
 * ends up in gap words. Returns false on out-of-memory or a regex error. */
bool pt_pretok_split(const pt_pretok *p, const char *text, size_t len, pt_spanvec *out);

/* ---- models ---- */

/* Byte-level BPE tables (tokenizer_bpe.c): merges, byte_token, pretok. */
pt_status pt_bpe_load(pt_tokenizer *t, const pt_gguf *g, pt_error *err);
/* Append the ids of raw text (no special tokens inside) to out. */
bool pt_bpe_encode(const pt_tokenizer *t, const char *text, size_t len, pt_tokvec *out);
/* Bytes of a byte-level token text (GPT-2 alphabet back to bytes), written
 * up to cap; returns the full count. */
size_t pt_bpe_text_to_bytes(const char *text, size_t len, char *buf, size_t cap);

/* SentencePiece tables (tokenizer_spm.c): byte_token. */
pt_status pt_spm_load(pt_tokenizer *t, const pt_gguf *g, pt_error *err);
/* Append the ids of raw text; with_prefix prepends the " " of add_space_prefix. */
bool pt_spm_encode(const pt_tokenizer *t, const char *text, size_t len, bool with_prefix,
                   pt_tokvec *out);

#endif
