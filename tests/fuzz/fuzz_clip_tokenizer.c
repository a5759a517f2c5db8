/*
 * fuzz_clip_tokenizer.c — the CLIP tokenizer (engine/diffusion/
 * clip_tokenizer.c) on arbitrary input. The first byte picks the mode:
 *   even: tokenize the rest of the input as text with the demo vocabulary
 *         (tools/demo_sd/tokenizer, loaded once), the flavour, max_len
 *         (2..77) and pad id from the next bytes;
 *   odd:  the rest is "VOCAB\x00MERGES\x00TEXT": parse a hostile
 *         vocab.json / merges.txt and, if they load, tokenize TEXT.
 * Invariants (abort when one breaks): a load either succeeds or gives a
 * one-line message; a tokenize gives PT_OK with ids[0] == BOS, n_real in
 * 2..max_len, ids[n_real - 1] == EOS, pad after it, every id in
 * [0, vocab size) or the pad id, and nothing written past max_len
 * (canaries).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clip_tokenizer.h"

#ifndef PETREL_TEST_DATA_DIR
#error "PETREL_TEST_DATA_DIR must name tests/data"
#endif

#define CANARY 0x5a5a5a5a

static sd_clip_tokenizer *demo[2]; /* per flavour, loaded once (harness statics) */

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) abort();
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void check_tokenize(const sd_clip_tokenizer *t, const char *text, size_t n, int max_len,
                           int32_t pad) {
    int32_t ids[77 + 4];
    for (int i = 0; i < 77 + 4; i++) ids[i] = CANARY;
    int n_real = -1;
    pt_error err = {0};
    pt_status st = sd_clip_tokenize(t, text, n, ids, max_len, pad, &n_real, &err);
    if (st == PT_ERR_NOMEM) return;
    if (st != PT_OK || n_real < 2 || n_real > max_len) abort();
    if (ids[0] != sd_clip_bos(t) || ids[n_real - 1] != sd_clip_eos(t)) abort();
    for (int i = 0; i < max_len; i++)
        if (ids[i] < 0 || (ids[i] >= sd_clip_vocab_size(t) && ids[i] != pad)) abort();
    for (int i = n_real; i < max_len; i++)
        if (ids[i] != pad) abort();
    for (int i = max_len; i < 77 + 4; i++)
        if (ids[i] != CANARY) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    pt_error err = {0};
    if ((data[0] & 1) == 0) {
        if (size < 3) return 0;
        sd_clip_flavour fl = (data[0] & 2) ? SD_CLIP_SLOW_NO_FTFY : SD_CLIP_TRANSFORMERS5;
        if (!demo[fl]) {
            size_t nv, nm;
            char *v = slurp(PETREL_TEST_DATA_DIR "/../../tools/demo_sd/tokenizer/vocab.json", &nv);
            char *m = slurp(PETREL_TEST_DATA_DIR "/../../tools/demo_sd/tokenizer/merges.txt", &nm);
            if (sd_clip_tokenizer_new(v, nv, m, nm, fl, &demo[fl], &err) != PT_OK) abort();
            free(v);
            free(m);
        }
        int max_len = 2 + data[1] % 76;
        int32_t pad = (data[0] & 4) ? 0 : sd_clip_eos(demo[fl]);
        check_tokenize(demo[fl], (const char *)data + 2, size - 2, max_len, pad);
        return 0;
    }
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    const char *z1 = memchr(p, 0, (size_t)(end - p));
    if (!z1) return 0;
    const char *z2 = memchr(z1 + 1, 0, (size_t)(end - z1 - 1));
    if (!z2) z2 = end;
    sd_clip_tokenizer *t = NULL;
    sd_clip_flavour fl = (data[0] & 2) ? SD_CLIP_SLOW_NO_FTFY : SD_CLIP_TRANSFORMERS5;
    pt_status st = sd_clip_tokenizer_new(p, (size_t)(z1 - p), z1 + 1, (size_t)(z2 - z1 - 1), fl, &t, &err);
    if (st != PT_OK) {
        if (t || !err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    const char *text = z2 < end ? z2 + 1 : end;
    check_tokenize(t, text, (size_t)(end - text), 77, 0);
    check_tokenize(t, text, (size_t)(end - text), 5, sd_clip_eos(t));
    sd_clip_tokenizer_free(t);
    return 0;
}
