/*
 * test_load_progress.c — pt_model_load's progress callback on SmolLM2: the callback
 * runs on the loading thread, starts at 0, never goes back, ends with
 * done == total, and total is the byte size of the matrices the fast
 * kernels repack, counted here from the GGUF tensor table (the 7 matrices
 * of every layer and the output matrix, or the token embedding when the
 * output is tied, whose type has a fast path: Q4_0, Q4_1, Q8_0). With
 * the "ref" kernels nothing is repacked: total 0, one final call.
 * pt_model_get_info reports the same repacking (kernels, matrices, bytes).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf.h"
#include "petrel.h"
#include "quant.h"

typedef struct progress_log {
    pthread_t loader;
    int calls;
    bool other_thread, went_back, total_changed;
    uint64_t first_done, last_done, total;
} progress_log;

static void on_progress(void *user, uint64_t done, uint64_t total) {
    progress_log *p = user;
    if (!pthread_equal(pthread_self(), p->loader)) p->other_thread = true;
    if (p->calls == 0) {
        p->first_done = done;
        p->total = total;
    } else {
        if (done < p->last_done) p->went_back = true;
        if (total != p->total) p->total_changed = true;
    }
    p->last_done = done;
    p->calls++;
}

static bool fast_type(uint32_t type) {
    return type == PT_TYPE_Q4_0 || type == PT_TYPE_Q4_1 || type == PT_TYPE_Q8_0;
}

/* Bytes of the matrices a fast-path load repacks, from the tensor table,
 * and their number in *count. */
static uint64_t repacked_bytes(const pt_gguf *g, int *count) {
    static const char *const per_layer[] = {".attn_q.weight", ".attn_k.weight", ".attn_v.weight",
                                            ".attn_output.weight", ".ffn_gate.weight", ".ffn_up.weight",
                                            ".ffn_down.weight"};
    const pt_gguf_tensor *out = pt_gguf_find_tensor(g, "output.weight");
    if (!out) out = pt_gguf_find_tensor(g, "token_embd.weight");
    uint64_t sum = out && fast_type(out->type) ? out->nbytes : 0;
    *count = out && fast_type(out->type) ? 1 : 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const pt_gguf_tensor *t = &g->tensors[i];
        if (t->name.len < 4 || memcmp(t->name.ptr, "blk.", 4) != 0 || !fast_type(t->type)) continue;
        for (size_t k = 0; k < sizeof per_layer / sizeof *per_layer; k++) {
            const size_t n = strlen(per_layer[k]);
            if ((size_t)t->name.len > n && memcmp(t->name.ptr + t->name.len - n, per_layer[k], n) == 0) {
                sum += t->nbytes;
                (*count)++;
            }
        }
    }
    return sum;
}

static void load_and_check(const char *path, const char *cpu, uint64_t want_total, int want_count) {
    progress_log p = {.loader = pthread_self()};
    pt_model *m = NULL;
    pt_error err = {0};
    pt_model_params mp = pt_model_default_params();
    mp.cpu = cpu;
    mp.progress = on_progress;
    mp.progress_user = &p;
    pt_status st = pt_model_load(path, &mp, &m, &err);
    const char *name = cpu ? cpu : "default kernels";
    CHECK(st == PT_OK, "%s: load: %s", name, err.msg);
    CHECK(p.calls >= 1, "%s: progress called %d times", name, p.calls);
    CHECK(!p.other_thread, "%s: progress called from another thread", name);
    CHECK(!p.went_back && !p.total_changed, "%s: done went back or total changed", name);
    CHECK(p.total == want_total, "%s: total %llu bytes, want %llu", name, (unsigned long long)p.total,
          (unsigned long long)want_total);
    CHECK(p.last_done == p.total, "%s: last call at %llu of %llu", name, (unsigned long long)p.last_done,
          (unsigned long long)p.total);
    if (want_total > 0) {
        CHECK(p.first_done == 0, "%s: first call at %llu, not 0", name, (unsigned long long)p.first_done);
        /* one call at the start, one at the end, and some in between */
        CHECK(p.calls >= 3, "%s: only %d progress calls while repacking", name, p.calls);
    }
    pt_model_info in;
    if (st == PT_OK) {
        pt_model_get_info(m, &in);
        CHECK(in.n_repacked == want_count, "%s: info: %d matrices repacked, want %d", name, in.n_repacked,
              want_count);
        CHECK((strcmp(in.kernels, "ref") == 0) == (want_count == 0), "%s: info: kernels '%s'", name,
              in.kernels);
        /* the packed copy holds every code and scale of the source (rows
         * padded to whole groups), so never fewer bytes */
        CHECK(want_count == 0 ? in.repacked_bytes == 0 : in.repacked_bytes >= want_total,
              "%s: info: %llu bytes repacked, source %llu", name, (unsigned long long)in.repacked_bytes,
              (unsigned long long)want_total);
        CHECK(want_count == 0 || in.repack_seconds > 0, "%s: info: repacking took %g s", name,
              in.repack_seconds);
    }
    printf("  %s: %d calls, %llu bytes repacked\n", name, p.calls, (unsigned long long)p.total);
    pt_model_free(m);
}

int main(void) {
    const char *path = test_smollm2_path();
    pt_gguf *g = NULL;
    pt_error err = {0};
    if (pt_gguf_open(path, &g, &err) != PT_OK) {
        CHECK(0, "open %s: %s", path, err.msg);
        return check_done("load_progress");
    }
    int count = 0;
    const uint64_t want = repacked_bytes(g, &count);
    CHECK(want > 1000000, "SmolLM2 has %llu bytes of Q4/Q8 matrices", (unsigned long long)want);
    pt_gguf_close(g);

    load_and_check(path, NULL, want, count);
    load_and_check(path, "ref", 0, 0);

    /* a bad file: the error comes back, whatever progress said before */
    progress_log p = {.loader = pthread_self()};
    pt_model *m = NULL;
    pt_model_params mp = pt_model_default_params();
    mp.progress = on_progress;
    mp.progress_user = &p;
    CHECK(pt_model_load(test_data("tokenizer_corpus.txt"), &mp, &m, &err) != PT_OK && m == NULL,
          "a text file does not load");
    CHECK(pt_model_load(path, NULL, &m, &err) == PT_OK, "no callback: %s", err.msg);
    pt_model_free(m);
    return check_done("load_progress");
}
