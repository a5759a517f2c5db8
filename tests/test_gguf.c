/*
 * test_gguf.c — the GGUF reader (engine/gguf.c).
 *
 * 1. A small GGUF written here byte by byte (every value type, nested
 *    arrays, four tensors, alignment 64) parses back to exactly what was
 *    written, and pt_gguf_value_format renders each value as expected.
 * 2. A corruption table: the same file patched at recorded field positions
 *    (bad magic, versions, absurd counts, bad shapes, offsets, alignment,
 *    duplicates...) must fail with the expected status and a message with
 *    a given word. Every prefix of the file must fail cleanly, and
 *    byte-flipped copies must never crash. Buffers are exact-size heap
 *    copies, so an ASan build catches any read past the end.
 * 3. The real SmolLM2 file, checked against facts read with gguf-py 0.19
 *    (GGUFReader): counts, metadata values, tensor types, shapes, offsets.
 */
#include "check.h"
#include "gguf.h"
#include "quant.h"

#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

/* ---- a tiny GGUF writer ------------------------------------------------- */

typedef struct wbuf {
    uint8_t *p;
    size_t len, cap;
} wbuf;

static void w_bytes(wbuf *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fprintf(stderr, "out of memory\n"); exit(1); }
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void w_u8(wbuf *b, uint8_t v) { w_bytes(b, &v, 1); }
static void w_le(wbuf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) w_u8(b, (uint8_t)(v >> (8 * i)));
}
static void w_u16(wbuf *b, uint16_t v) { w_le(b, v, 2); }
static void w_u32(wbuf *b, uint32_t v) { w_le(b, v, 4); }
static void w_u64(wbuf *b, uint64_t v) { w_le(b, v, 8); }
static void w_f32(wbuf *b, float f) { uint32_t u; memcpy(&u, &f, 4); w_u32(b, u); }
static void w_f64(wbuf *b, double f) { uint64_t u; memcpy(&u, &f, 8); w_u64(b, u); }
static void w_str(wbuf *b, const char *s) { w_u64(b, strlen(s)); w_bytes(b, s, strlen(s)); }
static void w_key(wbuf *b, const char *k, pt_gguf_type t) { w_str(b, k); w_u32(b, t); }
static void w_pad(wbuf *b, size_t align) { while (b->len % align) w_u8(b, 0); }

