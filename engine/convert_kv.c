/*
 * convert_kv.c — the metadata list of `petrel convert` and its JSON
 * helpers (convert_internal.h describes both).
 *
 * Every key, string and array is a private copy registered in l->owned;
 * an allocation failure sets l->oom and leaves the list consistent (the
 * entry is skipped), and the converter checks oom before writing.
 */
#include "convert_internal.h"

#include "status.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void *own(cv_kv *l, void *p) {
    if (!p) {
        l->oom = true;
        return NULL;
    }
    if (l->n_owned == l->cap_owned) {
        const size_t cap = l->cap_owned ? 2 * l->cap_owned : 64;
        void **o = realloc(l->owned, cap * sizeof *o);
        if (!o) {
            free(p);
            l->oom = true;
            return NULL;
        }
        l->owned = o;
        l->cap_owned = cap;
    }
    l->owned[l->n_owned++] = p;
    return p;
}

static char *own_str(cv_kv *l, const char *s, size_t n) {
    char *c = own(l, malloc(n + 1));
    if (c) {
        if (n) memcpy(c, s, n);
        c[n] = 0;
    }
    return c;
}

void cv_kv_free(cv_kv *l) {
    for (size_t i = 0; i < l->n_owned; i++) free(l->owned[i]);
    free(l->owned);
    free(l->kv);
    memset(l, 0, sizeof *l);
}

pt_gguf_value *cv_kv_get(cv_kv *l, const char *key) {
    for (uint64_t i = 0; i < l->n; i++)
        if (pt_gguf_str_eq(l->kv[i].key, key)) return &l->kv[i].value;
    return NULL;
}

void cv_kv_del(cv_kv *l, const char *key) {
    for (uint64_t i = 0; i < l->n; i++)
        if (pt_gguf_str_eq(l->kv[i].key, key)) {
            memmove(&l->kv[i], &l->kv[i + 1], (size_t)(l->n - i - 1) * sizeof *l->kv);
            l->n--;
            return;
        }
}

/* The slot for key: the existing entry, or a new one at the end. */
static pt_gguf_value *slot(cv_kv *l, const char *key) {
    pt_gguf_value *v = cv_kv_get(l, key);
    if (v) return v;
    if (l->n == l->cap) {
        const uint64_t cap = l->cap ? 2 * l->cap : 64;
        pt_gguf_kv *kv = realloc(l->kv, (size_t)cap * sizeof *kv);
        if (!kv) {
            l->oom = true;
            return NULL;
        }
        l->kv = kv;
        l->cap = cap;
    }
    const size_t n = strlen(key);
    char *k = own_str(l, key, n);
    if (!k) return NULL;
    l->kv[l->n].key = (pt_gguf_str){k, n};
    memset(&l->kv[l->n].value, 0, sizeof l->kv[l->n].value);
    return &l->kv[l->n++].value;
}

void cv_kv_str(cv_kv *l, const char *key, const char *s, size_t n) {
    char *c = own_str(l, s, n);
    pt_gguf_value *v = c ? slot(l, key) : NULL;
    if (!v) return;
    v->type = PT_GGUF_STRING;
    v->v.s = (pt_gguf_str){c, n};
}

void cv_kv_cstr(cv_kv *l, const char *key, const char *s) {
    cv_kv_str(l, key, s, strlen(s));
}

void cv_kv_u32(cv_kv *l, const char *key, uint32_t x) {
    pt_gguf_value *v = slot(l, key);
    if (!v) return;
    v->type = PT_GGUF_UINT32;
    v->v.u = x;
}

void cv_kv_i32(cv_kv *l, const char *key, int32_t x) {
    pt_gguf_value *v = slot(l, key);
    if (!v) return;
    v->type = PT_GGUF_INT32;
    v->v.i = x;
}

void cv_kv_f32(cv_kv *l, const char *key, float x) {
    pt_gguf_value *v = slot(l, key);
    if (!v) return;
    v->type = PT_GGUF_FLOAT32;
    v->v.f = x;
}

void cv_kv_bool(cv_kv *l, const char *key, bool x) {
    pt_gguf_value *v = slot(l, key);
    if (!v) return;
    v->type = PT_GGUF_BOOL;
    v->v.b = x;
}

