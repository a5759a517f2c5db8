/*
 * bench_context.h — what the KV benchmarks (kv_cold.c, kv_qk.c) share: a
 * context of n_ctx = depth + 1024 prefilled with `depth` tokens of fixed
 * ids, so that decode is timed at that depth. A failure prints
 * "NAME: what: message" and exits 1.
 */
#ifndef PETREL_BENCH_CONTEXT_H
#define PETREL_BENCH_CONTEXT_H

#include "petrel.h"

#include <stdio.h>
#include <stdlib.h>

static inline void bench_die(const char *name, const char *what, const pt_error *err) {
    fprintf(stderr, "%s: %s: %s\n", name, what, err ? err->msg : "failed");
    exit(1);
}

/* A context with cp's settings (n_ctx set here) holding `depth` tokens. */
static inline pt_context *bench_filled(const char *name, pt_model *m, pt_context_params cp, int depth) {
    pt_error err = {0};
    cp.n_ctx = depth + 1024;
    pt_context *c = NULL;
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) bench_die(name, "context", &err);
    pt_token *toks = malloc((size_t)depth * sizeof *toks);
    if (!toks) bench_die(name, "out of memory", NULL);
    for (int i = 0; i < depth; i++) toks[i] = (pt_token)(100 + (i * 7919) % 20000);
    if (pt_decode(c, toks, depth, NULL, &err) != PT_OK) bench_die(name, "prefill", &err);
    free(toks);
    return c;
}

#endif