static void patch_le(uint8_t *p, size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* Byte positions of fields in the sample file, for the corruption table. */
typedef struct layout {
    size_t magic; /* 0 */
    size_t version, n_tensors, n_kv;
    size_t key_len_u8;      /* length of key "t.u8" */
    size_t key_name_u8;     /* bytes of key "t.u8" */
    size_t type_u8;         /* value type of "t.u8" */
    size_t val_bool;        /* the byte of "t.bool" */
    size_t arr_i32_type;    /* elem_type of "t.arr.i32" */
    size_t arr_i32_count;   /* count of "t.arr.i32" */
    size_t arr_bool_elem;   /* element 1 of "t.arr.bool" */
    size_t align_type;      /* value type of "general.alignment" */
    size_t align_val;       /* value of "general.alignment" */
    size_t t_name[4];       /* first name byte of tensor i */
    size_t t_ndims[4], t_ne[4], t_type[4], t_offset[4];
    size_t data_offset;
} layout;

/* The four tensors: name, type, n_dims, ne, offset (relative to data). */
typedef struct tspec {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
    uint64_t offset, nbytes;
} tspec;

static const tspec TENSORS[4] = {
    {"a", PT_TYPE_F32, 1, {3, 1, 1, 1}, 0, 12},
    {"b", PT_TYPE_Q8_0, 2, {64, 2, 1, 1}, 64, 2 * 2 * 34},     /* 2 blocks of 34 bytes per row */
    {"c", PT_TYPE_F16, 4, {2, 3, 4, 5}, 256, 120 * 2},
    {"blk.0.attn_q.weight", PT_TYPE_Q4_1, 4, {32, 1, 1, 1}, 512, 20}, /* 1 block of 20 bytes */
};
#define ALIGN 64

/* The sample file: version 3 (or 2), alignment 64, ends exactly at the end
 * of the last tensor's data. */
static wbuf build_sample(uint32_t version, layout *L) {
    wbuf b = {0};
    layout l = {0};
    w_bytes(&b, "GGUF", 4);
    l.version = b.len; w_u32(&b, version);
    l.n_tensors = b.len; w_u64(&b, 4);
    l.n_kv = b.len; w_u64(&b, 23);

    l.key_len_u8 = b.len; l.key_name_u8 = b.len + 8;
    w_str(&b, "t.u8"); l.type_u8 = b.len; w_u32(&b, PT_GGUF_UINT8); w_u8(&b, 200);
    w_key(&b, "t.i8", PT_GGUF_INT8); w_u8(&b, (uint8_t)-100);
    w_key(&b, "t.u16", PT_GGUF_UINT16); w_u16(&b, 60000);
    w_key(&b, "t.i16", PT_GGUF_INT16); w_u16(&b, (uint16_t)-30000);
    w_key(&b, "t.u32", PT_GGUF_UINT32); w_u32(&b, 4000000000u);
    w_key(&b, "t.i32", PT_GGUF_INT32); w_u32(&b, (uint32_t)-2000000000);
    w_key(&b, "t.f32", PT_GGUF_FLOAT32); w_f32(&b, 0.1f);
    w_key(&b, "t.bool", PT_GGUF_BOOL); l.val_bool = b.len; w_u8(&b, 1);
    w_key(&b, "t.str", PT_GGUF_STRING); w_str(&b, "hello\n\"w\"");
    w_key(&b, "t.u64", PT_GGUF_UINT64); w_u64(&b, (1ull << 63) + 5);
    w_key(&b, "t.i64", PT_GGUF_INT64); w_u64(&b, (uint64_t)-(int64_t)(1ll << 40));
    w_key(&b, "t.f64", PT_GGUF_FLOAT64); w_f64(&b, 3.141592653589793);

    w_key(&b, "t.arr.i32", PT_GGUF_ARRAY);
    l.arr_i32_type = b.len; w_u32(&b, PT_GGUF_INT32);
    l.arr_i32_count = b.len; w_u64(&b, 5);
    for (int i = 1; i <= 5; i++) w_u32(&b, (uint32_t)(i % 2 ? i : -i));

    w_key(&b, "t.arr.str", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_STRING); w_u64(&b, 3);
    w_str(&b, "a"); w_str(&b, "bc"); w_str(&b, "");

    /* [[1, 2], [3], []] of uint16 */
    w_key(&b, "t.arr.nested", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_ARRAY); w_u64(&b, 3);
    w_u32(&b, PT_GGUF_UINT16); w_u64(&b, 2); w_u16(&b, 1); w_u16(&b, 2);
    w_u32(&b, PT_GGUF_UINT16); w_u64(&b, 1); w_u16(&b, 3);
    w_u32(&b, PT_GGUF_UINT16); w_u64(&b, 0);

    /* [["x"], ["y", "z"]] */
    w_key(&b, "t.arr.nstr", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_ARRAY); w_u64(&b, 2);
    w_u32(&b, PT_GGUF_STRING); w_u64(&b, 1); w_str(&b, "x");
    w_u32(&b, PT_GGUF_STRING); w_u64(&b, 2); w_str(&b, "y"); w_str(&b, "z");

    w_key(&b, "t.arr.empty", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_UINT8); w_u64(&b, 0);
    w_key(&b, "t.arr.bool", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_BOOL); w_u64(&b, 2);
    w_u8(&b, 1); l.arr_bool_elem = b.len; w_u8(&b, 0);
    w_key(&b, "t.arr.f32", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_FLOAT32); w_u64(&b, 2);
    w_f32(&b, 0.5f); w_f32(&b, -1.25f);
    w_key(&b, "t.arr.u64", PT_GGUF_ARRAY); w_u32(&b, PT_GGUF_UINT64); w_u64(&b, 2);
    w_u64(&b, UINT64_MAX); w_u64(&b, 7);
    w_key(&b, "t.utf8", PT_GGUF_STRING); w_str(&b, "\xc3\xa9t\xc3\xa9");

    w_str(&b, "general.alignment");
    l.align_type = b.len; w_u32(&b, PT_GGUF_UINT32);
    l.align_val = b.len; w_u32(&b, ALIGN);
    w_key(&b, "general.architecture", PT_GGUF_STRING); w_str(&b, "llama");

    for (int i = 0; i < 4; i++) {
        const tspec *t = &TENSORS[i];
        l.t_name[i] = b.len + 8;
        w_str(&b, t->name);
        l.t_ndims[i] = b.len; w_u32(&b, t->n_dims);
        l.t_ne[i] = b.len;
        for (uint32_t d = 0; d < t->n_dims; d++) w_u64(&b, (uint64_t)t->ne[d]);
        l.t_type[i] = b.len; w_u32(&b, t->type);
        l.t_offset[i] = b.len; w_u64(&b, t->offset);
    }
    w_pad(&b, ALIGN);
    l.data_offset = b.len;
    /* data: byte k of tensor i is (i * 40 + k) & 0xff, padding zero */
    for (int i = 0; i < 4; i++) {
        while (b.len < l.data_offset + TENSORS[i].offset) w_u8(&b, 0);
        for (uint64_t k = 0; k < TENSORS[i].nbytes; k++) w_u8(&b, (uint8_t)(i * 40 + k));
    }
    if (L) *L = l;
    return b;
}

/* An exact-size heap copy, so ASan sees any read past the end. */
static uint8_t *exact_copy(const uint8_t *src, size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    if (n) memcpy(p, src, n);
    return p;
}

/* Parse an exact-size copy of src[0..n); only the status and message are
 * kept (a successful parse is closed before the copy is freed). */
static pt_status open_copy(const uint8_t *src, size_t n, pt_gguf **g, pt_error *err) {
    uint8_t *p = exact_copy(src, n);
    pt_status st = pt_gguf_open_memory(p, n, g, err);
    if (st == PT_OK) {
        pt_gguf_close(*g);
        *g = NULL;
    }
    free(p);
    return st;
}

static bool one_line(const char *s) { return !strchr(s, '\n') && !strchr(s, '\r') && *s; }

/* ---- 1. the sample file parses back ------------------------------------- */

static void fmt_check(const pt_gguf *g, const char *key, int max_items, const char *want) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    CHECK(kv != NULL, "key %s missing", key);
    if (!kv) return;
    char buf[256];
    pt_gguf_value_format(&kv->value, buf, sizeof buf, max_items);
    CHECK(strcmp(buf, want) == 0, "format %s: got [%s], want [%s]", key, buf, want);
}

