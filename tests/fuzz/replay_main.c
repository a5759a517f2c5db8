/*
 * replay_main.c — a main() for a fuzz target without libFuzzer: feeds every
 * file in the directories given (the committed seed corpus and the crash
 * regressions under tests/data/fuzz-regress/TARGET) through the target's
 * LLVMFuzzerTestOneInput once. Linked into the normal test suite (ctest
 * fuzz_replay_NAME), so each crash the fuzzer found stays fixed under
 * every build, the sanitizer build included. A missing directory is fine
 * (no regressions yet); an unreadable file fails the test.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read a whole file (malloc'd; at least one byte allocated). */
static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

static int replay_dir(const char *dir, int *n_files) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int failures = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (!data) {
            fprintf(stderr, "replay: cannot read %s\n", path);
            failures++;
            continue;
        }
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        ++*n_files;
    }
    closedir(d);
    return failures;
}

int main(int argc, char **argv) {
    int failures = 0, n_files = 0;
    for (int i = 1; i < argc; i++) failures += replay_dir(argv[i], &n_files);
    printf("replay: %d inputs, %d unreadable\n", n_files, failures);
    /* A target that saw no input at all checked nothing: that is a failure. */
    return failures == 0 && n_files > 0 ? 0 : 1;
}
