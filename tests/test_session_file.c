/*
 * test_session_file.c — saved sessions (engine/session.c) on the tiny
 * llama model (tests/data/tiny_llama.gguf):
 *   - a context saved after some tokens, restored in a fresh context and
 *     fed the same next tokens gives bitwise the logits of the context that
 *     never stopped; the restore runs the model on no token (counters);
 *   - an empty context round-trips;
 *   - every kind of bad file (truncated, wrong magic, wrong version, another
 *     model, bad CRC, another KV type, oversized counts, trailing bytes, a
 *     token outside the vocabulary, a wrong per-layer size, missing) is a
 *     one-line error and leaves the context it was loaded into unchanged:
 *     same tokens, same logits, and its next decode gives what it would
 *     have given;
 *   - saving into a missing directory is a one-line error.
 * Files whose header fields are changed get their CRC recomputed (zlib), so
 * each is refused for the field, not the CRC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "petrel.h"

#define N_CTX 32
#define N_FIRST 9   /* tokens before the save */
#define N_MORE 5    /* tokens after it */

static const pt_token k_tokens[N_FIRST + N_MORE] = {1, 17, 42, 99, 5, 230, 7, 311, 64, 12, 150, 3, 280, 77};

static char g_dir[64];

static pt_context *new_ctx(pt_model *m) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = N_CTX;
    cp.n_threads = 1;
    pt_context *c = NULL;
    pt_error err = {0};
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) {
        fprintf(stderr, "context: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static pt_model *load(const char *name) {
    pt_model *m = NULL;
    pt_error err = {0};
    if (pt_model_load(test_data(name), NULL, &m, &err) != PT_OK) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(1);
    }
    return m;
}

static const char *path_in_dir(const char *name) {
    static char buf[4][256];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", g_dir, name);
    return buf[i];
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The CRC in the last 4 bytes, recomputed over the rest. */
static void fix_crc(uint8_t *p, size_t n) {
    put32(p + n - 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)(n - 4)));
}

static void decode(pt_context *c, const pt_token *t, int n) {
    pt_error err = {0};
    CHECK(pt_decode(c, t, n, NULL, &err) == PT_OK, "decode: %s", err.msg);
}

static void test_round_trip(pt_model *m, int n_vocab) {
    pt_context *a = new_ctx(m);
    decode(a, k_tokens, N_FIRST);
    pt_error err = {0};
    const char *path = path_in_dir("a.session");
    CHECK(pt_context_save_session(a, path, &err) == PT_OK, "save: %s", err.msg);
    float *saved = malloc(sizeof(float) * (size_t)n_vocab);
    memcpy(saved, pt_context_logits(a), sizeof(float) * (size_t)n_vocab);
    float *ref = malloc(sizeof(float) * (size_t)n_vocab * N_MORE);
    for (int i = 0; i < N_MORE; i++) {
        decode(a, k_tokens + N_FIRST + i, 1);
        memcpy(ref + (size_t)i * n_vocab, pt_context_logits(a), sizeof(float) * (size_t)n_vocab);
    }

    pt_context *b = new_ctx(m);
    pt_context_counters c0, c1;
    pt_context_get_counters(b, &c0);
    CHECK(pt_context_load_session(b, path, &err) == PT_OK, "load: %s", err.msg);
    pt_context_get_counters(b, &c1);
    CHECK(c1.n_evaluated == c0.n_evaluated, "a restore runs the model on nothing (%llu evaluated)",
          (unsigned long long)(c1.n_evaluated - c0.n_evaluated));
    CHECK(c1.n_restored - c0.n_restored == N_FIRST, "restored %llu tokens",
          (unsigned long long)(c1.n_restored - c0.n_restored));
    int n = 0;
    const pt_token *toks = pt_context_tokens(b, &n);
    CHECK(n == N_FIRST && pt_context_n_past(b) == N_FIRST, "restored n_past %d", n);
    CHECK(n == N_FIRST && memcmp(toks, k_tokens, sizeof *toks * N_FIRST) == 0, "restored tokens differ");
    CHECK(pt_context_logits(b) && memcmp(pt_context_logits(b), saved, sizeof(float) * (size_t)n_vocab) == 0,
          "restored logits differ");
    int same = 0;
    for (int i = 0; i < N_MORE; i++) {
        decode(b, k_tokens + N_FIRST + i, 1);
        same += memcmp(pt_context_logits(b), ref + (size_t)i * n_vocab, sizeof(float) * (size_t)n_vocab) == 0;
    }
    CHECK(same == N_MORE, "restored then continued: %d of %d steps bitwise the uninterrupted logits", same, N_MORE);
    /* the restored context saves the same bytes it would have */
    pt_context_truncate(b, N_FIRST, &err);
    pt_context *e = new_ctx(m);
    CHECK(pt_context_save_session(e, path_in_dir("empty.session"), &err) == PT_OK, "save empty: %s", err.msg);
    CHECK(pt_context_load_session(b, path_in_dir("empty.session"), &err) == PT_OK, "load empty: %s", err.msg);
    CHECK(pt_context_n_past(b) == 0 && pt_context_logits(b) == NULL, "an empty session empties the context");
    pt_context_free(e);
    pt_context_free(a);
    pt_context_free(b);
    free(saved);
    free(ref);
}