static void check_sample(const pt_gguf *g, const layout *l, uint32_t version) {
    CHECK(g->version == version, "version %u", g->version);
    CHECK(g->n_kv == 23 && g->n_tensors == 4, "counts %llu %llu", (unsigned long long)g->n_kv,
          (unsigned long long)g->n_tensors);
    CHECK(g->alignment == ALIGN, "alignment %llu", (unsigned long long)g->alignment);
    CHECK(g->data_offset == l->data_offset, "data_offset %llu want %zu",
          (unsigned long long)g->data_offset, l->data_offset);
    CHECK(pt_gguf_str_eq(g->kv[0].key, "t.u8") && pt_gguf_str_eq(g->kv[22].key, "general.architecture"),
          "kv order");

    /* scalars, through the typed getters */
    uint32_t u32 = 0;
    int64_t i64 = 0;
    float f = 0;
    bool bo = false;
    pt_gguf_str s = {0};
    CHECK(pt_gguf_get_u32(g, "t.u8", &u32) && u32 == 200, "u8 %u", u32);
    CHECK(pt_gguf_get_u32(g, "t.u16", &u32) && u32 == 60000, "u16 %u", u32);
    CHECK(pt_gguf_get_u32(g, "t.u32", &u32) && u32 == 4000000000u, "u32 %u", u32);
    CHECK(!pt_gguf_get_u32(g, "t.i8", &u32), "negative i8 must not convert to u32");
    CHECK(!pt_gguf_get_u32(g, "t.u64", &u32), "2^63+5 must not fit u32");
    CHECK(!pt_gguf_get_u32(g, "t.str", &u32), "string is not u32");
    CHECK(!pt_gguf_get_u32(g, "nope", &u32), "missing key");
    CHECK(pt_gguf_get_i64(g, "t.i8", &i64) && i64 == -100, "i8 %lld", (long long)i64);
    CHECK(pt_gguf_get_i64(g, "t.i16", &i64) && i64 == -30000, "i16 %lld", (long long)i64);
    CHECK(pt_gguf_get_i64(g, "t.i32", &i64) && i64 == -2000000000, "i32 %lld", (long long)i64);
    CHECK(pt_gguf_get_i64(g, "t.i64", &i64) && i64 == -(1ll << 40), "i64 %lld", (long long)i64);
    CHECK(pt_gguf_get_i64(g, "t.u32", &i64) && i64 == 4000000000ll, "u32 as i64 %lld", (long long)i64);
    CHECK(!pt_gguf_get_i64(g, "t.u64", &i64), "2^63+5 must not fit i64");
    CHECK(!pt_gguf_get_i64(g, "t.f32", &i64), "float is not i64");
    CHECK(pt_gguf_get_f32(g, "t.f32", &f) && f == 0.1f, "f32 %g", f);
    CHECK(pt_gguf_get_f32(g, "t.f64", &f) && f == (float)3.141592653589793, "f64 %g", f);
    CHECK(!pt_gguf_get_f32(g, "t.u8", &f), "integer is not f32");
    CHECK(pt_gguf_get_bool(g, "t.bool", &bo) && bo, "bool");
    CHECK(!pt_gguf_get_bool(g, "t.u8", &bo), "u8 is not bool");
    CHECK(pt_gguf_get_str(g, "t.str", &s) && s.len == 9 && memcmp(s.ptr, "hello\n\"w\"", 9) == 0,
          "str");
    CHECK(pt_gguf_get_str(g, "general.architecture", &s) && pt_gguf_str_eq(s, "llama"), "arch");
    CHECK(!pt_gguf_get_str(g, "t.u8", &s), "u8 is not str");
    const pt_gguf_kv *kv = pt_gguf_find(g, "t.u64");
    CHECK(kv && kv->value.type == PT_GGUF_UINT64 && kv->value.v.u == (1ull << 63) + 5, "u64");
    kv = pt_gguf_find(g, "t.f64");
    CHECK(kv && kv->value.type == PT_GGUF_FLOAT64 && kv->value.v.f == 3.141592653589793, "f64");
    CHECK(pt_gguf_find(g, "t.u") == NULL && pt_gguf_find(g, "t.u88") == NULL, "prefix keys");

    /* arrays */
    const pt_gguf_value *a = pt_gguf_get_arr(g, "t.arr.i32", PT_GGUF_INT32);
    CHECK(a && a->v.arr.n == 5, "arr.i32");
    if (a) {
        for (int i = 0; i < 5; i++) {
            int want = (i + 1) % 2 ? i + 1 : -(i + 1);
            CHECK(pt_gguf_arr_i64(a, (uint64_t)i) == want, "arr.i32[%d]", i);
            CHECK(pt_gguf_arr_f64(a, (uint64_t)i) == want, "arr.i32[%d] f64", i);
        }
        CHECK(pt_gguf_arr_i64(a, 5) == 0, "out of range element is 0");
    }
    CHECK(pt_gguf_get_arr(g, "t.arr.i32", PT_GGUF_UINT32) == NULL, "wrong elem type");
    CHECK(pt_gguf_get_arr(g, "t.u8", PT_GGUF_UINT8) == NULL, "not an array");
    a = pt_gguf_get_arr(g, "t.arr.str", PT_GGUF_STRING);
    CHECK(a && a->v.arr.n == 3 && a->v.arr.items && pt_gguf_str_eq(a->v.arr.items[0].v.s, "a") &&
              pt_gguf_str_eq(a->v.arr.items[1].v.s, "bc") && a->v.arr.items[2].v.s.len == 0,
          "arr.str");
    a = pt_gguf_get_arr(g, "t.arr.nested", PT_GGUF_ARRAY);
    CHECK(a && a->v.arr.n == 3, "arr.nested");
    if (a && a->v.arr.n == 3) {
        const pt_gguf_value *it = a->v.arr.items;
        CHECK(it[0].type == PT_GGUF_ARRAY && it[0].v.arr.elem_type == PT_GGUF_UINT16 &&
                  it[0].v.arr.n == 2 && pt_gguf_arr_i64(&it[0], 0) == 1 &&
                  pt_gguf_arr_i64(&it[0], 1) == 2, "nested[0]");
        CHECK(it[1].v.arr.n == 1 && pt_gguf_arr_i64(&it[1], 0) == 3, "nested[1]");
        CHECK(it[2].v.arr.n == 0, "nested[2]");
    }
    a = pt_gguf_get_arr(g, "t.arr.f32", PT_GGUF_FLOAT32);
    CHECK(a && pt_gguf_arr_f64(a, 0) == 0.5 && pt_gguf_arr_f64(a, 1) == -1.25, "arr.f32");
    a = pt_gguf_get_arr(g, "t.arr.bool", PT_GGUF_BOOL);
    CHECK(a && pt_gguf_arr_i64(a, 0) == 1 && pt_gguf_arr_i64(a, 1) == 0, "arr.bool");
    a = pt_gguf_get_arr(g, "t.arr.u64", PT_GGUF_UINT64);
    CHECK(a && pt_gguf_arr_f64(a, 0) == 18446744073709551615.0 && pt_gguf_arr_i64(a, 1) == 7,
          "arr.u64");

    /* formatting */
    fmt_check(g, "t.u8", 8, "200");
    fmt_check(g, "t.i8", 8, "-100");
    fmt_check(g, "t.u16", 8, "60000");
    fmt_check(g, "t.i16", 8, "-30000");
    fmt_check(g, "t.u32", 8, "4000000000");
    fmt_check(g, "t.i32", 8, "-2000000000");
    fmt_check(g, "t.f32", 8, "0.1");
    fmt_check(g, "t.bool", 8, "true");
    fmt_check(g, "t.str", 8, "\"hello\\n\\\"w\\\"\"");
    fmt_check(g, "t.u64", 8, "9223372036854775813");
    fmt_check(g, "t.i64", 8, "-1099511627776");
    fmt_check(g, "t.f64", 8, "3.141592653589793");
    fmt_check(g, "t.arr.i32", -1, "[1, -2, 3, -4, 5]");
    fmt_check(g, "t.arr.i32", 5, "[1, -2, 3, -4, 5]");
    fmt_check(g, "t.arr.i32", 3, "[1, -2, 3, ... (5 total)]");
    fmt_check(g, "t.arr.i32", 0, "[... (5 total)]");
    fmt_check(g, "t.arr.str", 8, "[\"a\", \"bc\", \"\"]");
    fmt_check(g, "t.arr.nested", 8, "[[1, 2], [3], []]");
    fmt_check(g, "t.arr.nested", 1, "[[1, ... (2 total)], ... (3 total)]");
    fmt_check(g, "t.arr.nstr", 8, "[[\"x\"], [\"y\", \"z\"]]");
    fmt_check(g, "t.arr.empty", 8, "[]");
    fmt_check(g, "t.arr.bool", 8, "[true, false]");
    fmt_check(g, "t.arr.f32", 8, "[0.5, -1.25]");
    fmt_check(g, "t.arr.u64", 8, "[18446744073709551615, 7]");
    fmt_check(g, "general.alignment", 8, "64");

    /* truncated output: "..." at the end, never a cut UTF-8 sequence */
    kv = pt_gguf_find(g, "t.arr.i32");
    char buf[64];
    memset(buf, 'Z', sizeof buf);
    pt_gguf_value_format(&kv->value, buf, 10, -1);
    CHECK(strcmp(buf, "[1, -2...") == 0 && buf[10] == 'Z', "cap 10: [%s]", buf);
    pt_gguf_value_format(&kv->value, buf, 1, -1);
    CHECK(buf[0] == 0, "cap 1");
    pt_gguf_value_format(&kv->value, buf, 18, -1); /* exactly fits 17 chars + NUL */
    CHECK(strcmp(buf, "[1, -2, 3, -4, 5]") == 0, "cap 18: [%s]", buf);
    pt_gguf_value_format(&kv->value, buf, 17, -1);
    CHECK(strcmp(buf, "[1, -2, 3, -4...") == 0, "cap 17: [%s]", buf);
    kv = pt_gguf_find(g, "t.utf8"); /* "\"été\"" is 1 + 2+1+2 + 1 bytes */
    pt_gguf_value_format(&kv->value, buf, sizeof buf, 8);
    CHECK(strcmp(buf, "\"\xc3\xa9t\xc3\xa9\"") == 0, "utf8 [%s]", buf);
    pt_gguf_value_format(&kv->value, buf, 6, 8); /* room for 2 bytes + "...": cut before é */
    CHECK(strcmp(buf, "\"...") == 0, "utf8 cut [%s]", buf);
    pt_gguf_value_format(&kv->value, buf, 7, 8); /* 3 bytes: "\"é" + "..." */
    CHECK(strcmp(buf, "\"\xc3\xa9...") == 0, "utf8 cut 2 [%s]", buf);

    /* tensors */
    for (int i = 0; i < 4; i++) {
        const tspec *ts = &TENSORS[i];
        const pt_gguf_tensor *t = pt_gguf_find_tensor(g, ts->name);
        CHECK(t == &g->tensors[i], "tensor %s found in file order", ts->name);
        if (!t) continue;
        CHECK(t->n_dims == ts->n_dims && t->type == ts->type, "tensor %s dims/type", ts->name);
        for (int d = 0; d < 4; d++) CHECK(t->ne[d] == ts->ne[d], "tensor %s ne[%d]", ts->name, d);
        CHECK(t->offset == l->data_offset + ts->offset, "tensor %s offset %llu", ts->name,
              (unsigned long long)t->offset);
        CHECK(t->nbytes == ts->nbytes, "tensor %s nbytes %llu", ts->name,
              (unsigned long long)t->nbytes);
        CHECK((const uint8_t *)t->data == g->map + t->offset, "tensor %s data", ts->name);
        const uint8_t *d = t->data;
        CHECK(d[0] == (uint8_t)(i * 40) && d[ts->nbytes - 1] == (uint8_t)(i * 40 + ts->nbytes - 1),
              "tensor %s bytes", ts->name);
    }
    CHECK(pt_gguf_find_tensor(g, "blk.0.attn_q") == NULL && pt_gguf_find_tensor(g, "z") == NULL,
          "missing tensor");
    CHECK(g->tensors[3].offset + g->tensors[3].nbytes == g->size, "file ends at the last tensor");
}

