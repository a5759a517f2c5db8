/*
 * kld_file.h — llama-perplexity's file of a reference model's
 * log-probabilities (--kl-divergence-base), read and written byte for byte
 * as llama.cpp does (tools/perplexity/perplexity.cpp of the llama.cpp in
 * the llama-cpp-python 0.3.36 sdist), so either tool reads the other's.
 *
 * On-disk layout, little-endian, no padding:
 *   char     magic[8]      "_logits_"
 *   int32    n_ctx         tokens per chunk
 *   int32    n_vocab
 *   int32    n_chunk
 *   int32    tokens[n_chunk * n_ctx]   the text's tokens as tokenized
 *                          (the BOS put in each chunk's first place is not
 *                          stored: the reader puts it back)
 *   then, chunk after chunk, one row per scored position: positions
 *   first = n_ctx/2 .. n_ctx-2 of the chunk (KLD_ROWS(n_ctx) of them), the
 *   distribution over the token that follows. A row is KLD_ROW_U16(n_vocab)
 *   uint16 words:
 *     words 0-1  float scale    (max - min logit) / 65535, >= 0
 *     words 2-3  float min_lp   the smallest log-probability kept (<= 0)
 *     words 4..  uint16 q[n_vocab] (+ one 0 word when n_vocab is odd)
 *   and token i's log-probability is scale * q[i] + min_lp. Logits more
 *   than 16 below the top are clamped to q = 0 (ppl_math.h encodes a row).
 */
#ifndef PETREL_KLD_FILE_H
#define PETREL_KLD_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "petrel.h"

#define KLD_MAGIC "_logits_"
#define KLD_HEADER_BYTES 20
/* scored positions per chunk: n_ctx/2 .. n_ctx-2 */
#define KLD_ROWS(n_ctx) ((n_ctx) - 1 - (n_ctx) / 2)
/* uint16 words per row: 4 for the two floats, n_vocab rounded up to even */
#define KLD_ROW_U16(n_vocab) (2 * (((size_t)(n_vocab) + 1) / 2) + 4)

/* Limits of what the reader accepts (petrel's -c range; a vocabulary far
 * above any real model's). */
#define KLD_MAX_CTX (1 << 22)
#define KLD_MAX_VOCAB (1 << 24)

/* A base file open for reading: the header and tokens read and checked,
 * the rows read one at a time in file order. */
typedef struct kld_reader {
    FILE *f;
    int n_ctx, n_vocab, n_chunk;
    pt_token *tokens;          /* [n_chunk * n_ctx], malloc'd */
    int n_rows;                /* KLD_ROWS(n_ctx) */
    size_t row_u16;            /* KLD_ROW_U16(n_vocab) */
    uint64_t rows_read;
} kld_reader;

/* Read and check f (size bytes long, positioned at its start): the magic,
 * n_ctx in [4, KLD_MAX_CTX], n_vocab in [1, KLD_MAX_VOCAB], n_chunk >= 1,
 * the size exactly what those give (a truncated file or trailing bytes
 * are refused), every token in [0, n_vocab), and every row's scale and
 * min_lp in the range llama-perplexity writes. false with a one-line
 * reason in why (nothing to free). The reader does not own f. */
bool kld_reader_open(kld_reader *r, FILE *f, uint64_t size, char *why, size_t why_cap);
/* The next row into row[0..row_u16); false (why set) on a read error or
 * past the last row. */
bool kld_reader_row(kld_reader *r, uint16_t *row, char *why, size_t why_cap);
void kld_reader_free(kld_reader *r);

/* A row's two floats (words 0-1 and 2-3). */
float kld_row_scale(const uint16_t *row);
float kld_row_min_lp(const uint16_t *row);
void kld_row_set_floats(uint16_t *row, float scale, float min_lp);

/* Writing: the header and tokens, then rows with kld_write_row. false on a
 * write error (errno set). */
bool kld_write_header(FILE *f, int n_ctx, int n_vocab, int n_chunk, const pt_token *tokens);
bool kld_write_row(FILE *f, const uint16_t *row, size_t row_u16);

#endif
