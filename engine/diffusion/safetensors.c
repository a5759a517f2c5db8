/*
 * safetensors.c — the validating .safetensors reader (layout in
 * safetensors.h).
 *
 * Order of checks: the 8-byte length, then the header bytes as JSON
 * (cJSON, with only spaces allowed after the object), then each entry's
 * dtype / shape / offsets, then names sorted and compared for duplicates,
 * then tensors sorted by offset and compared for overlaps. Nothing from
 * the file is used as a size before it has been bounded by the file.
 *
 * Invariants: f->data_offset <= f->size; for every tensor
 * data_offset <= offset and offset + nbytes <= size (so data + nbytes
 * stays inside the mapping).
 */
#include "safetensors.h"

#include "mapfile.h"
#include "quant.h"
#include "status.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const struct { const char *name; int size; uint32_t pt; } DTYPES[ST_DTYPE_COUNT] = {
    [ST_F32] = {"F32", 4, PT_TYPE_F32},   [ST_F16] = {"F16", 2, PT_TYPE_F16},
    [ST_BF16] = {"BF16", 2, PT_TYPE_BF16}, [ST_I32] = {"I32", 4, UINT32_MAX},
    [ST_I64] = {"I64", 8, UINT32_MAX},     [ST_U8] = {"U8", 1, UINT32_MAX},
};

const char *st_dtype_name(st_dtype d) { return (unsigned)d < ST_DTYPE_COUNT ? DTYPES[d].name : "?"; }
int st_dtype_size(st_dtype d) { return (unsigned)d < ST_DTYPE_COUNT ? DTYPES[d].size : 0; }
uint32_t st_dtype_pt_type(st_dtype d) {
    return (unsigned)d < ST_DTYPE_COUNT ? DTYPES[d].pt : UINT32_MAX;
}

/* A file string made safe for a one-line message: at most 64 bytes,
 * control bytes, quotes and backslashes escaped, "..." when cut. */
typedef struct shown { char s[64 * 4 + 8]; } shown;
static shown show(const char *str) {
    shown out;
    size_t o = 0, n = strlen(str);
    for (size_t i = 0; i < n && i < 64; i++) {
        unsigned char ch = (unsigned char)str[i];
        if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\')
            o += (size_t)snprintf(out.s + o, sizeof out.s - o, "\\x%02x", ch);
        else
            out.s[o++] = (char)ch;
    }
    if (n > 64) { memcpy(out.s + o, "...", 3); o += 3; }
    out.s[o] = 0;
    return out;
}

/* A JSON number that is an exact integer in [0, 2^53] (doubles hold every
 * such integer; larger ones could not be told apart). */
static bool json_u53(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (uint64_t)d;
    return true;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}
static int offset_cmp(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Parse one "NAME": {...} entry into t. */
static pt_status parse_entry(const st_file *f, const cJSON *e, st_tensor *t, pt_error *err) {
    const char *fn = f->name;
    shown nm = show(e->string);
    t->name = e->string;
    if (!cJSON_IsObject(e))
        return pt_fail(err, PT_ERR_FORMAT, "%s: header entry '%s' is not an object", fn, nm.s);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: tensor '%s' lacks a string dtype, a shape array or a data_offsets array",
                       fn, nm.s);
    int d = 0;
    while (d < ST_DTYPE_COUNT && strcmp(dt->valuestring, DTYPES[d].name) != 0) d++;
    if (d == ST_DTYPE_COUNT)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor '%s' has unknown dtype '%s'", fn, nm.s,
                       show(dt->valuestring).s);
    t->dtype = (st_dtype)d;

    int rank = cJSON_GetArraySize(sh);
    if (rank > ST_MAX_DIMS)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor '%s' has %d dimensions (at most %d)",
                       fn, nm.s, rank, ST_MAX_DIMS);
    t->n_dims = rank;
    uint64_t elems = 1;
    for (int i = 0; i < ST_MAX_DIMS; i++) t->shape[i] = 1;
    for (int i = 0; i < rank; i++) {
        uint64_t v;
        if (!json_u53(cJSON_GetArrayItem(sh, i), &v))
            return pt_fail(err, PT_ERR_FORMAT,
                           "%s: tensor '%s' shape[%d] is not a non-negative integer", fn, nm.s, i);
        t->shape[i] = (int64_t)v;
        if (__builtin_mul_overflow(elems, v, &elems))
            return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%s' element count overflows", fn, nm.s);
    }
    uint64_t want;
    if (__builtin_mul_overflow(elems, (uint64_t)DTYPES[d].size, &want))
        return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%s' size in bytes overflows", fn, nm.s);

    uint64_t begin, end;
    if (cJSON_GetArraySize(of) != 2 || !json_u53(cJSON_GetArrayItem(of, 0), &begin) ||
        !json_u53(cJSON_GetArrayItem(of, 1), &end))
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: tensor '%s' data_offsets is not two non-negative integers", fn, nm.s);
    uint64_t room = f->size - f->data_offset;
    if (begin > end || end > room)
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: tensor '%s' data [%" PRIu64 ", %" PRIu64 ") lies outside the data area "
                       "(%" PRIu64 " bytes)", fn, nm.s, begin, end, room);
    if (end - begin != want)
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: tensor '%s' holds %" PRIu64 " bytes but its shape and dtype %s need %"
                       PRIu64, fn, nm.s, end - begin, DTYPES[d].name, want);
    t->offset = f->data_offset + begin;
    t->nbytes = want;
    t->data = f->map + t->offset;
    return PT_OK;
}