void cv_kv_arr(cv_kv *l, const char *key, pt_gguf_type elem_type, const void *raw, uint64_t n) {
    const uint64_t es = pt_gguf_scalar_size(elem_type);
    const uint64_t bytes = n * es;
    uint8_t *copy = own(l, malloc(bytes ? (size_t)bytes : 1));
    pt_gguf_value *v = copy ? slot(l, key) : NULL;
    if (!v) return;
    if (bytes) memcpy(copy, raw, (size_t)bytes);
    v->type = PT_GGUF_ARRAY;
    v->v.arr.elem_type = elem_type;
    v->v.arr.n = n;
    v->v.arr.raw = copy;
    v->v.arr.items = NULL;
}

pt_gguf_value *cv_kv_str_arr(cv_kv *l, const char *key, uint64_t n) {
    pt_gguf_value *items = own(l, calloc(n ? (size_t)n : 1, sizeof *items));
    pt_gguf_value *v = items ? slot(l, key) : NULL;
    if (!v) return NULL;
    for (uint64_t i = 0; i < n; i++) {
        items[i].type = PT_GGUF_STRING;
        items[i].v.s = (pt_gguf_str){"", 0};
    }
    v->type = PT_GGUF_ARRAY;
    v->v.arr.elem_type = PT_GGUF_STRING;
    v->v.arr.n = n;
    v->v.arr.raw = NULL;
    v->v.arr.items = items;
    return items;
}

void cv_kv_arr_set(cv_kv *l, pt_gguf_value *item, const char *s, size_t n) {
    char *c = own_str(l, s, n);
    if (c) item->v.s = (pt_gguf_str){c, n};
}

/* ---- JSON ------------------------------------------------------------------ */

pt_status cv_json_parse(const char *data, size_t n, const char *label, cJSON **out, pt_error *err) {
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(data, n, &end, false);
    if (!*out) {
        const size_t at = end && end >= data ? (size_t)(end - data) : 0;
        return pt_fail(err, PT_ERR_FORMAT, "%s: not valid JSON (near byte %zu)", label, at);
    }
    for (const char *p = end; p && p < data + n; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(*out);
            *out = NULL;
            return pt_fail(err, PT_ERR_FORMAT, "%s: bytes after the JSON value", label);
        }
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a JSON object", label);
    }
    return PT_OK;
}

pt_status cv_json_load(const char *dir, const char *name, bool required, cJSON **out, pt_error *err) {
    *out = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s%s%s", dir, name ? "/" : "", name ? name : "") >= (int)sizeof path)
        return pt_fail(err, PT_ERR_ARG, "path too long: %s", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT && !required) return PT_OK;
        return pt_fail(err, PT_ERR_IO, "%s: %s", path,
                       errno == ENOENT ? "missing" : strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > CV_MAX_JSON) {
        fclose(f);
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a regular file of at most %zu MiB", path, CV_MAX_JSON >> 20);
    }
    const size_t n = (size_t)st.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", path);
    }
    const size_t got = n ? fread(buf, 1, n, f) : 0;
    fclose(f);
    if (got != n) {
        free(buf);
        return pt_fail(err, PT_ERR_IO, "%s: read error", path);
    }
    pt_status s = cv_json_parse(buf, n, path, out, err);
    free(buf);
    return s;
}

static const cJSON *member(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

bool cv_json_int(const cJSON *o, const char *key, int64_t *out) {
    const cJSON *j = member(o, key);
    if (!cJSON_IsNumber(j)) return false;
    const double d = j->valuedouble;
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

bool cv_json_num(const cJSON *o, const char *key, double *out) {
    const cJSON *j = member(o, key);
    if (!cJSON_IsNumber(j)) return false;
    *out = j->valuedouble;
    return true;
}

bool cv_json_bool(const cJSON *o, const char *key, bool *out) {
    const cJSON *j = member(o, key);
    if (!cJSON_IsBool(j)) return false;
    *out = cJSON_IsTrue(j);
    return true;
}

const char *cv_json_str(const cJSON *o, const char *key) {
    const cJSON *j = member(o, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

const cJSON *cv_json_obj(const cJSON *o, const char *key) {
    const cJSON *j = member(o, key);
    return cJSON_IsObject(j) ? j : NULL;
}

const cJSON *cv_json_arr(const cJSON *o, const char *key) {
    const cJSON *j = member(o, key);
    return cJSON_IsArray(j) ? j : NULL;
}