static void test_sample(void) {
    layout l;
    for (uint32_t version = 2; version <= 3; version++) {
        wbuf b = build_sample(version, &l);
        uint8_t *p = exact_copy(b.p, b.len);
        pt_gguf *g = NULL;
        pt_error err = {0};
        pt_status st = pt_gguf_open_memory(p, b.len, &g, &err);
        CHECK(st == PT_OK, "sample v%u: %s", version, err.msg);
        if (st == PT_OK) {
            CHECK(g->map == p && g->size == b.len && !g->owns_map, "memory mapping fields");
            check_sample(g, &l, version);
            pt_gguf_close(g);
        }
        free(p);
        free(b.p);
    }
}

/* The same file through pt_gguf_open (mmap), plus open errors. */
static void test_open_file(void) {
    layout l;
    wbuf b = build_sample(3, &l);
    const char *tmp = getenv("TMPDIR");
    char path[4096], dir[3000];
    snprintf(dir, sizeof dir, "%s/petrel-test-gguf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) { CHECK(0, "mkdtemp failed"); free(b.p); return; }
    snprintf(path, sizeof path, "%s/sample.gguf", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b.p, 1, b.len, f) == b.len, "write %s", path);
    if (f) fclose(f);

    pt_gguf *g = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(path, &g, &err);
    CHECK(st == PT_OK, "open %s: %s", path, err.msg);
    if (st == PT_OK) {
        CHECK(g->owns_map && g->size == b.len && memcmp(g->map, b.p, b.len) == 0, "mapped bytes");
        check_sample(g, &l, 3);
        pt_gguf_close(g);
    }

    /* a bad file through the mmap path */
    f = fopen(path, "wb");
    if (f) { fwrite("hello, not gguf\n", 1, 16, f); fclose(f); }
    g = (pt_gguf *)1;
    st = pt_gguf_open(path, &g, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "magic") && g == NULL, "text file: %s", err.msg);

    f = fopen(path, "wb");
    if (f) fclose(f);
    st = pt_gguf_open(path, &g, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "empty"), "empty file: %s", err.msg);

    st = pt_gguf_open(dir, &g, &err);
    CHECK(st == PT_ERR_IO && strstr(err.msg, "directory"), "directory: %s", err.msg);

    remove(path);
    st = pt_gguf_open(path, &g, &err);
    CHECK(st == PT_ERR_IO && strstr(err.msg, "No such file") && strstr(err.msg, path),
          "missing file: %s", err.msg);
    rmdir(dir);
    free(b.p);
}

