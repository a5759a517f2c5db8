/*
 * fuzz_session.c — the saved-session reader (engine/session.c,
 * pt_session_load_memory) against a context of the tiny llama model
 * (tests/data/tiny_llama.gguf, loaded once on the reference CPU path).
 *
 * Input: one flag byte, then the file. Flag bit 0: write the right CRC
 * into the file's last 4 bytes first, so that mutations reach the checks
 * behind the CRC (a fuzzer seldom guesses a CRC-32).
 * Each input goes to a fresh 16-token context that holds 3 tokens. Checks:
 * a refused file gives a one-line reason and leaves the context as it was
 * (n_past, tokens, logits); an accepted one gives at most n_ctx tokens,
 * all in the vocabulary, and the context then decodes one more token.
 * Seeds: sessions of 0, 2 and 5 tokens saved by pt_context_save_session.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "petrel.h"
#include "session.h"

static pt_model *tiny_model(void) {
    static pt_model *m; /* the one model every input is loaded for */
    static int tried;
    if (!tried) {
        tried = 1;
        pt_model_params mp = pt_model_default_params();
        mp.cpu = "ref";
        pt_error err;
        if (pt_model_load(PETREL_TEST_DATA_DIR "/tiny_llama.gguf", &mp, &m, &err) != PT_OK)
            fprintf(stderr, "fuzz_session: %s\n", err.msg);
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pt_model *m = tiny_model();
    if (!m || size < 1) return 0;
    const uint8_t flags = data[0];
    size_t n = size - 1;
    uint8_t *file = malloc(n ? n : 1);
    if (!file) return 0;
    memcpy(file, data + 1, n);
    if ((flags & 1) && n >= 4) {
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), file, (uInt)(n - 4));
        for (int i = 0; i < 4; i++) file[n - 4 + i] = (uint8_t)(crc >> (8 * i));
    }
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 16;
    cp.n_threads = 1;
    pt_context *c = NULL;
    pt_error err;
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) {
        free(file);
        return 0;
    }
    const pt_token start[3] = {1, 2, 3};
    pt_decode(c, start, 3, NULL, &err);
    pt_model_info info;
    pt_model_get_info(m, &info);
    float *before = malloc(sizeof(float) * (size_t)info.n_vocab);
    memcpy(before, pt_context_logits(c), sizeof(float) * (size_t)info.n_vocab);
    err.msg[0] = 0;
    pt_status st = pt_session_load_memory(c, file, n, &err);
    int nt = 0;
    const pt_token *t = pt_context_tokens(c, &nt);
    if (st != PT_OK) {
        if (!err.msg[0] || strchr(err.msg, '\n')) abort(); /* one line, always */
        if (nt != 3 || memcmp(t, start, sizeof start) != 0) abort();
        if (memcmp(pt_context_logits(c), before, sizeof(float) * (size_t)info.n_vocab) != 0) abort();
    } else {
        if (nt < 0 || nt > 16) abort();
        for (int i = 0; i < nt; i++)
            if (t[i] < 0 || t[i] >= info.n_vocab) abort();
        if (nt < 16) {
            const pt_token one = 4;
            if (pt_decode(c, &one, 1, NULL, &err) != PT_OK) abort();
        }
    }
    free(before);
    pt_context_free(c);
    free(file);
    return 0;
}
