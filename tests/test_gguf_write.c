/*
 * test_gguf_write.c — the GGUF writer (engine/gguf_write.c).
 *
 * 1. Round trip: tests/data/quantize_tiny.gguf (written by gguf-py) read
 *    and written back, metadata and tensors as they are, is the same file
 *    byte for byte (so header, strings, arrays, tensor infos, offsets and
 *    padding are laid out as gguf-py and ggml do).
 * 2. Every value type (all scalars, strings, scalar / string / nested /
 *    empty arrays) and general.alignment 64 written from values made here
 *    read back equal, with every tensor offset a multiple of 64.
 * 3. Misuse and failures leave nothing behind: too much data, a missing
 *    tensor at commit, an abort, a directory that does not exist.
 */
#include "check.h"
#include "gguf.h"
#include "gguf_write.h"
#include "quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_round_trip(const char *dir) {
    const char *in = test_data("quantize_tiny.gguf");
    char out[512];
    snprintf(out, sizeof out, "%s/rt.gguf", dir);
    pt_error err = {0};
    pt_gguf *g = NULL;
    CHECK(pt_gguf_open(in, &g, &err) == PT_OK, "open %s: %s", in, err.msg);
    if (!g) return;
    pt_gguf_out_tensor *t = calloc(g->n_tensors, sizeof *t);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const pt_gguf_tensor *s = &g->tensors[i];
        t[i] = (pt_gguf_out_tensor){s->name, s->n_dims, {s->ne[0], s->ne[1], s->ne[2], s->ne[3]}, s->type};
    }
    pt_gguf_writer *w = NULL;
    pt_status st = pt_gguf_writer_open(out, &w, &err);
    if (!st) st = pt_gguf_writer_header(w, g->kv, g->n_kv, t, g->n_tensors, &err);
    for (uint64_t i = 0; !st && i < g->n_tensors; i++) {
        st = pt_gguf_writer_data(w, g->tensors[i].data, (size_t)g->tensors[i].nbytes, &err);
        if (!st) st = pt_gguf_writer_end_tensor(w, &err);
    }
    CHECK(!exists(out), "nothing under the final name before commit");
    if (!st) st = pt_gguf_writer_commit(w, &err);
    else pt_gguf_writer_abort(w);
    CHECK(st == PT_OK, "write: %s", err.msg);
    size_t na = 0, nb = 0;
    uint8_t *a = (uint8_t *)test_read_file(in, &na), *b = (uint8_t *)test_read_file(out, &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na), "round trip differs (%zu vs %zu bytes)", na, nb);
    free(a);
    free(b);
    free(t);
    pt_gguf_close(g);
    unlink(out);
}

static pt_gguf_str S(const char *s) {
    return (pt_gguf_str){s, strlen(s)};
}

