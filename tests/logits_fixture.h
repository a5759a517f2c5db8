/*
 * logits_fixture.h — readers for the reference fixtures that
 * tools/gen_tiny_models.py and tools/gen_logits_fixture.py write (formats
 * described in tools/fixture_io.py), plus small logit helpers. Any
 * malformed fixture exits the test with a failure.
 */
#ifndef PETREL_LOGITS_FIXTURE_H
#define PETREL_LOGITS_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Sanitizer builds run the reference kernels ~30x slower (the dot product
 * loses its vectorization to instrumentation): the SmolLM2 parts then
 * check a subset of the prompts, and say so. */
#if defined(__SANITIZE_ADDRESS__)
#define LF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LF_SANITIZED 1
#endif
#endif
#ifndef LF_SANITIZED
#define LF_SANITIZED 0
#endif

typedef struct lf_prompt {
    int n_tok, n_full;
    char *text;          /* NUL-terminated, may be "" */
    int32_t *tokens;     /* [n_tok] */
    int32_t *top1;       /* [n_tok] reference argmax after each position */
    float *gap;          /* [n_tok] reference top-1 minus top-2 */
    int32_t *top_ids;    /* [n_tok][top_k] */
    float *top_vals;     /* [n_tok][top_k] */
    int32_t *full_pos;   /* [n_full] */
    float *full;         /* [n_full][n_vocab] */
} lf_prompt;

typedef struct lf_logits {
    int n_vocab, n_prompts, top_k;
    lf_prompt *prompts;
    char *blob;          /* the file; every array above points into a copy */
} lf_logits;

typedef struct lf_greedy_run {
    char *text;
    int n_prompt, n_gen;
    int stopped_at_eos;
    int32_t *prompt;     /* [n_prompt] */
    int32_t *gen;        /* [n_gen] */
    float *gap;          /* [n_gen] reference top-1 minus top-2 logit */
    int32_t *top_ids;    /* [n_gen][top_k] reference top-k tokens, best first */
    float *top_vals;     /* [n_gen][top_k] their logits */
} lf_greedy_run;

typedef struct lf_greedy {
    int n_runs, top_k;
    lf_greedy_run *runs;
} lf_greedy;

typedef struct lf_cursor {
    const char *path;
    const unsigned char *p;
    size_t left;
} lf_cursor;

static inline const void *lf_take(lf_cursor *c, size_t n) {
    if (n > c->left) {
        fprintf(stderr, "%s: fixture truncated\n", c->path);
        exit(1);
    }
    const void *p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

static inline uint32_t lf_u32(lf_cursor *c) {
    uint32_t v;
    memcpy(&v, lf_take(c, 4), 4);
    return v;
}

/* A copy of n 4-byte values (int32 or float), so they are aligned. */
static inline void *lf_arr4(lf_cursor *c, size_t n) {
    void *a = malloc(n * 4 + 1);
    if (!a) exit(1);
    if (n) memcpy(a, lf_take(c, n * 4), n * 4);
    return a;
}

static inline char *lf_text(lf_cursor *c) {
    uint32_t len = lf_u32(c);
    char *s = malloc(len + 1u);
    if (!s) exit(1);
    memcpy(s, lf_take(c, len), len);
    s[len] = 0;
    return s;
}

static inline void lf_logits_load(const char *path, lf_logits *f) {
    size_t len;
    f->blob = test_read_file(path, &len);
    lf_cursor c = {path, (const unsigned char *)f->blob, len};
    if (memcmp(lf_take(&c, 8), "PTLOGIT1", 8) != 0) {
        fprintf(stderr, "%s: not a logits fixture\n", path);
        exit(1);
    }
    f->n_vocab = (int)lf_u32(&c);
    f->n_prompts = (int)lf_u32(&c);
    f->top_k = (int)lf_u32(&c);
    f->prompts = calloc((size_t)f->n_prompts, sizeof *f->prompts);
    for (int i = 0; i < f->n_prompts; i++) {
        lf_prompt *p = &f->prompts[i];
        p->n_tok = (int)lf_u32(&c);
        p->n_full = (int)lf_u32(&c);
        p->text = lf_text(&c);
        size_t n = (size_t)p->n_tok, k = (size_t)f->top_k;
        p->tokens = lf_arr4(&c, n);
        p->top1 = lf_arr4(&c, n);
        p->gap = lf_arr4(&c, n);
        p->top_ids = lf_arr4(&c, n * k);
        p->top_vals = lf_arr4(&c, n * k);
        p->full_pos = lf_arr4(&c, (size_t)p->n_full);
        p->full = lf_arr4(&c, (size_t)p->n_full * (size_t)f->n_vocab);
    }
    if (c.left) {
        fprintf(stderr, "%s: %zu bytes left over\n", path, c.left);
        exit(1);
    }
}

static inline void lf_logits_free(lf_logits *f) {
    for (int i = 0; i < f->n_prompts; i++) {
        lf_prompt *p = &f->prompts[i];
        free(p->text), free(p->tokens), free(p->top1), free(p->gap), free(p->top_ids);
        free(p->top_vals), free(p->full_pos), free(p->full);
    }
    free(f->prompts);
    free(f->blob);
}

static inline void lf_greedy_load(const char *path, lf_greedy *f) {
    size_t len;
    char *blob = test_read_file(path, &len);
    lf_cursor c = {path, (const unsigned char *)blob, len};
    if (memcmp(lf_take(&c, 8), "PTGREED2", 8) != 0) {
        fprintf(stderr, "%s: not a greedy fixture\n", path);
        exit(1);
    }
    f->n_runs = (int)lf_u32(&c);
    f->top_k = (int)lf_u32(&c);
    f->runs = calloc((size_t)f->n_runs, sizeof *f->runs);
    for (int i = 0; i < f->n_runs; i++) {
        lf_greedy_run *r = &f->runs[i];
        r->text = lf_text(&c);
        r->n_prompt = (int)lf_u32(&c);
        r->prompt = lf_arr4(&c, (size_t)r->n_prompt);
        r->n_gen = (int)lf_u32(&c);
        r->stopped_at_eos = (int)lf_u32(&c);
        r->gen = lf_arr4(&c, (size_t)r->n_gen);
        r->gap = lf_arr4(&c, (size_t)r->n_gen);
        r->top_ids = lf_arr4(&c, (size_t)r->n_gen * f->top_k);
        r->top_vals = lf_arr4(&c, (size_t)r->n_gen * f->top_k);
    }
    if (c.left) {
        fprintf(stderr, "%s: %zu bytes left over\n", path, c.left);
        exit(1);
    }
    free(blob);
}

static inline void lf_greedy_free(lf_greedy *f) {
    for (int i = 0; i < f->n_runs; i++) {
        lf_greedy_run *r = &f->runs[i];
        free(r->text), free(r->prompt), free(r->gen), free(r->gap), free(r->top_ids);
        free(r->top_vals);
    }
    free(f->runs);
}

/* Index of the largest of n logits (the first on ties), and the gap to
 * the second largest in *gap when non-NULL. */
static inline int lf_argmax(const float *x, int n, float *gap) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    if (gap) {
        float second = -INFINITY;
        for (int i = 0; i < n; i++)
            if (i != best && x[i] > second) second = x[i];
        *gap = x[best] - second;
    }
    return best;
}

#endif
