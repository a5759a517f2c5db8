/*
 * check.h — the few helpers every C test uses. A failed CHECK prints the
 * file, line and message and counts; check_done() prints a summary line
 * and gives the exit status (non-zero when anything failed or when no
 * CHECK ran at all).
 */
#ifndef PETREL_CHECK_H
#define PETREL_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_passed_, check_failed_;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            check_passed_++;                                               \
        } else {                                                           \
            check_failed_++;                                               \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static inline int check_done(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, check_passed_, check_failed_);
    if (check_passed_ + check_failed_ == 0) {
        /* A test that checked nothing proves nothing: fail it. */
        fprintf(stderr, "%s: ran no checks\n", suite);
        return 1;
    }
    return check_failed_ ? 1 : 0;
}

/* Path of a committed fixture: $PETREL_TEST_DATA/name (static buffer). */
static inline const char *test_data(const char *name) {
    static char buf[4096];
    const char *dir = getenv("PETREL_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", name);
    return buf;
}

/* Path of the SmolLM2-135M-Instruct Q4_1 GGUF: $PETREL_SMOLLM2, else the
 * user's data directory where the README's commands put it. Exits with a
 * failure (never a skip) when it is missing. */
static inline const char *test_smollm2_path(void) {
    static char buf[4096];
    const char *env = getenv("PETREL_SMOLLM2");
    if (env && *env) return env;
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, sizeof buf, "%s/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf", xdg);
    else
        snprintf(buf, sizeof buf, "%s/.local/share/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                 home ? home : ".");
    if (access(buf, R_OK) != 0) {
        fprintf(stderr, "SmolLM2 model not found at %s: run python3 tools/fetch_model.py first\n", buf);
        exit(1);
    }
    return buf;
}

/* Path of the Gemma 3 270M Q4_K_M GGUF: $PETREL_GEMMA3, else the user's
 * data directory where tools/fetch_gemma3.py puts it. Exits with a
 * failure (never a skip) when it is missing. */
static inline const char *test_gemma3_path(void) {
    static char buf[4096];
    const char *env = getenv("PETREL_GEMMA3");
    if (env && *env) return env;
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, sizeof buf, "%s/petrel/models/gemma-3-270m-q4_k_m.gguf", xdg);
    else
        snprintf(buf, sizeof buf, "%s/.local/share/petrel/models/gemma-3-270m-q4_k_m.gguf",
                 home ? home : ".");
    if (access(buf, R_OK) != 0) {
        fprintf(stderr, "Gemma 3 model not found at %s: run python3 tools/fetch_gemma3.py first\n", buf);
        exit(1);
    }
    return buf;
}

/* Whole file into memory (NUL-terminated); exits on failure. */
static inline char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

#endif
