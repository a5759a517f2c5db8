/*
 * fuzz_kld_base.c — the reader of llama-perplexity's log-probability files
 * (app/kld_file.h, `petrel perplexity --kl-divergence`) on arbitrary bytes
 * (a FILE from fmemopen). An accepted file must give every row it
 * promises, each row's floats in the checked range, a finite KL divergence
 * against uniform logits, and written back through kld_write_header /
 * kld_write_row the very same bytes; a refused one a one-line reason.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kld_file.h"
#include "ppl_math.h"

static void must(int cond) {
    if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0; /* fmemopen refuses an empty buffer */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    kld_reader r;
    char why[320] = "";
    if (!kld_reader_open(&r, f, size, why, sizeof why)) {
        must(why[0] != 0 && strchr(why, '\n') == NULL);
        fclose(f);
        return 0;
    }
    must(r.n_ctx >= 4 && r.n_vocab >= 1 && r.n_chunk >= 1 && r.n_rows == KLD_ROWS(r.n_ctx));
    char *copy = NULL;
    size_t copy_len = 0;
    FILE *out = open_memstream(&copy, &copy_len);
    must(out && kld_write_header(out, r.n_ctx, r.n_vocab, r.n_chunk, r.tokens));
    uint16_t *row = malloc(r.row_u16 * sizeof *row);
    float *logits = calloc((size_t)r.n_vocab, sizeof *logits); /* uniform */
    must(row && logits);
    kld_sums sums = {0};
    for (int c = 0; c < r.n_chunk; c++) {
        for (int i = 0; i < r.n_rows; i++) {
            must(kld_reader_row(&r, row, why, sizeof why));
            const float scale = kld_row_scale(row), min_lp = kld_row_min_lp(row);
            must(scale >= 0 && scale < 1e-3f && min_lp <= 0 && min_lp >= -40);
            float kld, p_diff;
            const int tok = r.tokens[(size_t)c * (size_t)r.n_ctx + (size_t)i + (size_t)(r.n_ctx / 2) + 1];
            must(tok >= 0 && tok < r.n_vocab);
            kld_accumulate(logits, r.n_vocab, row, tok, &sums, &kld, &p_diff);
            must(isfinite(kld) && isfinite(p_diff));
            must(kld_write_row(out, row, r.row_u16));
        }
    }
    must(!kld_reader_row(&r, row, why, sizeof why)); /* nothing past the last row */
    must(sums.count == (size_t)r.n_chunk * (size_t)r.n_rows && sums.n_same_top <= sums.count);
    fclose(out);
    must(copy_len == size && memcmp(copy, data, size) == 0);
    free(copy);
    free(row);
    free(logits);
    kld_reader_free(&r);
    fclose(f);
    return 0;
}
