/*
 * lora_fixture.h — opening the model, context and adapters the LoRA tests
 * run on. Any failure prints why and exits the test with status 1: these
 * are the test's set-up, not what it checks.
 */
#ifndef PETREL_LORA_FIXTURE_H
#define PETREL_LORA_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "petrel.h"

/* The GGUF at path on the CPU variant cpu (NULL: this machine's best,
 * "ref": every product in float). */
static inline pt_model *lfx_model(const char *path, const char *cpu) {
    pt_model_params mp = pt_model_default_params();
    mp.cpu = cpu;
    pt_model *m = NULL;
    pt_error err = {0};
    if (pt_model_load(path, &mp, &m, &err) != PT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err.msg);
        exit(1);
    }
    return m;
}

/* A context of n_ctx positions; lora_f32 picks the adapters' float path. */
static inline pt_context *lfx_context(pt_model *m, int n_ctx, int n_threads, int n_batch, bool lora_f32) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    if (n_batch > 0) cp.n_batch = n_batch;
    cp.lora_f32 = lora_f32;
    pt_context *c = NULL;
    pt_error err = {0};
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) {
        fprintf(stderr, "context: %s\n", err.msg);
        exit(1);
    }
    return c;
}

static inline pt_lora *lfx_lora(pt_model *m, const char *path) {
    pt_lora *l = NULL;
    pt_error err = {0};
    if (pt_lora_load(m, path, &l, &err) != PT_OK) {
        fprintf(stderr, "load %s: %s\n", path, err.msg);
        exit(1);
    }
    return l;
}

#endif
