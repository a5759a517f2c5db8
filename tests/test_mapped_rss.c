/*
 * test_mapped_rss.c — after loading SmolLM2 on the fast kernels and running
 * a prompt and some decode steps, almost nothing of the GGUF mapping may be
 * resident in this process: every matrix was repacked (its source pages
 * dropped), and the small F32 vectors between them were copied to the heap,
 * because reading them in place faults whole page-cache folios of the
 * dropped matrices back in (on kernels with large folios that was 65 MiB).
 * The resident share is read from /proc/self/smaps (Linux), the process's
 * own view, not page-cache residency. The reference path (PETREL_CPU=ref)
 * reads every matrix in place, so there most of the file is resident: the
 * check can tell the two apart.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "petrel.h"

/* kB of Rss over the mappings of file `real` (an absolute, resolved path). */
static long mapped_rss_kb(const char *real) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[PATH_MAX + 256];
    bool in_file = false;
    long total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name_at) == 2 && name_at > 0) {
            char *name = line + name_at;
            name[strcspn(name, "\n")] = 0;
            in_file = strcmp(name, real) == 0;
            continue;
        }
        long kb;
        if (in_file && sscanf(line, "Rss: %ld kB", &kb) == 1) total += kb;
    }
    fclose(f);
    return total;
}

/* Load, prefill 96 tokens, decode 16 one by one; returns the file's Rss. */
static long run(const char *path, const char *real, const char *cpu) {
    pt_model *m = NULL;
    pt_context *ctx = NULL;
    pt_error err = {0};
    long kb = -1;
    pt_model_params mp = pt_model_default_params();
    mp.cpu = cpu;
    if (pt_model_load(path, &mp, &m, &err) != PT_OK) {
        CHECK(0, "load %s: %s", path, err.msg);
        goto out;
    }
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = 2;
    if (pt_context_new(m, &cp, &ctx, &err) != PT_OK) {
        CHECK(0, "context: %s", err.msg);
        goto out;
    }
    pt_token prompt[96];
    for (int i = 0; i < 96; i++) prompt[i] = (pt_token)(100 + 37 * i);
    CHECK(pt_decode(ctx, prompt, 96, NULL, &err) == PT_OK, "prefill: %s", err.msg);
    for (int i = 0; i < 16; i++) {
        const pt_token t = (pt_token)(200 + i);
        CHECK(pt_decode(ctx, &t, 1, NULL, &err) == PT_OK, "decode: %s", err.msg);
    }
    kb = mapped_rss_kb(real);
out:
    pt_context_free(ctx);
    pt_model_free(m);
    return kb;
}

int main(void) {
    /* found like every other SmolLM2 test: PETREL_SMOLLM2, else the data dir */
    const char *path = test_smollm2_path();
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        CHECK(0, "cannot resolve %s", path);
        return check_done("mapped_rss");
    }
    pt_model *probe = NULL;
    pt_error err = {0};
    CHECK(pt_model_load(path, NULL, &probe, &err) == PT_OK, "load: %s", err.msg);
    pt_model_info info = {0};
    if (probe) pt_model_get_info(probe, &info);
    const bool fast = info.kernels && strcmp(info.kernels, "ref") != 0;
    pt_model_free(probe);

    const long ref_kb = run(path, real, "ref");
    printf("reference kernels: %ld kB of the file resident\n", ref_kb);
    CHECK(ref_kb > 50 * 1024, "the reference path reads the matrices in place, yet only %ld kB resident",
          ref_kb);
    if (fast) {
        const long fast_kb = run(path, real, NULL);
        printf("%s kernels: %ld kB of the file resident\n", info.kernels, fast_kb);
        /* the metadata (vocabulary, merges) is read at load; 8 MiB leaves
         * room for it and for the fault-around of the first page */
        CHECK(fast_kb >= 0 && fast_kb <= 8 * 1024, "%ld kB of the repacked file still resident", fast_kb);
    }
    return check_done("mapped_rss");
}
