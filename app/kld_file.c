/* kld_file.c — llama-perplexity's log-probability file (kld_file.h). */
#include "kld_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The format is llama.cpp's raw in-memory words; petrel reads and writes
 * them as they are, so only little-endian hosts (every target petrel has:
 * x86-64, arm64) are supported. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "kld_file.c assumes a little-endian host");
_Static_assert(sizeof(float) == 4 && sizeof(pt_token) == 4, "the file holds 4-byte floats and tokens");

/* What llama-perplexity can write: scale = (max - min) / 65535 with max -
 * min <= 16 (plus float rounding), min_lp = min - max - log(sum exp) in
 * [-16 - ln(n_vocab), 0] (ln(2^24) < 17). */
#define KLD_SCALE_MAX (16.5f / 65535.0f)
#define KLD_MIN_LP_MIN (-40.0f)

static int32_t get_i32(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

float kld_row_scale(const uint16_t *row) {
    float v;
    memcpy(&v, row, 4);
    return v;
}

float kld_row_min_lp(const uint16_t *row) {
    float v;
    memcpy(&v, row + 2, 4);
    return v;
}

void kld_row_set_floats(uint16_t *row, float scale, float min_lp) {
    memcpy(row, &scale, 4);
    memcpy(row + 2, &min_lp, 4);
}

static bool fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return false;
}

static bool read_exact(FILE *f, void *buf, size_t n) {
    return fread(buf, 1, n, f) == n;
}

/* Check the two floats of every row without reading the rest: rows start
 * at data_off and are row_bytes apart. */
static bool check_rows(kld_reader *r, uint64_t data_off, uint64_t row_bytes, uint64_t n, char *why,
                       size_t cap) {
    for (uint64_t i = 0; i < n; i++) {
        unsigned char b[8];
        if (fseeko(r->f, (off_t)(data_off + i * row_bytes), SEEK_SET) != 0 || !read_exact(r->f, b, 8))
            return fail(why, cap, "cannot read row %llu of the base file", (unsigned long long)i);
        uint16_t w[4];
        memcpy(w, b, 8);
        const float scale = kld_row_scale(w), min_lp = kld_row_min_lp(w);
        if (!(scale >= 0 && scale <= KLD_SCALE_MAX && min_lp <= 0 && min_lp >= KLD_MIN_LP_MIN))
            return fail(why, cap,
                        "corrupt base file: row %llu of chunk %llu has scale %g, offset %g "
                        "(llama-perplexity writes 0..%g and %g..0)",
                        (unsigned long long)(i % (uint64_t)r->n_rows), (unsigned long long)(i / (uint64_t)r->n_rows),
                        (double)scale, (double)min_lp, (double)KLD_SCALE_MAX, (double)KLD_MIN_LP_MIN);
    }
    return fseeko(r->f, (off_t)data_off, SEEK_SET) == 0 ||
           fail(why, cap, "cannot seek in the base file: %s", strerror(errno));
}

