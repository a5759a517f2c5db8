/*
 * test_model_checks.c — the load- and decode-time checks of the engine,
 * each driven by an input that only that check stops:
 *   - pt_model_load on a named pipe, a directory, a character device
 *     returns an error at once (alarm() turns a hang into a failure);
 *   - a model whose weights sit at a misaligned address (a buffer given to
 *     pt_gguf_open_memory) is refused before a kernel reads a block;
 *   - special-token ids outside [0, n_vocab) are dropped (-1);
 *   - a tokenizer whose size differs from the model's vocabulary is refused;
 *   - pt_decode refuses a token id outside [0, n_vocab).
 * Patched models are tests/data/tiny_llama3.gguf with bytes changed in a
 * heap copy, written to a temporary directory.
 */
#include "check.h"
#include "gguf.h"
#include "llm.h"
#include "petrel.h"

#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[3000];

/* The one load of path must fail with status want and a message holding
 * both words. */
static void check_load_fails(const char *path, pt_status want, const char *w1, const char *w2) {
    pt_model *m = NULL;
    pt_error err = {0};
    alarm(30); /* a hang (e.g. open() of a FIFO) fails the test instead */
    pt_status st = pt_model_load(path, NULL, &m, &err);
    alarm(0);
    CHECK(st == want && m == NULL, "%s: status %d, want %d (%s)", path, st, want, err.msg);
    CHECK(strstr(err.msg, w1) && (!w2 || strstr(err.msg, w2)) && !strchr(err.msg, '\n'),
          "%s: message [%s] lacks [%s] [%s]", path, err.msg, w1, w2 ? w2 : "");
    if (m) pt_model_free(m);
}

static void test_special_files(void) {
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/pipe.gguf", tmpdir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    check_load_fails(fifo, PT_ERR_IO, "is a named pipe", fifo);
    check_load_fails(tmpdir, PT_ERR_IO, "is a directory", tmpdir);
    check_load_fails("/dev/zero", PT_ERR_IO, "is a character device", "/dev/zero");
    remove(fifo);
}

/* Offset of the first occurrence of needle in hay, or exits the test. */
static size_t find_bytes(const char *hay, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return i;
    fprintf(stderr, "'%s' not found in the fixture\n", needle);
    exit(1);
}

static void put_le(char *p, uint64_t v, int width) {
    for (int i = 0; i < width; i++) p[i] = (char)(v >> (8 * i));
}

/* tiny_llama3.gguf with the u32 value of a key (type then value follow the
 * key's bytes) replaced: new type and value. */
static void patch_kv_u32(char *buf, size_t n, const char *key, uint32_t type, uint32_t value) {
    size_t at = find_bytes(buf, n, key) + strlen(key);
    put_le(buf + at, type, 4);
    put_le(buf + at + 4, value, 4);
}

static const char *write_tmp(const char *name, const char *buf, size_t n) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, n, f) == n, "write %s", path);
    if (f) fclose(f);
    return path;
}

static pt_model *load_patched(const char *name, const char *buf, size_t n) {
    const char *path = write_tmp(name, buf, n);
    pt_model *m = NULL;
    pt_error err = {0};
    pt_status st = pt_model_load(path, NULL, &m, &err);
    CHECK(st == PT_OK, "load %s: %s", name, err.msg);
    return m;
}

static void test_special_token_ids(void) {
    size_t n;
    char *orig = test_read_file(test_data("tiny_llama3.gguf"), &n);
    char *buf = malloc(n);
    const int n_vocab = 272;

    memcpy(buf, orig, n);
    pt_model *m = load_patched("eos_ok.gguf", buf, n);
    CHECK(m && pt_token_eos(m) >= 0 && pt_token_eos(m) < n_vocab, "fixture eos %d",
          m ? pt_token_eos(m) : -2);
    if (m) pt_model_free(m);

    patch_kv_u32(buf, n, "tokenizer.ggml.eos_token_id", PT_GGUF_UINT32, (uint32_t)n_vocab);
    m = load_patched("eos_big.gguf", buf, n);
    CHECK(m && pt_token_eos(m) == -1, "eos id n_vocab: got %d", m ? pt_token_eos(m) : -2);
    if (m) pt_model_free(m);

    memcpy(buf, orig, n);
    patch_kv_u32(buf, n, "tokenizer.ggml.eos_token_id", PT_GGUF_INT32, (uint32_t)-7);
    m = load_patched("eos_neg.gguf", buf, n);
    CHECK(m && pt_token_eos(m) == -1, "eos id -7: got %d", m ? pt_token_eos(m) : -2);
    if (m) pt_model_free(m);

    memcpy(buf, orig, n);
    patch_kv_u32(buf, n, "tokenizer.ggml.bos_token_id", PT_GGUF_UINT32, 100000);
    m = load_patched("bos_big.gguf", buf, n);
    CHECK(m && pt_token_bos(m) == -1, "bos id 100000: got %d", m ? pt_token_bos(m) : -2);
    if (m) pt_model_free(m);
    free(buf);
    free(orig);
}

