/*
 * fuzz_tokenizer.c — encode and decode arbitrary bytes with a byte-level
 * BPE vocabulary (tests/data/tiny_llama.gguf, "gpt2") and a SentencePiece
 * one (tests/data/spm_tiny.gguf, a vocabulary-only GGUF, so the
 * tokenizer is loaded with the engine's own pt_tokenizer_load, the code
 * pt_tokenize runs). The first input byte picks the
 * vocabulary and the flags; the rest is the text. Invariants (abort when
 * one breaks):
 *   - the count returned with a small buffer equals the count from a big
 *     enough buffer, and the ids written agree;
 *   - nothing is written past cap (canaries after the buffer);
 *   - every id produced is in [0, n_vocab) and its bytes fit the size
 *     reported, with nothing written past cap;
 *   - byte-level BPE with specials off: decode(encode(x)) == x for valid
 *     UTF-8 x (its alphabet covers every byte, and it does not normalize).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tokenizer.h"
#include "utf8.h"

#ifndef PETREL_TEST_DATA_DIR
#error "PETREL_TEST_DATA_DIR must name tests/data"
#endif

#define CANARY ((pt_token)0x5a5a5a5a)
enum { N_CANARY = 4, SMALL_CAP = 3 };

/* The two fixture vocabularies, loaded once per process and kept (fuzz
 * harness statics; the gguf stays open: the tokenizer points into it). */
static pt_gguf *bpe_gguf, *spm_gguf;
static pt_tokenizer *bpe_tok, *spm_tok;

static pt_tokenizer *load_fixture(const char *path, pt_gguf **g) {
    pt_tokenizer *t = NULL;
    pt_error err;
    if (pt_gguf_open(path, g, &err) != PT_OK || pt_tokenizer_load(*g, &t, &err) != PT_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.msg);
        abort();
    }
    return t;
}

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_tokenizer: invariant broken: %s\n", what);
        abort();
    }
}

/* Decode every token; returns the concatenated bytes (malloc'd) in *out. */
static size_t decode_all(const pt_tokenizer *m, const pt_token *toks, int n, bool render_special,
                         char **out) {
    int n_vocab = pt_tokenizer_n_vocab(m);
    size_t total = 0, cap = 64;
    char *text = malloc(cap);
    check(text != NULL, "malloc");
    for (int i = 0; i < n; i++) {
        check(toks[i] >= 0 && toks[i] < n_vocab, "token id in range");
        char small[4 + N_CANARY];
        memset(small, 0x5a, sizeof small);
        size_t need = pt_tokenizer_decode(m, toks[i], render_special, small, 4);
        for (int k = 4; k < 4 + N_CANARY; k++) check(small[k] == 0x5a, "piece written past cap");
        if (total + need + 1 > cap) {
            while (total + need + 1 > cap) cap *= 2;
            text = realloc(text, cap);
            check(text != NULL, "realloc");
        }
        size_t again = pt_tokenizer_decode(m, toks[i], render_special, text + total, need);
        check(again == need, "piece size stable");
        total += need;
    }
    *out = text;
    return total;
}

static void fuzz_one(const pt_tokenizer *m, bool byte_level, const char *text, size_t len,
                     bool add_special, bool parse_special, bool render_special) {
    pt_token small[SMALL_CAP + N_CANARY];
    for (int k = 0; k < SMALL_CAP + N_CANARY; k++) small[k] = CANARY;
    int n = pt_tokenizer_encode(m, text, len, add_special, parse_special, small, SMALL_CAP);
    for (int k = SMALL_CAP; k < SMALL_CAP + N_CANARY; k++) check(small[k] == CANARY, "id written past cap");
    if (n < 0) return;
    pt_token *all = malloc(((size_t)n + N_CANARY) * sizeof *all);
    check(all != NULL, "malloc");
    for (int k = 0; k < n + N_CANARY; k++) all[k] = CANARY;
    int n2 = pt_tokenizer_encode(m, text, len, add_special, parse_special, all, n);
    check(n2 == n, "count matches with a big enough buffer");
    for (int k = n; k < n + N_CANARY; k++) check(all[k] == CANARY, "id written past cap (big)");
    for (int k = 0; k < n && k < SMALL_CAP; k++) check(all[k] == small[k], "same ids with both buffers");
    char *decoded = NULL;
    size_t dlen = decode_all(m, all, n, render_special, &decoded);
    if (byte_level && !add_special && !parse_special && pt_utf8_valid(text, len))
        check(dlen == len && memcmp(decoded, text, len) == 0, "byte-level BPE round trip");
    free(decoded);
    free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!bpe_tok) {
        bpe_tok = load_fixture(PETREL_TEST_DATA_DIR "/tiny_llama.gguf", &bpe_gguf);
        spm_tok = load_fixture(PETREL_TEST_DATA_DIR "/spm_tiny.gguf", &spm_gguf);
    }
    if (size < 1) return 0;
    uint8_t flags = data[0];
    bool spm = flags & 1;
    const char *text = (const char *)data + 1;
    fuzz_one(spm ? spm_tok : bpe_tok, !spm, text, size - 1, flags & 2, flags & 4, flags & 8);
    return 0;
}