/* Small files built differently from the sample. */
static void test_other_layouts(void) {
    pt_gguf *g = NULL;
    pt_error err = {0};

    /* no tensors, no alignment key, no padding after the header */
    wbuf b = {0};
    w_bytes(&b, "GGUF", 4); w_u32(&b, 3); w_u64(&b, 0); w_u64(&b, 1);
    w_key(&b, "k", PT_GGUF_UINT8); w_u8(&b, 7);
    pt_status st = pt_gguf_open_memory(b.p, b.len, &g, &err);
    CHECK(st == PT_OK, "metadata-only: %s", err.msg);
    if (st == PT_OK) {
        CHECK(g->alignment == 32 && g->n_tensors == 0 && g->tensors == NULL, "defaults");
        CHECK(pt_gguf_find_tensor(g, "k") == NULL, "no tensors");
        pt_gguf_close(g);
    }
    free(b.p);

    /* empty header: no keys, no tensors */
    b = (wbuf){0};
    w_bytes(&b, "GGUF", 4); w_u32(&b, 3); w_u64(&b, 0); w_u64(&b, 0);
    st = pt_gguf_open_memory(b.p, b.len, &g, &err);
    CHECK(st == PT_OK && g->n_kv == 0 && pt_gguf_find(g, "x") == NULL, "empty header: %s", err.msg);
    if (st == PT_OK) pt_gguf_close(g);
    free(b.p);

    /* arrays nested 8 deep are fine, 9 deep are refused */
    for (int depth = 8; depth <= 9; depth++) {
        b = (wbuf){0};
        w_bytes(&b, "GGUF", 4); w_u32(&b, 3); w_u64(&b, 0); w_u64(&b, 1);
        w_key(&b, "deep", PT_GGUF_ARRAY);
        for (int i = 1; i < depth; i++) { w_u32(&b, PT_GGUF_ARRAY); w_u64(&b, 1); }
        w_u32(&b, PT_GGUF_UINT8); w_u64(&b, 1); w_u8(&b, 42);
        st = pt_gguf_open_memory(b.p, b.len, &g, &err);
        if (depth == 8) {
            CHECK(st == PT_OK, "depth 8: %s", err.msg);
            if (st == PT_OK) {
                char buf[64];
                pt_gguf_value_format(&g->kv[0].value, buf, sizeof buf, 4);
                CHECK(strcmp(buf, "[[[[[[[[42]]]]]]]]") == 0, "depth 8 format [%s]", buf);
                pt_gguf_close(g);
            }
        } else {
            CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "deep") && strstr(err.msg, "'deep'"),
                  "depth 9: %d %s", st, err.msg);
        }
        free(b.p);
    }

    /* a zero-size tensor (ne[1] = 0) at the very end of the file */
    b = (wbuf){0};
    w_bytes(&b, "GGUF", 4); w_u32(&b, 3); w_u64(&b, 1); w_u64(&b, 0);
    w_str(&b, "z"); w_u32(&b, 2); w_u64(&b, 4); w_u64(&b, 0); w_u32(&b, PT_TYPE_F32); w_u64(&b, 0);
    w_pad(&b, 32);
    st = pt_gguf_open_memory(b.p, b.len, &g, &err);
    CHECK(st == PT_OK, "zero-size tensor: %s", err.msg);
    if (st == PT_OK) {
        CHECK(g->tensors[0].nbytes == 0 && g->tensors[0].offset == b.len, "zero-size tensor fields");
        pt_gguf_close(g);
    }
    /* ... but ne[0] = 0 with a huge row count overflows the row count */
    free(b.p);
    b = (wbuf){0};
    w_bytes(&b, "GGUF", 4); w_u32(&b, 3); w_u64(&b, 1); w_u64(&b, 0);
    w_str(&b, "z"); w_u32(&b, 3); w_u64(&b, 0); w_u64(&b, 1ull << 40); w_u64(&b, 1ull << 40);
    w_u32(&b, PT_TYPE_F32); w_u64(&b, 0);
    w_pad(&b, 32);
    st = pt_gguf_open_memory(b.p, b.len, &g, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "overflow"), "rows overflow: %s", err.msg);
    free(b.p);

    /* NULL buffer */
    st = pt_gguf_open_memory(NULL, 10, &g, &err);
    CHECK(st == PT_ERR_ARG, "NULL buffer");
    pt_gguf_close(NULL);
}

/* ---- 2. corruption table ------------------------------------------------ */

typedef enum { P_LE, P_BYTES } patch_kind;

typedef struct bad_case {
    const char *what;
    size_t layout_field; /* offsetof into layout; the position to patch */
    int index_add;       /* added to that position (e.g. 8 * d for ne[d]) */
    patch_kind kind;
    uint64_t value;      /* P_LE: value ... */
    int width;           /* ... of this many bytes */
    const char *bytes;   /* P_BYTES: raw bytes (strlen) */
    pt_status want;
    const char *word;    /* must appear in the message */
    const char *word2;   /* and this too, when set */
} bad_case;

#define AT(field) offsetof(layout, field)