/* Model vocabulary 270 (key and embedding rows, so the shapes agree) but a
 * tokenizer of 272 tokens. */
static void test_vocab_mismatch(void) {
    size_t n;
    char *buf = test_read_file(test_data("tiny_llama3.gguf"), &n);
    patch_kv_u32(buf, n, "llama.vocab_size", PT_GGUF_UINT32, 270);
    /* tensor info: name, n_dims (u32), ne[0] (u64), ne[1] (u64) */
    size_t at = find_bytes(buf, n, "token_embd.weight") + strlen("token_embd.weight");
    put_le(buf + at + 4 + 8, 270, 8);
    const char *path = write_tmp("vocab.gguf", buf, n);
    check_load_fails(path, PT_ERR_FORMAT, "272", "270");
    free(buf);
}

/* The weights at an address that is 2 mod 8: refused with a message, not
 * read by a kernel (UBSan would abort on the misaligned block). */
static void test_misaligned_memory(void) {
    size_t n;
    char *orig = test_read_file(test_data("tiny_llama3.gguf"), &n);
    char *raw = malloc(n + 8);
    char *shifted = raw + 2;
    memcpy(shifted, orig, n);
    pt_gguf *g = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open_memory(shifted, n, &g, &err);
    CHECK(st == PT_OK, "open shifted copy: %s", err.msg);
    if (st == PT_OK) {
        pt_llm *llm = NULL;
        st = pt_llm_load(g, &llm, &err);
        CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "'token_embd.weight'") &&
                  strstr(err.msg, "not 8-byte aligned"),
              "misaligned weights: status %d [%s]", st, err.msg);
        if (llm) pt_llm_free(llm);
        pt_gguf_close(g);
    }
    free(raw);
    free(orig);
}

static void test_decode_range(void) {
    pt_model *m = NULL;
    pt_error err = {0};
    pt_status st = pt_model_load(test_data("tiny_llama3.gguf"), NULL, &m, &err);
    CHECK(st == PT_OK, "load: %s", err.msg);
    if (st) return;
    pt_context *ctx = NULL;
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 32;
    cp.n_threads = 1;
    st = pt_context_new(m, &cp, &ctx, &err);
    CHECK(st == PT_OK, "context: %s", err.msg);
    const pt_token bad[] = {272, -1, 1 << 30};
    for (int i = 0; st == PT_OK && i < 3; i++) {
        pt_token toks[2] = {1, bad[i]};
        pt_status d = pt_decode(ctx, toks, 2, NULL, &err);
        CHECK(d == PT_ERR_ARG && strstr(err.msg, "token"), "decode id %d: status %d [%s]", bad[i], d,
              err.msg);
        CHECK(pt_context_n_past(ctx) == 0, "n_past after a refused decode: %d", pt_context_n_past(ctx));
    }
    pt_context_free(ctx);
    pt_model_free(m);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/petrel-test-checks-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpdir)) { fprintf(stderr, "mkdtemp failed\n"); return 1; }
    test_special_files();
    test_special_token_ids();
    test_vocab_mismatch();
    test_misaligned_memory();
    test_decode_range();
    const char *names[] = {"eos_ok.gguf", "eos_big.gguf", "eos_neg.gguf", "bos_big.gguf", "vocab.gguf"};
    for (int i = 0; i < 5; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        remove(p);
    }
    rmdir(tmpdir);
    return check_done("model_checks");
}