/* A context holding 3 tokens; the bad file must not change it. */
static void check_refused(pt_model *m, int n_vocab, const char *what, const char *path, pt_status want) {
    pt_context *c = new_ctx(m);
    decode(c, k_tokens, 3);
    float *before = malloc(sizeof(float) * (size_t)n_vocab);
    memcpy(before, pt_context_logits(c), sizeof(float) * (size_t)n_vocab);
    pt_error err = {0};
    pt_status st = pt_context_load_session(c, path, &err);
    CHECK(st == want, "%s: status %d, want %d (%s)", what, (int)st, (int)want, err.msg);
    CHECK(err.msg[0] && !strchr(err.msg, '\n'), "%s: one line: '%s'", what, err.msg);
    printf("%-22s %s\n", what, err.msg);
    int n = 0;
    const pt_token *t = pt_context_tokens(c, &n);
    CHECK(n == 3 && memcmp(t, k_tokens, 3 * sizeof *t) == 0, "%s: the tokens changed (%d)", what, n);
    CHECK(pt_context_logits(c) && memcmp(pt_context_logits(c), before, sizeof(float) * (size_t)n_vocab) == 0,
          "%s: the logits changed", what);
    /* the KV too: the next token gives what a fresh context gives */
    decode(c, k_tokens + 3, 1);
    pt_context *f = new_ctx(m);
    decode(f, k_tokens, 4);
    CHECK(memcmp(pt_context_logits(c), pt_context_logits(f), sizeof(float) * (size_t)n_vocab) == 0,
          "%s: the KV cache changed", what);
    pt_context_free(f);
    pt_context_free(c);
    free(before);
}

static void test_bad_files(pt_model *m, pt_model *other, int n_vocab) {
    size_t n = 0;
    uint8_t *good = (uint8_t *)test_read_file(path_in_dir("a.session"), &n);
    uint8_t *b = malloc(n + 16);
    const char *p = path_in_dir("bad.session");

    write_file(p, good, n / 2);
    check_refused(m, n_vocab, "truncated", p, PT_ERR_FORMAT);
    write_file(p, good, 5);
    check_refused(m, n_vocab, "truncated header", p, PT_ERR_FORMAT);
    write_file(p, good, n - 1);
    check_refused(m, n_vocab, "truncated CRC", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    b[0] = 'X';
    write_file(p, b, n);
    check_refused(m, n_vocab, "wrong magic", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    put32(b + 8, 2);
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "wrong version", p, PT_ERR_UNSUPPORTED);

    memcpy(b, good, n);
    b[n / 2] ^= 0x40; /* in the KV */
    write_file(p, b, n);
    check_refused(m, n_vocab, "bad CRC", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    put32(b + 12, 3); /* q8f8 */
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "wrong KV type", p, PT_ERR_ARG);

    memcpy(b, good, n);
    put32(b + 56, 0x7fffffffu); /* n_tokens */
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "oversized token count", p, PT_ERR_ARG);

    memcpy(b, good, n);
    put32(b + 64, 0xffffffffu); /* layer_bytes, low word */
    put32(b + 68, 0xffffffffu);
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "oversized layer size", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    memset(b + n, 0, 8);
    memcpy(b + n + 4, good + n - 4, 4);
    fix_crc(b, n + 8);
    write_file(p, b, n + 8);
    check_refused(m, n_vocab, "trailing bytes", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    put32(b + 72 + 4, (uint32_t)n_vocab); /* the second token */
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "token out of range", p, PT_ERR_FORMAT);

    memcpy(b, good, n);
    put32(b + 60, 6); /* flags: an unknown bit */
    fix_crc(b, n);
    write_file(p, b, n);
    check_refused(m, n_vocab, "unknown flags", p, PT_ERR_FORMAT);

    /* a valid session of another model */
    pt_context *o = new_ctx(other);
    decode(o, k_tokens, 3);
    pt_error err = {0};
    CHECK(pt_context_save_session(o, p, &err) == PT_OK, "save other: %s", err.msg);
    pt_context_free(o);
    check_refused(m, n_vocab, "another model", p, PT_ERR_ARG);

    check_refused(m, n_vocab, "missing file", path_in_dir("none.session"), PT_ERR_IO);
    free(good);
    free(b);
}

static void test_save_fails(pt_model *m) {
    pt_context *c = new_ctx(m);
    decode(c, k_tokens, 3);
    pt_error err = {0};
    pt_status st = pt_context_save_session(c, path_in_dir("no/such/dir/x.session"), &err);
    CHECK(st == PT_ERR_IO && err.msg[0] && !strchr(err.msg, '\n'), "save into a missing dir: %d '%s'", (int)st,
          err.msg);
    pt_context_free(c);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/petrel-session-XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    pt_model *m = load("tiny_llama.gguf");
    pt_model *other = load("tiny_llama3.gguf");
    pt_model_info info;
    pt_model_get_info(m, &info);
    test_round_trip(m, info.n_vocab);
    test_bad_files(m, other, info.n_vocab);
    test_save_fails(m);
    pt_model_free(other);
    pt_model_free(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    return check_done("test_session_file");
}