static const bad_case BAD[] = {
    {"wrong magic", AT(magic), 0, P_BYTES, 0, 0, "GGUG", PT_ERR_FORMAT, "magic", NULL},
    {"ELF magic", AT(magic), 0, P_BYTES, 0, 0, "\x7f" "ELF", PT_ERR_FORMAT, "magic", NULL},
    {"version 1", AT(version), 0, P_LE, 1, 4, NULL, PT_ERR_UNSUPPORTED, "version 1", NULL},
    {"version 99", AT(version), 0, P_LE, 99, 4, NULL, PT_ERR_UNSUPPORTED, "version 99", NULL},
    {"version 0", AT(version), 0, P_LE, 0, 4, NULL, PT_ERR_UNSUPPORTED, "version", NULL},
    {"big-endian", AT(version), 0, P_LE, 0x03000000, 4, NULL, PT_ERR_UNSUPPORTED, "big-endian", NULL},
    {"n_kv 2^62", AT(n_kv), 0, P_LE, 1ull << 62, 8, NULL, PT_ERR_FORMAT, "key/value", "4611686018427387904"},
    {"n_kv 2^64-1", AT(n_kv), 0, P_LE, UINT64_MAX, 8, NULL, PT_ERR_FORMAT, "key/value", NULL},
    {"n_tensors 2^62", AT(n_tensors), 0, P_LE, 1ull << 62, 8, NULL, PT_ERR_FORMAT, "tensors", "4611686018427387904"},
    {"n_kv too many", AT(n_kv), 0, P_LE, 24, 8, NULL, PT_ERR_FORMAT, "n_dims 0", NULL},
    {"n_tensors too many", AT(n_tensors), 0, P_LE, 5, 8, NULL, PT_ERR_FORMAT, "n_dims 0", NULL},
    {"n_kv too few", AT(n_kv), 0, P_LE, 22, 8, NULL, PT_ERR_FORMAT, "general.architecture", NULL},
    {"key length past EOF", AT(key_len_u8), 0, P_LE, 1000000000, 8, NULL, PT_ERR_FORMAT, "truncated", "key 0"},
    {"key length 2^64-1", AT(key_len_u8), 0, P_LE, UINT64_MAX, 8, NULL, PT_ERR_FORMAT, "truncated", NULL},
    {"unknown value type", AT(type_u8), 0, P_LE, 13, 4, NULL, PT_ERR_FORMAT, "unknown value type 13", "'t.u8'"},
    {"bool value 2", AT(val_bool), 0, P_LE, 2, 1, NULL, PT_ERR_FORMAT, "bool", "'t.bool'"},
    {"array count 2^62", AT(arr_i32_count), 0, P_LE, 1ull << 62, 8, NULL, PT_ERR_FORMAT, "array", "'t.arr.i32'"},
    {"array count 2^64-1", AT(arr_i32_count), 0, P_LE, UINT64_MAX, 8, NULL, PT_ERR_FORMAT, "array", NULL},
    {"array elem type 77", AT(arr_i32_type), 0, P_LE, 77, 4, NULL, PT_ERR_FORMAT, "unknown value type 77", "'t.arr.i32'"},
    {"duplicate key", AT(key_name_u8), 2, P_BYTES, 0, 0, "i", PT_ERR_FORMAT, "duplicate key", "'t.i8'"},
    {"alignment 0", AT(align_val), 0, P_LE, 0, 4, NULL, PT_ERR_FORMAT, "alignment", "power of two"},
    {"alignment 1", AT(align_val), 0, P_LE, 1, 4, NULL, PT_ERR_FORMAT, "alignment", "multiple of 8"},
    {"alignment 4", AT(align_val), 0, P_LE, 4, 4, NULL, PT_ERR_FORMAT, "alignment", "multiple of 8"},
    {"bool array element 2", AT(arr_bool_elem), 0, P_LE, 2, 1, NULL, PT_ERR_FORMAT, "bool", "'t.arr.bool'"},
    {"alignment 3", AT(align_val), 0, P_LE, 3, 4, NULL, PT_ERR_FORMAT, "alignment", "power of two"},
    {"alignment int32", AT(align_type), 0, P_LE, PT_GGUF_INT32, 4, NULL, PT_ERR_FORMAT, "alignment", "uint32"},
    {"alignment 128", AT(align_val), 0, P_LE, 128, 4, NULL, PT_ERR_FORMAT, "'b'", "alignment"},
    {"n_dims 0", AT(t_ndims[1]), 0, P_LE, 0, 4, NULL, PT_ERR_FORMAT, "n_dims 0", "'b'"},
    {"n_dims 5", AT(t_ndims[1]), 0, P_LE, 5, 4, NULL, PT_ERR_FORMAT, "n_dims 5", "'b'"},
    {"negative ne", AT(t_ne[1]), 8, P_LE, (uint64_t)-2, 8, NULL, PT_ERR_FORMAT, "negative", "'b'"},
    {"huge ne", AT(t_ne[0]), 0, P_LE, 1ull << 40, 8, NULL, PT_ERR_FORMAT, "past end of file", "'a'"},
    {"element count overflow", AT(t_ne[1]), 8, P_LE, 1ull << 60, 8, NULL, PT_ERR_FORMAT, "overflow", "'b'"},
    {"size overflow", AT(t_ne[0]), 0, P_LE, 1ull << 62, 8, NULL, PT_ERR_FORMAT, "overflow", "'a'"},
    {"unknown tensor type", AT(t_type[1]), 0, P_LE, 99, 4, NULL, PT_ERR_UNSUPPORTED, "unknown type 99", "'b'"},
    {"removed tensor type 4", AT(t_type[1]), 0, P_LE, 4, 4, NULL, PT_ERR_UNSUPPORTED, "unknown type 4", "'b'"},
    {"ne[0] not a block multiple", AT(t_ne[1]), 0, P_LE, 48, 8, NULL, PT_ERR_FORMAT, "multiple", "'b'"},
    {"misaligned offset", AT(t_offset[1]), 0, P_LE, 65, 8, NULL, PT_ERR_FORMAT, "alignment", "'b'"},
    {"data past EOF", AT(t_offset[3]), 0, P_LE, 576, 8, NULL, PT_ERR_FORMAT, "past end of file", "'blk.0.attn_q.weight'"},
    {"offset 2^63", AT(t_offset[1]), 0, P_LE, 1ull << 63, 8, NULL, PT_ERR_FORMAT, "past end of file", "'b'"},
    {"offset 2^64-64", AT(t_offset[1]), 0, P_LE, UINT64_MAX - 63, 8, NULL, PT_ERR_FORMAT, "past end of file", "'b'"},
    {"duplicate tensor name", AT(t_name[1]), 0, P_BYTES, 0, 0, "a", PT_ERR_FORMAT, "duplicate tensor", "'a'"},
    {"tensor name with newline", AT(t_name[1]), 0, P_BYTES, 0, 0, "\n", PT_ERR_FORMAT, "duplicate", NULL},
};

