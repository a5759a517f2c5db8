/*
 * tokenizer.h — tokenizers built from GGUF metadata (tokenizer.ggml.*).
 * Internal to the engine; the public entry points in petrel.h wrap these.
 *
 *   "gpt2"  byte-level BPE: pre-tokenizer regex chosen by tokenizer.ggml.pre
 *           (PCRE2 with Unicode properties), bytes mapped to the GPT-2 byte
 *           alphabet, merges ranked by tokenizer.ggml.merges.
 *   "llama" SentencePiece BPE: spaces as U+2581, merges by tokenizer.ggml.scores,
 *           <0xXX> byte fallback for characters outside the vocabulary.
 */
#ifndef PETREL_TOKENIZER_H
#define PETREL_TOKENIZER_H

#include "gguf.h"
#include "petrel.h"

typedef struct pt_tokenizer pt_tokenizer;

pt_status pt_tokenizer_load(const pt_gguf *g, pt_tokenizer **out, pt_error *err);
void pt_tokenizer_free(pt_tokenizer *t);

const char *pt_tokenizer_kind(const pt_tokenizer *t); /* "gpt2" or "llama" */
int pt_tokenizer_n_vocab(const pt_tokenizer *t);

/* Same contract as pt_tokenize in petrel.h. */
int pt_tokenizer_encode(const pt_tokenizer *t, const char *text, size_t len,
                        bool add_special, bool parse_special, pt_token *out, int cap);

/* A byte range [lo, hi) of a text. */
typedef struct pt_text_span {
    size_t lo, hi;
} pt_text_span;

/* pt_tokenizer_encode with parse_special on, except that no special token
 * overlapping one of plain[0..n_plain) is parsed there (that text is
 * encoded as with parse_special off). */
int pt_tokenizer_encode_spans(const pt_tokenizer *t, const char *text, size_t len, bool add_special,
                              const pt_text_span *plain, int n_plain, pt_token *out, int cap);

/* Same contract as pt_token_to_bytes in petrel.h. */
size_t pt_tokenizer_decode(const pt_tokenizer *t, pt_token tok, bool render_special,
                           char *buf, size_t cap);

/* The token's text as stored in the vocabulary (e.g. "<|im_end|>"), or NULL. */
const char *pt_tokenizer_piece(const pt_tokenizer *t, pt_token tok);
/* Id of a vocabulary entry with exactly this text, or -1. */
pt_token pt_tokenizer_find(const pt_tokenizer *t, const char *piece);

pt_token pt_tokenizer_bos(const pt_tokenizer *t); /* -1 when none */
pt_token pt_tokenizer_eos(const pt_tokenizer *t);
bool pt_tokenizer_is_eog(const pt_tokenizer *t, pt_token tok);

#endif