static void test_all_types(const char *dir) {
    char out[512];
    snprintf(out, sizeof out, "%s/types.gguf", dir);
    static const uint8_t i32s[] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}; /* 1, -2 */
    pt_gguf_value strs[2] = {{.type = PT_GGUF_STRING, .v.s = {"ab", 2}}, {.type = PT_GGUF_STRING, .v.s = {"", 0}}};
    static const uint8_t u16s[] = {7, 0, 9, 0};
    pt_gguf_value inner[2] = {
        {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_UINT16, 2, u16s, NULL}},
        {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_STRING, 2, NULL, strs}},
    };
    pt_gguf_kv kv[] = {
        {S("u8"), {.type = PT_GGUF_UINT8, .v.u = 200}},
        {S("i8"), {.type = PT_GGUF_INT8, .v.i = -100}},
        {S("u16"), {.type = PT_GGUF_UINT16, .v.u = 60000}},
        {S("i16"), {.type = PT_GGUF_INT16, .v.i = -30000}},
        {S("u32"), {.type = PT_GGUF_UINT32, .v.u = 4000000000u}},
        {S("i32"), {.type = PT_GGUF_INT32, .v.i = -2000000000}},
        {S("u64"), {.type = PT_GGUF_UINT64, .v.u = (1ull << 63) + 5}},
        {S("i64"), {.type = PT_GGUF_INT64, .v.i = -(1ll << 40)}},
        {S("f32"), {.type = PT_GGUF_FLOAT32, .v.f = 0.1f}},
        {S("f64"), {.type = PT_GGUF_FLOAT64, .v.f = 3.141592653589793}},
        {S("bool"), {.type = PT_GGUF_BOOL, .v.b = true}},
        {S("str"), {.type = PT_GGUF_STRING, .v.s = {"h\xc3\xa9llo", 6}}},
        {S("arr.i32"), {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_INT32, 2, i32s, NULL}}},
        {S("arr.str"), {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_STRING, 2, NULL, strs}}},
        {S("arr.nested"), {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_ARRAY, 2, NULL, inner}}},
        {S("arr.empty"), {.type = PT_GGUF_ARRAY, .v.arr = {PT_GGUF_UINT8, 0, NULL, NULL}}},
        {S("general.alignment"), {.type = PT_GGUF_UINT32, .v.u = 64}},
    };
    const uint64_t n_kv = sizeof kv / sizeof kv[0];
    const pt_gguf_out_tensor t[3] = {
        {S("a"), 1, {3, 1, 1, 1}, PT_TYPE_F32},
        {S("b"), 2, {64, 3, 1, 1}, PT_TYPE_Q8_0},
        {S("c"), 3, {2, 3, 5, 1}, PT_TYPE_F16},
    };
    uint8_t data[1024];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    pt_error err = {0};
    pt_gguf_writer *w = NULL;
    pt_status st = pt_gguf_writer_open(out, &w, &err);
    if (!st) st = pt_gguf_writer_header(w, kv, n_kv, t, 3, &err);
    const size_t sizes[3] = {12, 3 * 2 * 34, 30 * 2};
    for (int i = 0; !st && i < 3; i++) {
        st = pt_gguf_writer_data(w, data, sizes[i] / 2, &err); /* in two pieces */
        if (!st) st = pt_gguf_writer_data(w, data + sizes[i] / 2, sizes[i] - sizes[i] / 2, &err);
        if (!st) st = pt_gguf_writer_end_tensor(w, &err);
    }
    if (!st) st = pt_gguf_writer_commit(w, &err);
    else pt_gguf_writer_abort(w);
    CHECK(st == PT_OK, "write: %s", err.msg);
    pt_gguf *g = NULL;
    CHECK(pt_gguf_open(out, &g, &err) == PT_OK, "read back: %s", err.msg);
    if (!g) return;
    CHECK(g->n_kv == n_kv && g->n_tensors == 3 && g->alignment == 64, "counts %llu %llu %llu",
          (unsigned long long)g->n_kv, (unsigned long long)g->n_tensors, (unsigned long long)g->alignment);
    char got[256], want[256];
    for (uint64_t i = 0; i < n_kv && i < g->n_kv; i++) {
        CHECK(pt_gguf_str_eq(g->kv[i].key, kv[i].key.ptr) && g->kv[i].value.type == kv[i].value.type,
              "key %llu", (unsigned long long)i);
        pt_gguf_value_format(&g->kv[i].value, got, sizeof got, 16);
        pt_gguf_value_format(&kv[i].value, want, sizeof want, 16);
        CHECK(!strcmp(got, want), "%s: read %s, wrote %s", kv[i].key.ptr, got, want);
    }
    for (int i = 0; i < 3; i++) {
        const pt_gguf_tensor *r = &g->tensors[i];
        CHECK(r->n_dims == t[i].n_dims && r->type == t[i].type && r->nbytes == sizes[i] &&
                  (r->offset - g->data_offset) % 64 == 0 && !memcmp(r->data, data, sizes[i]),
              "tensor %d", i);
    }
    CHECK(g->size % 64 == 0 && g->data_offset % 64 == 0, "padding: size %llu", (unsigned long long)g->size);
    pt_gguf_close(g);
    unlink(out);
}

static void test_failures(const char *dir) {
    char out[512], tmp[600];
    snprintf(out, sizeof out, "%s/bad.gguf", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    const pt_gguf_out_tensor t[2] = {{S("a"), 1, {4, 1, 1, 1}, PT_TYPE_F32}, {S("b"), 1, {4, 1, 1, 1}, PT_TYPE_F32}};
    const float x[8] = {0};
    pt_error err = {0};
    pt_gguf_writer *w = NULL;
    /* too much data for a tensor; commit with a tensor missing */
    CHECK(pt_gguf_writer_open(out, &w, &err) == PT_OK && pt_gguf_writer_header(w, NULL, 0, t, 2, &err) == PT_OK,
          "open: %s", err.msg);
    CHECK(pt_gguf_writer_data(w, x, 32, &err) == PT_ERR_ARG, "more data than the tensor holds");
    CHECK(pt_gguf_writer_data(w, x, 16, &err) == PT_OK && pt_gguf_writer_end_tensor(w, &err) == PT_OK, "a");
    CHECK(exists(tmp) && !exists(out), "only the .tmp while writing");
    CHECK(pt_gguf_writer_commit(w, &err) == PT_ERR_ARG && strstr(err.msg, "1 of 2"), "commit early: %s", err.msg);
    CHECK(!exists(tmp) && !exists(out), "nothing left after a failed commit");
    /* a bad shape, then abort */
    const pt_gguf_out_tensor q = {S("q"), 2, {33, 2, 1, 1}, PT_TYPE_Q4_0};
    CHECK(pt_gguf_writer_open(out, &w, &err) == PT_OK, "open");
    CHECK(pt_gguf_writer_header(w, NULL, 0, &q, 1, &err) == PT_ERR_ARG && strstr(err.msg, "q"), "33 x Q4_0: %s",
          err.msg);
    pt_gguf_writer_abort(w);
    CHECK(!exists(tmp) && !exists(out), "nothing left after abort");
    /* a missing directory */
    snprintf(out, sizeof out, "%s/no/such/dir.gguf", dir);
    w = NULL;
    CHECK(pt_gguf_writer_open(out, &w, &err) == PT_ERR_IO && !w && strstr(err.msg, "No such file"), "no dir: %s",
          err.msg);
}

int main(void) {
    char dir[] = "/tmp/petrel-gguf-write.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_round_trip(dir);
    test_all_types(dir);
    test_failures(dir);
    rmdir(dir);
    return check_done("gguf_write");
}
