/*
 * sd_fixture.h — reader for the Stable Diffusion reference fixture that
 * tools/gen_sd_fixture.py writes with diffusers (tests/data/sd-tiny/):
 * ref.safetensors (the reference arrays) and ref.json (prompts, scheduler
 * configs, sampler tables, pipeline settings). Header-only, for tests.
 *
 *   sdfx *f = sdfx_open(NULL);                 // tests/data/sd-tiny/ref.*
 *   int64_t shape[4]; int nd;
 *   const float *out = sdfx_get(f, "unet.out", shape, &nd);   // NULL: absent
 *   const int32_t *ids = sdfx_get_i32(f, "clip.ids", shape, &nd);
 *   const cJSON *j = sdfx_json(f);            // ref.json, parsed
 *   sdfx_close(f);
 *
 * ref.safetensors layout (the safetensors format): an 8-byte little-endian
 * u64 N, then N bytes of JSON {"NAME": {"dtype": "F32"|"I32", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {...}}, then the data
 * section; offsets are relative to the data section's start. Arrays keep
 * torch's layouts: images and latents NCHW, token sequences
 * [batch, tokens, dim], row-major, shape[0] outermost. sdfx_nchw_to_hwc
 * converts an NCHW batch to the engine's HWC layout (channels fastest,
 * images back to back).
 *
 * Error handling: a missing or malformed fixture file ends the test with
 * a failure (exit 1) and a one-line message, as test_read_file does; a
 * missing array is a NULL return (with a message on stderr) so a test can
 * CHECK it. Every returned pointer stays valid until sdfx_close.
 */
#ifndef PETREL_SD_FIXTURE_H
#define PETREL_SD_FIXTURE_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SDFX_MAX_DIMS 4

typedef struct sdfx_entry {
    char *name;
    int is_i32;                 /* dtype I32 (else F32) */
    int n_dims;                 /* 0..4 */
    int64_t shape[SDFX_MAX_DIMS]; /* unused dims 1 */
    int64_t count;              /* product of shape */
    void *data;                 /* own aligned copy of count 4-byte values */
} sdfx_entry;

typedef struct sdfx {
    int n;
    sdfx_entry *e;              /* [n] */
    cJSON *json;                /* ref.json (NULL if absent) */
    char dir[4096];
} sdfx;

static inline void sdfx_die_(const char *path, const char *why) {
    fprintf(stderr, "sd fixture %s: %s\n", path, why);
    exit(1);
}

/* Open DIR/ref.safetensors and DIR/ref.json; dir NULL means the committed
 * fixture, $PETREL_TEST_DATA/sd-tiny. */
static inline sdfx *sdfx_open(const char *dir) {
    sdfx *f = calloc(1, sizeof *f);
    if (!f) sdfx_die_("(alloc)", "out of memory");
    snprintf(f->dir, sizeof f->dir, "%s", dir ? dir : test_data("sd-tiny"));
    char path[4200];
    snprintf(path, sizeof path, "%s/ref.safetensors", f->dir);
    size_t len;
    FILE *fp = fopen(path, "rb");
    if (!fp) sdfx_die_(path, "cannot open (has tests/data/sd-tiny been merged from main?)");
    fclose(fp);
    char *buf = test_read_file(path, &len);
    if (len < 8) sdfx_die_(path, "shorter than the 8-byte header length");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (uint8_t)buf[i];
    if (hlen > len - 8) sdfx_die_(path, "header length exceeds the file");
    const char *data = buf + 8 + hlen;
    uint64_t data_len = len - 8 - hlen;
    cJSON *h = cJSON_ParseWithLength(buf + 8, (size_t)hlen);
    if (!h || !cJSON_IsObject(h)) sdfx_die_(path, "header is not a JSON object");
    int n = cJSON_GetArraySize(h);
    f->e = calloc((size_t)n + 1, sizeof *f->e);
    if (!f->e) sdfx_die_(path, "out of memory");
    for (const cJSON *t = h->child; t; t = t->next) {
        if (strcmp(t->string, "__metadata__") == 0) continue;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
            cJSON_GetArraySize(off) != 2)
            sdfx_die_(path, "tensor entry without dtype/shape/data_offsets");
        sdfx_entry *e = &f->e[f->n];
        if (strcmp(dt->valuestring, "F32") == 0) e->is_i32 = 0;
        else if (strcmp(dt->valuestring, "I32") == 0) e->is_i32 = 1;
        else sdfx_die_(path, "dtype other than F32/I32");
        e->n_dims = cJSON_GetArraySize(sh);
        if (e->n_dims > SDFX_MAX_DIMS) sdfx_die_(path, "more than 4 dimensions");
        e->count = 1;
        for (int d = 0; d < SDFX_MAX_DIMS; d++) {
            e->shape[d] = 1;
            if (d < e->n_dims) {
                double v = cJSON_GetArrayItem(sh, d)->valuedouble;
                if (v < 0 || v > 1e9) sdfx_die_(path, "bad shape");
                e->shape[d] = (int64_t)v;
                e->count *= e->shape[d];
            }
        }
        double b = cJSON_GetArrayItem(off, 0)->valuedouble;
        double en = cJSON_GetArrayItem(off, 1)->valuedouble;
        if (b < 0 || en < b || en > (double)data_len || (uint64_t)(en - b) != (uint64_t)e->count * 4)
            sdfx_die_(path, "data_offsets out of the file or not matching the shape");
        e->data = malloc((size_t)e->count * 4 + 4);
        e->name = strdup(t->string);
        if (!e->data || !e->name) sdfx_die_(path, "out of memory");
        memcpy(e->data, data + (uint64_t)b, (size_t)e->count * 4);
        f->n++;
    }
    cJSON_Delete(h);
    free(buf);
    snprintf(path, sizeof path, "%s/ref.json", f->dir);
    fp = fopen(path, "rb");
    if (fp) {
        fclose(fp);
        char *js = test_read_file(path, &len);
        f->json = cJSON_ParseWithLength(js, len);
        if (!f->json) sdfx_die_(path, "not valid JSON");
        free(js);
    }
    return f;
}