static pt_status parse_meta(st_file *f, const cJSON *m, pt_error *err) {
    if (!cJSON_IsObject(m))
        return pt_fail(err, PT_ERR_FORMAT, "%s: __metadata__ is not an object", f->name);
    int n = cJSON_GetArraySize(m);
    if (n == 0) return PT_OK;
    f->meta_keys = calloc((size_t)n, sizeof *f->meta_keys);
    f->meta_values = calloc((size_t)n, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", f->name);
    const cJSON *e;
    cJSON_ArrayForEach(e, m) {
        /* the format says string values; others are skipped, not fatal */
        if (!cJSON_IsString(e)) continue;
        f->meta_keys[f->n_meta] = e->string;
        f->meta_values[f->n_meta] = e->valuestring;
        f->n_meta++;
    }
    return PT_OK;
}

static pt_status parse_header(st_file *f, pt_error *err) {
    const char *fn = f->name;
    if (f->size < 8)
        return pt_fail(err, PT_ERR_FORMAT, "%s: file of %" PRIu64 " bytes is too short for a "
                       "safetensors header", fn, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->map[i];
    if (n > f->size - 8)
        return pt_fail(err, PT_ERR_FORMAT, "%s: header length %" PRIu64 " exceeds the file (%"
                       PRIu64 " bytes)", fn, n, f->size);
    if (n > ST_MAX_HEADER)
        return pt_fail(err, PT_ERR_FORMAT, "%s: header length %" PRIu64 " is over the %u-byte limit",
                       fn, n, ST_MAX_HEADER);
    if (n < 2 || f->map[8] != '{')
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a safetensors file (no JSON header)", fn);
    f->data_offset = 8 + n;
    const char *hdr = (const char *)f->map + 8, *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, false);
    f->json_ = root;
    if (!root || !cJSON_IsObject(root) || !end)
        return pt_fail(err, PT_ERR_FORMAT, "%s: header is not a valid JSON object", fn);
    for (const char *p = end; p < hdr + n; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0)
            return pt_fail(err, PT_ERR_FORMAT,
                           "%s: bytes after the header's JSON object (offset %" PRIu64 ")", fn,
                           (uint64_t)(p - hdr) + 8);

    int count = cJSON_GetArraySize(root);
    if (count > 0) {
        f->tensors = calloc((size_t)count, sizeof *f->tensors);
        if (!f->tensors) return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", fn);
    }
    const cJSON *e;
    pt_status st;
    cJSON_ArrayForEach(e, root) {
        if (!e->string) return pt_fail(err, PT_ERR_FORMAT, "%s: header entry without a name", fn);
        if (strcmp(e->string, "__metadata__") == 0) {
            if (f->meta_keys)
                return pt_fail(err, PT_ERR_FORMAT, "%s: duplicate __metadata__", fn);
            if ((st = parse_meta(f, e, err))) return st;
            continue;
        }
        if ((st = parse_entry(f, e, &f->tensors[f->n_tensors], err))) return st;
        f->n_tensors++;
    }
    if (f->n_tensors) qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, name_cmp);
    for (uint64_t i = 1; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return pt_fail(err, PT_ERR_FORMAT, "%s: duplicate tensor name '%s'", fn,
                           show(f->tensors[i].name).s);

    /* Overlaps: sort pointers by offset and compare neighbours (empty
     * tensors overlap nothing). */
    if (f->n_tensors > 1) {
        const st_tensor **by_off = malloc((size_t)f->n_tensors * sizeof *by_off);
        if (!by_off) return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", fn);
        uint64_t m = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++)
            if (f->tensors[i].nbytes) by_off[m++] = &f->tensors[i];
        if (m) qsort(by_off, (size_t)m, sizeof *by_off, offset_cmp);
        for (uint64_t i = 1; i < m; i++) {
            const st_tensor *a = by_off[i - 1], *b = by_off[i];
            if (a->offset + a->nbytes > b->offset) {
                pt_status r = pt_fail(err, PT_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", fn,
                                      show(a->name).s, show(b->name).s);
                free(by_off);
                return r;
            }
        }
        free(by_off);
    }
    return PT_OK;
}

static pt_status parse(const uint8_t *data, uint64_t size, const char *label, bool owns_map,
                       st_file **out, pt_error *err) {
    size_t len = strlen(label);
    st_file *f = calloc(1, sizeof *f + len + 1);
    if (!f) return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    char *name = (char *)(f + 1);
    memcpy(name, label, len + 1);
    f->name = name;
    f->map = data;
    f->size = size;
    pt_status st = parse_header(f, err);
    if (st) {
        st_close(f); /* owns_map still false: does not unmap */
        return st;
    }
    f->owns_map = owns_map;
    *out = f;
    return PT_OK;
}

pt_status st_open_memory(const void *data, uint64_t size, const char *label, st_file **out,
                         pt_error *err) {
    if (!out || (!data && size)) return pt_fail(err, PT_ERR_ARG, "safetensors: no buffer given");
    *out = NULL;
    return parse(data, size, label ? label : "safetensors", false, out, err);
}

pt_status st_open(const char *path, st_file **out, pt_error *err) {
    if (!out || !path) return pt_fail(err, PT_ERR_ARG, "safetensors: no path given");
    *out = NULL;
    const uint8_t *map;
    uint64_t size;
    pt_status st = pt_map_file(path, "safetensors", &map, &size, err);
    if (st) return st;
    st = parse(map, size, path, true, out, err);
    if (st) munmap((void *)map, (size_t)size);
    return st;
}

void st_close(st_file *f) {
    if (!f) return;
    cJSON_Delete(f->json_);
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    if (f->owns_map) munmap((void *)f->map, (size_t)f->size);
    free(f);
}

const st_tensor *st_find(const st_file *f, const char *name) {
    uint64_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = strcmp(f->tensors[mid].name, name);
        if (r == 0) return &f->tensors[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

const char *st_meta(const st_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}