static void test_corruptions(void) {
    layout l;
    wbuf base = build_sample(3, &l);
    for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
        const bad_case *c = &BAD[k];
        uint8_t *p = exact_copy(base.p, base.len);
        size_t at = *(const size_t *)((const char *)&l + c->layout_field) + (size_t)c->index_add;
        if (c->kind == P_LE) patch_le(p, at, c->value, c->width);
        else memcpy(p + at, c->bytes, strlen(c->bytes));
        /* The newline case needs a second tensor named "\n" too: patch
         * tensor 0's name 'a' as well, so the duplicate is "\n". */
        if (strcmp(c->what, "tensor name with newline") == 0) p[l.t_name[0]] = '\n';
        pt_gguf *g = NULL;
        pt_error err = {0};
        pt_status st = pt_gguf_open_memory(p, base.len, &g, &err);
        CHECK(st == c->want, "%s: status %d (%s), want %d", c->what, st, err.msg, c->want);
        CHECK(strstr(err.msg, c->word) != NULL, "%s: message [%s] lacks [%s]", c->what, err.msg, c->word);
        CHECK(!c->word2 || strstr(err.msg, c->word2), "%s: message [%s] lacks [%s]", c->what, err.msg,
              c->word2);
        CHECK(one_line(err.msg) && strncmp(err.msg, "gguf: ", 6) == 0, "%s: message [%s]", c->what,
              err.msg);
        CHECK(st != PT_OK || g != NULL, "%s", c->what);
        if (st == PT_OK) pt_gguf_close(g);
        free(p);
    }
    /* The example message shape from the design: file size, offset, bytes. */
    {
        uint8_t *p = exact_copy(base.p, base.len);
        patch_le(p, l.t_offset[3], 576, 8);
        pt_gguf *g = NULL;
        pt_error err = {0};
        pt_gguf_open_memory(p, base.len, &g, &err);
        char want[200];
        snprintf(want, sizeof want,
                 "gguf: tensor 'blk.0.attn_q.weight' data [off %zu, 20 bytes] lies past end of file "
                 "(size %zu)", l.data_offset + 576, base.len);
        CHECK(strcmp(err.msg, want) == 0, "message [%s], want [%s]", err.msg, want);
        free(p);
    }
    free(base.p);
}

/* Every proper prefix fails cleanly with a one-line FORMAT message. */
static void test_prefixes(void) {
    wbuf base = build_sample(3, NULL);
    int bad = 0;
    for (size_t n = 0; n < base.len; n++) {
        pt_gguf *g = NULL;
        pt_error err = {0};
        pt_status st = open_copy(base.p, n, &g, &err);
        bool ok_msg = strncmp(err.msg, "gguf: ", 6) == 0 && one_line(err.msg) &&
                      (strstr(err.msg, "truncated") || strstr(err.msg, "past end of file") ||
                       strstr(err.msg, "room") || strstr(err.msg, "empty") || strstr(err.msg, "hold") ||
                       strstr(err.msg, "bytes left"));
        if (st != PT_ERR_FORMAT || !ok_msg) {
            if (bad++ < 5) CHECK(0, "prefix %zu: status %d [%s]", n, st, err.msg);
        }
    }
    CHECK(bad == 0, "%d of %zu prefixes misbehaved", bad, base.len);
    /* a few messages exactly */
    pt_gguf *g = NULL;
    pt_error err = {0};
    open_copy(base.p, 2, &g, &err);
    CHECK(strstr(err.msg, "truncated at offset 0 while reading the header"), "[%s]", err.msg);
    open_copy(base.p, 30, &g, &err); /* inside the key length of key 0 (24..32) */
    CHECK(strstr(err.msg, "room") || strstr(err.msg, "truncated"), "[%s]", err.msg);
    free(base.p);
}

/* Flip every byte of the header and tensor infos, one at a time, with a few
 * patterns; then random multi-byte damage. Nothing may crash; failures
 * must carry a one-line message. */
static void test_fuzz(void) {
    layout l;
    wbuf base = build_sample(3, &l);
    static const uint8_t pats[] = {0xff, 0x80, 0x01, 0x7f};
    int bad_msgs = 0, n_fail = 0, n_ok = 0;
    for (size_t i = 0; i < l.data_offset; i++) {
        for (size_t k = 0; k < sizeof pats; k++) {
            uint8_t *p = exact_copy(base.p, base.len);
            p[i] ^= pats[k];
            pt_gguf *g = NULL;
            pt_error err = {0};
            pt_status st = pt_gguf_open_memory(p, base.len, &g, &err);
            if (st == PT_OK) {
                n_ok++;
                char buf[128];
                for (uint64_t j = 0; j < g->n_kv; j++)
                    pt_gguf_value_format(&g->kv[j].value, buf, sizeof buf, 4);
                pt_gguf_close(g);
            } else {
                n_fail++;
                if (!one_line(err.msg) || strncmp(err.msg, "gguf: ", 6) != 0) bad_msgs++;
            }
            free(p);
        }
    }
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int it = 0; it < 3000; it++) {
        uint8_t *p = exact_copy(base.p, base.len);
        int flips = 1 + it % 4;
        for (int f = 0; f < flips; f++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            p[(rng >> 8) % l.data_offset] = (uint8_t)rng;
        }
        size_t n = it % 3 == 0 ? (size_t)((rng >> 20) % base.len) : base.len;
        uint8_t *q = exact_copy(p, n);
        pt_gguf *g = NULL;
        pt_error err = {0};
        pt_status st = pt_gguf_open_memory(q, n, &g, &err);
        if (st == PT_OK) pt_gguf_close(g);
        else if (!one_line(err.msg) || strncmp(err.msg, "gguf: ", 6) != 0) bad_msgs++;
        free(q);
        free(p);
    }
    CHECK(bad_msgs == 0, "%d bad messages", bad_msgs);
    CHECK(n_fail > 0 && n_ok > 0, "fuzz outcomes ok %d fail %d", n_ok, n_fail);
    free(base.p);
}

/* ---- 3. the real SmolLM2 file (facts from gguf-py's GGUFReader) --------- */