static inline const sdfx_entry *sdfx_find_(const sdfx *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->e[i].name, name) == 0) return &f->e[i];
    return NULL;
}

static inline const void *sdfx_get_(sdfx *f, const char *name, int want_i32, int64_t shape[4],
                                    int *n_dims) {
    const sdfx_entry *e = sdfx_find_(f, name);
    if (!e || e->is_i32 != want_i32) {
        fprintf(stderr, "sd fixture: no %s array named %s\n", want_i32 ? "I32" : "F32", name);
        return NULL;
    }
    if (shape) memcpy(shape, e->shape, sizeof e->shape);
    if (n_dims) *n_dims = e->n_dims;
    return e->data;
}

/* The float32 array `name`, its shape (shape[0] outermost, unused dims 1;
 * shape and n_dims may be NULL), or NULL when there is none. */
static inline const float *sdfx_get(sdfx *f, const char *name, int64_t shape[4], int *n_dims) {
    return (const float *)sdfx_get_(f, name, 0, shape, n_dims);
}

/* The int32 array `name` (token ids), as sdfx_get. */
static inline const int32_t *sdfx_get_i32(sdfx *f, const char *name, int64_t shape[4],
                                          int *n_dims) {
    return (const int32_t *)sdfx_get_(f, name, 1, shape, n_dims);
}

/* Whether an array of that name exists (any dtype). */
static inline int sdfx_has(const sdfx *f, const char *name) { return sdfx_find_(f, name) != NULL; }

/* ref.json, parsed (NULL when the fixture has none); owned by f. */
static inline const cJSON *sdfx_json(const sdfx *f) { return f->json; }

/* Path of a file inside the fixture folder, e.g. sdfx_path(f, "model",
 * buf, sizeof buf) -> ".../sd-tiny/model". */
static inline const char *sdfx_path(const sdfx *f, const char *rel, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", f->dir, rel);
    return buf;
}

/* src [n][c][h][w] (torch) -> dst [n][h][w][c] (engine HWC). */
static inline void sdfx_nchw_to_hwc(const float *src, int64_t n, int64_t c, int64_t h, int64_t w,
                                    float *dst) {
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < h * w; p++)
                dst[(b * h * w + p) * c + ch] = src[(b * c + ch) * h * w + p];
}

/* src [n][h][w][c] (engine HWC) -> dst [n][c][h][w] (torch). */
static inline void sdfx_hwc_to_nchw(const float *src, int64_t n, int64_t c, int64_t h, int64_t w,
                                    float *dst) {
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < h * w; p++)
                dst[(b * c + ch) * h * w + p] = src[(b * h * w + p) * c + ch];
}

static inline void sdfx_close(sdfx *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->e[i].name), free(f->e[i].data);
    free(f->e);
    cJSON_Delete(f->json);
    free(f);
}

#endif