bool kld_reader_open(kld_reader *r, FILE *f, uint64_t size, char *why, size_t cap) {
    memset(r, 0, sizeof *r);
    r->f = f;
    unsigned char h[KLD_HEADER_BYTES];
    const size_t got = fread(h, 1, sizeof h, f);
    if (got >= 8 && memcmp(h, KLD_MAGIC, 8) != 0)
        return fail(why, cap, "not a llama-perplexity log-probability file (no \"_logits_\" magic)");
    if (got < sizeof h)
        return fail(why, cap, "truncated base file: %llu bytes, the header alone is %d",
                    (unsigned long long)size, KLD_HEADER_BYTES);
    const int32_t n_ctx = get_i32(h + 8), n_vocab = get_i32(h + 12), n_chunk = get_i32(h + 16);
    if (n_ctx < 4 || n_ctx > KLD_MAX_CTX)
        return fail(why, cap, "corrupt base file: n_ctx %d is not in [4, %d]", n_ctx, KLD_MAX_CTX);
    if (n_vocab < 1 || n_vocab > KLD_MAX_VOCAB)
        return fail(why, cap, "corrupt base file: n_vocab %d is not in [1, %d]", n_vocab, KLD_MAX_VOCAB);
    if (n_chunk < 1) return fail(why, cap, "corrupt base file: n_chunk %d is not positive", n_chunk);
    r->n_ctx = n_ctx;
    r->n_vocab = n_vocab;
    r->n_chunk = n_chunk;
    r->n_rows = KLD_ROWS(n_ctx);
    r->row_u16 = KLD_ROW_U16(n_vocab);
    /* n_chunk < 2^31 and n_ctx <= 2^22: the token count and offset fit 64
     * bits; the rows' bytes (up to 2^52 rows of 2^25 bytes) may not */
    const uint64_t n_tokens = (uint64_t)n_chunk * (uint64_t)n_ctx;
    const uint64_t row_bytes = 2 * (uint64_t)r->row_u16;
    const uint64_t n_rows_all = (uint64_t)n_chunk * (uint64_t)r->n_rows;
    const uint64_t data_off = KLD_HEADER_BYTES + 4 * n_tokens;
    uint64_t rows_size, want;
    if (__builtin_mul_overflow(n_rows_all, row_bytes, &rows_size) ||
        __builtin_add_overflow(data_off, rows_size, &want))
        return fail(why, cap, "corrupt base file: its header (n_ctx %d, n_vocab %d, %d chunks) asks for "
                    "more than 2^64 bytes", n_ctx, n_vocab, n_chunk);
    if (size < want)
        return fail(why, cap,
                    "truncated base file: %llu bytes, its header (n_ctx %d, n_vocab %d, %d chunks) needs %llu",
                    (unsigned long long)size, n_ctx, n_vocab, n_chunk, (unsigned long long)want);
    if (size > want)
        return fail(why, cap, "corrupt base file: %llu bytes after the last of its %d chunks",
                    (unsigned long long)(size - want), n_chunk);
    r->tokens = malloc(n_tokens * sizeof *r->tokens);
    if (!r->tokens) return fail(why, cap, "out of memory reading the base file's %llu tokens", (unsigned long long)n_tokens);
    if (!read_exact(f, r->tokens, n_tokens * sizeof *r->tokens)) {
        kld_reader_free(r);
        return fail(why, cap, "cannot read the base file's tokens");
    }
    for (uint64_t i = 0; i < n_tokens; i++) {
        if (r->tokens[i] < 0 || r->tokens[i] >= n_vocab) {
            const int bad = r->tokens[i];
            kld_reader_free(r);
            return fail(why, cap, "corrupt base file: token %llu is %d, outside its vocabulary of %d",
                        (unsigned long long)i, bad, n_vocab);
        }
    }
    if (!check_rows(r, data_off, row_bytes, n_rows_all, why, cap)) {
        kld_reader_free(r);
        return false;
    }
    return true;
}

bool kld_reader_row(kld_reader *r, uint16_t *row, char *why, size_t cap) {
    if (r->rows_read >= (uint64_t)r->n_chunk * (uint64_t)r->n_rows)
        return fail(why, cap, "the base file has no more rows");
    if (!read_exact(r->f, row, r->row_u16 * sizeof *row))
        return fail(why, cap, "cannot read row %llu of the base file%s", (unsigned long long)r->rows_read,
                    feof(r->f) ? " (it was shortened while being read)" : "");
    r->rows_read++;
    return true;
}

void kld_reader_free(kld_reader *r) {
    free(r->tokens);
    r->tokens = NULL;
}

bool kld_write_header(FILE *f, int n_ctx, int n_vocab, int n_chunk, const pt_token *tokens) {
    const int32_t h[3] = {n_ctx, n_vocab, n_chunk};
    const size_t n_tokens = (size_t)n_chunk * (size_t)n_ctx;
    return fwrite(KLD_MAGIC, 1, 8, f) == 8 && fwrite(h, 4, 3, f) == 3 &&
           fwrite(tokens, sizeof *tokens, n_tokens, f) == n_tokens;
}

bool kld_write_row(FILE *f, const uint16_t *row, size_t row_u16) {
    return fwrite(row, sizeof *row, row_u16, f) == row_u16;
}