static void test_smollm2(void) {
    const char *path = test_smollm2_path();
    pt_gguf *g = NULL;
    pt_error err = {0};
    pt_status st = pt_gguf_open(path, &g, &err);
    CHECK(st == PT_OK, "open %s: %s", path, err.msg);
    if (st != PT_OK) return;
    CHECK(g->version == 3, "version %u", g->version);
    CHECK(g->n_tensors == 272 && g->n_kv == 33, "counts %llu %llu",
          (unsigned long long)g->n_tensors, (unsigned long long)g->n_kv);
    CHECK(g->size == 98362432 && g->alignment == 32 && g->data_offset == 1785664, "size/data %llu",
          (unsigned long long)g->data_offset);

    pt_gguf_str s = {0};
    uint32_t u = 0;
    float f = 0;
    bool b = true;
    CHECK(pt_gguf_get_str(g, "general.architecture", &s) && pt_gguf_str_eq(s, "llama"), "arch");
    CHECK(pt_gguf_get_str(g, "general.name", &s) && pt_gguf_str_eq(s, "Smollm2 135M 8k Lc100K Mix1 Ep2"),
          "name");
    CHECK(pt_gguf_get_str(g, "tokenizer.ggml.pre", &s) && pt_gguf_str_eq(s, "smollm"), "pre");
    CHECK(pt_gguf_get_u32(g, "llama.block_count", &u) && u == 30, "block_count %u", u);
    CHECK(pt_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &u) && u == 2, "eos %u", u);
    CHECK(pt_gguf_get_f32(g, "llama.rope.freq_base", &f) && f == 100000.0f, "rope %g", f);
    CHECK(pt_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f) && f == 1e-5f, "eps %g", f);
    CHECK(pt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && !b, "add_bos");

    const pt_gguf_value *tok = pt_gguf_get_arr(g, "tokenizer.ggml.tokens", PT_GGUF_STRING);
    CHECK(tok && tok->v.arr.n == 49152, "tokens");
    if (tok && tok->v.arr.n == 49152) {
        CHECK(pt_gguf_str_eq(tok->v.arr.items[0].v.s, "<|endoftext|>"), "token 0");
        CHECK(pt_gguf_str_eq(tok->v.arr.items[1].v.s, "<|im_start|>"), "token 1");
        CHECK(pt_gguf_str_eq(tok->v.arr.items[300].v.s, "om"), "token 300");
        CHECK(pt_gguf_str_eq(tok->v.arr.items[49151].v.s, "ectable"), "token 49151");
    }
    const pt_gguf_value *mg = pt_gguf_get_arr(g, "tokenizer.ggml.merges", PT_GGUF_STRING);
    CHECK(mg && mg->v.arr.n == 48900 && pt_gguf_str_eq(mg->v.arr.items[0].v.s, "\xc4\xa0 t") &&
              pt_gguf_str_eq(mg->v.arr.items[48899].v.s, "ect able"), "merges");
    const pt_gguf_value *tt = pt_gguf_get_arr(g, "tokenizer.ggml.token_type", PT_GGUF_INT32);
    CHECK(tt && tt->v.arr.n == 49152 && pt_gguf_arr_i64(tt, 0) == 3 && pt_gguf_arr_i64(tt, 16) == 3 &&
              pt_gguf_arr_i64(tt, 17) == 1 && pt_gguf_arr_i64(tt, 49151) == 1, "token_type");
    const pt_gguf_value *lang = pt_gguf_get_arr(g, "general.languages", PT_GGUF_STRING);
    CHECK(lang && lang->v.arr.n == 1 && pt_gguf_str_eq(lang->v.arr.items[0].v.s, "en"), "languages");
    CHECK(pt_gguf_get_str(g, "tokenizer.chat_template", &s) && s.len == 368 &&
              memcmp(s.ptr, "{% for message in messages %}", 29) == 0, "chat template");

    char buf[200];
    pt_gguf_value_format(&pt_gguf_find(g, "tokenizer.ggml.tokens")->value, buf, sizeof buf, 2);
    CHECK(strcmp(buf, "[\"<|endoftext|>\", \"<|im_start|>\", ... (49152 total)]") == 0, "[%s]", buf);
    pt_gguf_value_format(&pt_gguf_find(g, "llama.attention.layer_norm_rms_epsilon")->value, buf,
                         sizeof buf, 2);
    CHECK(strcmp(buf, "1e-05") == 0, "eps [%s]", buf);

    const pt_gguf_tensor *t = pt_gguf_find_tensor(g, "token_embd.weight");
    CHECK(t && t->type == PT_TYPE_Q8_0 && t->n_dims == 2 && t->ne[0] == 576 && t->ne[1] == 49152 &&
              t->ne[2] == 1 && t->ne[3] == 1 && t->offset == 1785664 && t->nbytes == 30081024,
          "token_embd.weight");
    t = pt_gguf_find_tensor(g, "blk.0.attn_q.weight");
    CHECK(t && t->type == PT_TYPE_Q4_1 && t->ne[0] == 576 && t->ne[1] == 576 &&
              t->offset == 33806656 && t->nbytes == 207360, "attn_q");
    t = pt_gguf_find_tensor(g, "blk.0.attn_k.weight");
    CHECK(t && t->ne[0] == 576 && t->ne[1] == 192 && t->offset == 33530176 && t->nbytes == 69120,
          "attn_k");
    t = pt_gguf_find_tensor(g, "blk.29.ffn_down.weight");
    CHECK(t && t->type == PT_TYPE_Q4_1 && t->ne[0] == 1536 && t->ne[1] == 576 &&
              t->offset == 80630848 && t->nbytes == 552960, "ffn_down 29");
    t = pt_gguf_find_tensor(g, "output_norm.weight");
    CHECK(t && t->type == PT_TYPE_F32 && t->n_dims == 1 && t->ne[0] == 576 &&
              t->offset == 98360128 && t->nbytes == 2304, "output_norm");
    if (t) {
        float v[4];
        memcpy(v, t->data, sizeof v);
        CHECK(v[0] == 1.7578125f && v[1] == 1.8203125f && v[2] == 1.78125f && v[3] == 1.6015625f,
              "output_norm values %g %g %g %g", v[0], v[1], v[2], v[3]);
    }
    CHECK(pt_gguf_find_tensor(g, "output.weight") == NULL, "tied output");
    int n_q41 = 0, n_f32 = 0, n_q80 = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        n_q41 += g->tensors[i].type == PT_TYPE_Q4_1;
        n_f32 += g->tensors[i].type == PT_TYPE_F32;
        n_q80 += g->tensors[i].type == PT_TYPE_Q8_0;
    }
    CHECK(n_q41 == 210 && n_f32 == 61 && n_q80 == 1, "type counts %d %d %d", n_q41, n_f32, n_q80);
    pt_gguf_close(g);
}

int main(void) {
    test_sample();
    test_open_file();
    test_other_layouts();
    test_corruptions();
    test_prefixes();
    test_fuzz();
    test_smollm2();
    return check_done("gguf");
}
