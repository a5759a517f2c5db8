/*
 * gguf.c — the validating GGUF v2/v3 reader (on-disk layout in gguf.h).
 *
 * Parsing is one forward pass of a bounds-checked cursor over the bytes:
 *
 *   header -> n_kv key/values -> n_tensors tensor infos -> data offsets
 *
 * Invariants the code relies on:
 *   - cursor.pos <= cursor.size at all times; every read first asks
 *     need(n), which compares n with size - pos (never pos + n, which could
 *     wrap).
 *   - No count read from the file is used to allocate before it has been
 *     bounded by the bytes left, divided by the smallest encoding one entry
 *     can have (MIN_*_BYTES). So a 100-byte file can never ask for more
 *     than a few hundred bytes of heap, however large its counts.
 *   - Array nesting is limited to GGUF_MAX_DEPTH levels, so a file cannot
 *     exhaust the stack.
 *   - Tensor offsets are only checked after every tensor info is read,
 *     because the data section starts after the last info (aligned up).
 *
 * The caller sees a pt_gguf, which is the first member of gguf_file; the
 * extra members are key and tensor indexes sorted by name, used both to
 * find duplicates at load time and for binary-search lookups.
 */
#include "gguf.h"

#include "mapfile.h"
#include "quant.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DEPTH 8 /* levels of array nesting accepted */

/* Smallest encodings, used to bound counts before allocating. */
#define MIN_STR_BYTES 8     /* u64 length, no bytes */
#define MIN_ARR_BYTES 12    /* u32 elem_type + u64 count, no elements */
#define MIN_KV_BYTES 13     /* empty key + u32 type + 1-byte value */
#define MIN_TENSOR_BYTES 32 /* empty name + u32 n_dims + one u64 ne + u32 type + u64 offset */

typedef struct gguf_file {
    pt_gguf pub; /* must stay first: pt_gguf * and gguf_file * alias */
    const pt_gguf_kv **kv_by_key;          /* n_kv, sorted by key bytes */
    const pt_gguf_tensor **tensor_by_name; /* n_tensors, sorted by name bytes */
} gguf_file;

/* A read position in the file plus what is being read, for messages. */
typedef struct cursor {
    const uint8_t *base;
    uint64_t size, pos; /* pos <= size */
    pt_error *err;
    char what[320];     /* e.g. "tensor info 3 ('blk.0.attn_q.weight')" */
} cursor;

/* ---- small helpers ------------------------------------------------------ */

/* A file string made safe for a one-line message: at most 64 source bytes,
 * control bytes, quotes and backslashes escaped, "..." when cut. */
typedef struct shown { char s[64 * 4 + 8]; } shown;

static shown show(pt_gguf_str str) {
    shown out;
    size_t o = 0;
    uint64_t n = str.len < 64 ? str.len : 64;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)str.ptr[i];
        if (ch < 0x20 || ch == 0x7f || ch == '\'' || ch == '\\')
            o += (size_t)snprintf(out.s + o, sizeof out.s - o, "\\x%02x", ch);
        else
            out.s[o++] = (char)ch;
    }
    if (str.len > n) { memcpy(out.s + o, "...", 3); o += 3; }
    out.s[o] = 0;
    return out;
}

static uint16_t rd_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd_le64(const uint8_t *p) { return rd_le32(p) | (uint64_t)rd_le32(p + 4) << 32; }

uint64_t pt_gguf_scalar_size(uint32_t t) {
    switch (t) {
    case PT_GGUF_UINT8: case PT_GGUF_INT8: case PT_GGUF_BOOL: return 1;
    case PT_GGUF_UINT16: case PT_GGUF_INT16: return 2;
    case PT_GGUF_UINT32: case PT_GGUF_INT32: case PT_GGUF_FLOAT32: return 4;
    case PT_GGUF_UINT64: case PT_GGUF_INT64: case PT_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static bool type_known(uint32_t t) { return t <= PT_GGUF_FLOAT64; }

/* Decode one scalar of type t from raw little-endian bytes (size checked by
 * the caller). */
static void decode_scalar(pt_gguf_type t, const uint8_t *p, pt_gguf_value *v) {
    memset(v, 0, sizeof *v);
    v->type = t;
    switch (t) {
    case PT_GGUF_UINT8: v->v.u = p[0]; break;
    case PT_GGUF_INT8: v->v.i = (int8_t)p[0]; break;
    case PT_GGUF_UINT16: v->v.u = rd_le16(p); break;
    case PT_GGUF_INT16: v->v.i = (int16_t)rd_le16(p); break;
    case PT_GGUF_UINT32: v->v.u = rd_le32(p); break;
    case PT_GGUF_INT32: v->v.i = (int32_t)rd_le32(p); break;
    case PT_GGUF_UINT64: v->v.u = rd_le64(p); break;
    case PT_GGUF_INT64: v->v.i = (int64_t)rd_le64(p); break;
    case PT_GGUF_BOOL: v->v.b = p[0] != 0; break;
    case PT_GGUF_FLOAT32: {
        uint32_t bits = rd_le32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        v->v.f = f;
        break;
    }
    case PT_GGUF_FLOAT64: {
        uint64_t bits = rd_le64(p);
        memcpy(&v->v.f, &bits, sizeof v->v.f);
        break;
    }
    default: break;
    }
}

/* ---- cursor reads ------------------------------------------------------- */

static pt_status truncated(cursor *c, uint64_t n) {
    return pt_fail(c->err, PT_ERR_FORMAT,
                   "gguf: file truncated at offset %" PRIu64 " while reading %s (need %" PRIu64
                   " bytes, %" PRIu64 " left)",
                   c->pos, c->what, n, c->size - c->pos);
}

static bool fits(const cursor *c, uint64_t n) { return n <= c->size - c->pos; }

static pt_status rd_u32(cursor *c, uint32_t *out) {
    if (!fits(c, 4)) return truncated(c, 4);
    *out = rd_le32(c->base + c->pos);
    c->pos += 4;
    return PT_OK;
}

static pt_status rd_u64(cursor *c, uint64_t *out) {
    if (!fits(c, 8)) return truncated(c, 8);
    *out = rd_le64(c->base + c->pos);
    c->pos += 8;
    return PT_OK;
}

static pt_status rd_str(cursor *c, pt_gguf_str *out) {
    uint64_t len = 0;
    pt_status st = rd_u64(c, &len);
    if (st) return st;
    if (!fits(c, len)) return truncated(c, len);
    out->ptr = (const char *)c->base + c->pos;
    out->len = len;
    c->pos += len;
    return PT_OK;
}

/* ---- values ------------------------------------------------------------- */

static void free_value(pt_gguf_value *v) {
    if (v->type != PT_GGUF_ARRAY || !v->v.arr.items) return;
    for (uint64_t i = 0; i < v->v.arr.n; i++) free_value(&v->v.arr.items[i]);
    free(v->v.arr.items);
    v->v.arr.items = NULL;
}

/* Read a value of a known type t. key is the (shown) key, for messages.
 * On failure *out may hold partly built items: free_value releases them
 * (items not yet read are zeroed, i.e. UINT8 with nothing to free). */
static pt_status read_value(cursor *c, pt_gguf_type t, pt_gguf_value *out, int depth,
                            const char *key) {
    memset(out, 0, sizeof *out);
    out->type = t;
    pt_status st;
    if (t == PT_GGUF_STRING) return rd_str(c, &out->v.s);
    if (t != PT_GGUF_ARRAY) {
        uint64_t n = pt_gguf_scalar_size(t);
        if (!fits(c, n)) return truncated(c, n);
        const uint8_t *p = c->base + c->pos;
        if (t == PT_GGUF_BOOL && p[0] > 1)
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: key '%s' has bool value %u at offset %" PRIu64 " (must be 0 or 1)",
                           key, p[0], c->pos);
        decode_scalar(t, p, out);
        c->pos += n;
        return PT_OK;
    }

    /* array: u32 elem_type | u64 count | elements */
    if (depth >= GGUF_MAX_DEPTH)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: key '%s' nests arrays more than %d levels deep", key, GGUF_MAX_DEPTH);
    uint32_t et = 0;
    uint64_t n = 0;
    if ((st = rd_u32(c, &et)) || (st = rd_u64(c, &n))) return st;
    if (!type_known(et))
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: key '%s' has an array of unknown value type %" PRIu32, key, et);
    out->v.arr.elem_type = (pt_gguf_type)et;
    uint64_t left = c->size - c->pos;
    uint64_t esize = pt_gguf_scalar_size(et);
    uint64_t min = esize ? esize : et == PT_GGUF_STRING ? MIN_STR_BYTES : MIN_ARR_BYTES;
    if (n > left / min)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: key '%s' claims an array of %" PRIu64 " %s elements at offset %" PRIu64
                       ", more than the %" PRIu64 " bytes left in the file",
                       key, n, pt_gguf_type_name((pt_gguf_type)et), c->pos, left);
    out->v.arr.n = n;
    if (esize) {
        /* Scalars stay in the mapping; bools are checked here once. */
        out->v.arr.raw = c->base + c->pos;
        if (et == PT_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (out->v.arr.raw[i] > 1)
                    return pt_fail(c->err, PT_ERR_FORMAT,
                                   "gguf: key '%s' has bool value %u at element %" PRIu64
                                   " (must be 0 or 1)", key, out->v.arr.raw[i], i);
        c->pos += n * esize; /* n * esize <= left: no overflow */
        return PT_OK;
    }
    if (n == 0) return PT_OK;
    out->v.arr.items = calloc((size_t)n, sizeof *out->v.arr.items);
    if (!out->v.arr.items) {
        out->v.arr.n = 0;
        return pt_fail(c->err, PT_ERR_NOMEM, "gguf: out of memory for %" PRIu64
                       " array elements of key '%s'", n, key);
    }
    for (uint64_t i = 0; i < n; i++)
        if ((st = read_value(c, (pt_gguf_type)et, &out->v.arr.items[i], depth + 1, key))) return st;
    return PT_OK;
}

/* ---- sorted indexes ----------------------------------------------------- */

static int str_cmp(pt_gguf_str a, pt_gguf_str b) {
    uint64_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int kv_ptr_cmp(const void *a, const void *b) {
    return str_cmp((*(const pt_gguf_kv *const *)a)->key, (*(const pt_gguf_kv *const *)b)->key);
}

static int tensor_ptr_cmp(const void *a, const void *b) {
    return str_cmp((*(const pt_gguf_tensor *const *)a)->name,
                   (*(const pt_gguf_tensor *const *)b)->name);
}

static pt_gguf_str cstr(const char *s) { return (pt_gguf_str){s, strlen(s)}; }

/* ---- parsing ------------------------------------------------------------ */

static pt_status parse_header(cursor *c, pt_gguf *g) {
    if (c->size == 0) return pt_fail(c->err, PT_ERR_FORMAT, "gguf: file is empty (0 bytes)");
    uint64_t m = c->size < 4 ? c->size : 4;
    if (memcmp(c->base, GGUF_MAGIC, (size_t)m) != 0)
        return pt_fail(c->err, PT_ERR_FORMAT, "gguf: bad magic (not a GGUF file)");
    snprintf(c->what, sizeof c->what, "the header");
    if (!fits(c, 4)) return truncated(c, 4);
    c->pos = 4;

    pt_status st;
    if ((st = rd_u32(c, &g->version))) return st;
    if (g->version == 1)
        return pt_fail(c->err, PT_ERR_UNSUPPORTED,
                       "gguf: version 1 files are not supported (convert the model again "
                       "with a current llama.cpp)");
    if (g->version != 2 && g->version != 3) {
        uint32_t swapped = __builtin_bswap32(g->version);
        if (swapped == 2 || swapped == 3)
            return pt_fail(c->err, PT_ERR_UNSUPPORTED,
                           "gguf: big-endian GGUF files are not supported");
        return pt_fail(c->err, PT_ERR_UNSUPPORTED,
                       "gguf: unsupported version %" PRIu32 " (petrel reads versions 2 and 3)",
                       g->version);
    }
    if ((st = rd_u64(c, &g->n_tensors)) || (st = rd_u64(c, &g->n_kv))) return st;

    /* Each entry needs a minimum number of bytes: bound the counts by the
     * bytes left before allocating anything for them. */
    uint64_t left = c->size - c->pos;
    if (g->n_kv > left / MIN_KV_BYTES)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: file truncated or corrupt: header claims %" PRIu64 " key/value pairs "
                       "but the file has room for at most %" PRIu64, g->n_kv, left / MIN_KV_BYTES);
    if (g->n_tensors > left / MIN_TENSOR_BYTES)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: file truncated or corrupt: header claims %" PRIu64 " tensors but the "
                       "file has room for at most %" PRIu64, g->n_tensors, left / MIN_TENSOR_BYTES);
    /* both products are <= left, so the sum cannot wrap */
    if (g->n_kv * MIN_KV_BYTES + g->n_tensors * MIN_TENSOR_BYTES > left)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: file truncated or corrupt: header claims %" PRIu64 " key/value pairs "
                       "and %" PRIu64 " tensors, more than the file's %" PRIu64 " bytes can hold",
                       g->n_kv, g->n_tensors, c->size);
    return PT_OK;
}

static pt_status parse_kvs(cursor *c, gguf_file *f) {
    pt_gguf *g = &f->pub;
    pt_status st;
    if (g->n_kv) {
        g->kv = calloc((size_t)g->n_kv, sizeof *g->kv);
        f->kv_by_key = malloc((size_t)g->n_kv * sizeof *f->kv_by_key);
        if (!g->kv || !f->kv_by_key)
            return pt_fail(c->err, PT_ERR_NOMEM, "gguf: out of memory for %" PRIu64 " key/value pairs",
                           g->n_kv);
    }
    for (uint64_t i = 0; i < g->n_kv; i++) {
        pt_gguf_kv *kv = &g->kv[i];
        snprintf(c->what, sizeof c->what, "key %" PRIu64, i);
        if ((st = rd_str(c, &kv->key))) return st;
        shown key = show(kv->key);
        snprintf(c->what, sizeof c->what, "key %" PRIu64 " ('%s')", i, key.s);
        uint32_t t = 0;
        if ((st = rd_u32(c, &t))) return st;
        if (!type_known(t))
            return pt_fail(c->err, PT_ERR_FORMAT, "gguf: key '%s' has unknown value type %" PRIu32,
                           key.s, t);
        if ((st = read_value(c, (pt_gguf_type)t, &kv->value, 0, key.s))) return st;
        f->kv_by_key[i] = kv;
    }
    if (g->n_kv) qsort(f->kv_by_key, (size_t)g->n_kv, sizeof *f->kv_by_key, kv_ptr_cmp);
    for (uint64_t i = 1; i < g->n_kv; i++)
        if (str_cmp(f->kv_by_key[i - 1]->key, f->kv_by_key[i]->key) == 0)
            return pt_fail(c->err, PT_ERR_FORMAT, "gguf: duplicate key '%s'",
                           show(f->kv_by_key[i]->key).s);

    /* general.alignment: u32, a power of two and (GGUF spec) a multiple of
     * 8; tensor offsets and the data section start are multiples of it.
     * The kernels read block structs in place, so a smaller alignment
     * could hand them a misaligned block: refuse it. */
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const pt_gguf_kv *al = pt_gguf_find(g, "general.alignment");
    if (al) {
        if (al->value.type != PT_GGUF_UINT32)
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: general.alignment has type %s (must be uint32)",
                           pt_gguf_type_name(al->value.type));
        uint64_t a = al->value.v.u;
        if (a == 0 || (a & (a - 1)) != 0)
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: general.alignment is %" PRIu64 " (must be a non-zero power of two)", a);
        if (a % 8 != 0)
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: general.alignment is %" PRIu64 " (must be a multiple of 8)", a);
        g->alignment = a;
    }
    return PT_OK;
}

/* Tensor info i: name, shape, type, size. t->offset holds the offset
 * relative to the data section until check_tensor_data() fixes it up. */
static pt_status parse_tensor_info(cursor *c, uint64_t i, pt_gguf_tensor *t) {
    pt_status st;
    snprintf(c->what, sizeof c->what, "tensor info %" PRIu64, i);
    if ((st = rd_str(c, &t->name))) return st;
    shown name = show(t->name);
    snprintf(c->what, sizeof c->what, "tensor info %" PRIu64 " ('%s')", i, name.s);

    if ((st = rd_u32(c, &t->n_dims))) return st;
    if (t->n_dims < 1 || t->n_dims > 4)
        return pt_fail(c->err, PT_ERR_FORMAT, "gguf: tensor '%s' has n_dims %" PRIu32 " (must be 1..4)",
                       name.s, t->n_dims);
    for (int d = 0; d < 4; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t ne = 0;
        if ((st = rd_u64(c, &ne))) return st;
        if (ne > (uint64_t)INT64_MAX)
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: tensor '%s' has negative dimension ne[%" PRIu32 "] = %" PRId64,
                           name.s, d, (int64_t)ne);
        t->ne[d] = (int64_t)ne;
    }
    /* The element count must fit in int64 (and so must the row count,
     * which is checked separately because ne[0] may be 0). */
    int64_t nel = 1, rows = 1;
    for (int d = 0; d < 4; d++)
        if (__builtin_mul_overflow(nel, t->ne[d], &nel) ||
            (d > 0 && __builtin_mul_overflow(rows, t->ne[d], &rows)))
            return pt_fail(c->err, PT_ERR_FORMAT,
                           "gguf: tensor '%s' element count overflows (ne = %" PRId64 " x %" PRId64
                           " x %" PRId64 " x %" PRId64 ")",
                           name.s, t->ne[0], t->ne[1], t->ne[2], t->ne[3]);

    if ((st = rd_u32(c, &t->type))) return st;
    const pt_type_traits *tr = pt_type_get(t->type);
    if (!tr || tr->block_elems <= 0 || tr->block_bytes <= 0)
        return pt_fail(c->err, PT_ERR_UNSUPPORTED, "gguf: tensor '%s' has unknown type %" PRIu32,
                       name.s, t->type);
    if (t->ne[0] % tr->block_elems != 0)
        return pt_fail(c->err, PT_ERR_FORMAT,
                       "gguf: tensor '%s' row length %" PRId64 " is not a multiple of the %s block "
                       "size %d", name.s, t->ne[0], tr->name, tr->block_elems);
    uint64_t blocks = (uint64_t)(t->ne[0] / tr->block_elems);
    uint64_t row_bytes;
    if (__builtin_mul_overflow(blocks, (uint64_t)tr->block_bytes, &row_bytes) ||
        row_bytes > SIZE_MAX || __builtin_mul_overflow(row_bytes, (uint64_t)rows, &t->nbytes))
        return pt_fail(c->err, PT_ERR_FORMAT, "gguf: tensor '%s' size in bytes overflows", name.s);
    /* same value, from the kernels' own definition of a row's size */
    if (t->nbytes) t->nbytes = pt_type_row_bytes(t->type, t->ne[0]) * (uint64_t)rows;

    return rd_u64(c, &t->offset);
}

/* Turn relative offsets into file offsets, checking alignment and bounds. */
static pt_status check_tensor_data(pt_gguf *g, pt_error *err) {
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        pt_gguf_tensor *t = &g->tensors[i];
        uint64_t rel = t->offset;
        if (rel % g->alignment != 0)
            return pt_fail(err, PT_ERR_FORMAT,
                           "gguf: tensor '%s' offset %" PRIu64 " is not a multiple of the alignment %"
                           PRIu64, show(t->name).s, rel, g->alignment);
        /* data_offset <= size here, so nothing below wraps */
        uint64_t room = g->size - g->data_offset;
        uint64_t off = rel <= UINT64_MAX - g->data_offset ? g->data_offset + rel : UINT64_MAX;
        if (rel > room || t->nbytes > room - rel)
            return pt_fail(err, PT_ERR_FORMAT,
                           "gguf: tensor '%s' data [off %" PRIu64 ", %" PRIu64
                           " bytes] lies past end of file (size %" PRIu64 ")",
                           show(t->name).s, off, t->nbytes, g->size);
        t->offset = off;
        t->data = g->map + off;
    }
    return PT_OK;
}

static pt_status parse_tensors(cursor *c, gguf_file *f) {
    pt_gguf *g = &f->pub;
    pt_status st;
    if (g->n_tensors) {
        g->tensors = calloc((size_t)g->n_tensors, sizeof *g->tensors);
        f->tensor_by_name = malloc((size_t)g->n_tensors * sizeof *f->tensor_by_name);
        if (!g->tensors || !f->tensor_by_name)
            return pt_fail(c->err, PT_ERR_NOMEM, "gguf: out of memory for %" PRIu64 " tensor infos",
                           g->n_tensors);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if ((st = parse_tensor_info(c, i, &g->tensors[i]))) return st;
        f->tensor_by_name[i] = &g->tensors[i];
    }
    if (g->n_tensors)
        qsort(f->tensor_by_name, (size_t)g->n_tensors, sizeof *f->tensor_by_name, tensor_ptr_cmp);
    for (uint64_t i = 1; i < g->n_tensors; i++)
        if (str_cmp(f->tensor_by_name[i - 1]->name, f->tensor_by_name[i]->name) == 0)
            return pt_fail(c->err, PT_ERR_FORMAT, "gguf: duplicate tensor name '%s'",
                           show(f->tensor_by_name[i]->name).s);

    /* The data section starts at the first multiple of the alignment after
     * the last tensor info (pos <= size < 2^64 - alignment in practice; the
     * check keeps it exact). */
    uint64_t pad = (g->alignment - c->pos % g->alignment) % g->alignment;
    if (pad > UINT64_MAX - c->pos)
        return pt_fail(c->err, PT_ERR_FORMAT, "gguf: data section offset overflows");
    g->data_offset = c->pos + pad;
    if (g->n_tensors == 0) return PT_OK; /* metadata-only files may omit the padding */
    if (g->data_offset > c->size) {
        snprintf(c->what, sizeof c->what, "the padding before tensor data");
        return truncated(c, pad);
    }
    return check_tensor_data(g, c->err);
}

static pt_status parse(const void *data, uint64_t size, bool owns_map, pt_gguf **out,
                       pt_error *err) {
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return pt_fail(err, PT_ERR_NOMEM, "gguf: out of memory");
    pt_gguf *g = &f->pub;
    g->map = data;
    g->size = size;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    cursor c = {.base = data, .size = size, .pos = 0, .err = err};
    pt_status st;
    if ((st = parse_header(&c, g)) || (st = parse_kvs(&c, f)) || (st = parse_tensors(&c, f))) {
        pt_gguf_close(g); /* does not unmap: owns_map is still false */
        return st;
    }
    g->owns_map = owns_map;
    *out = g;
    return PT_OK;
}

/* ---- public entry points ------------------------------------------------ */

pt_status pt_gguf_open_memory(const void *data, uint64_t size, pt_gguf **out, pt_error *err) {
    if (!out || (!data && size)) return pt_fail(err, PT_ERR_ARG, "gguf: no buffer given");
    *out = NULL;
    return parse(data, size, false, out, err);
}

pt_status pt_gguf_open(const char *path, pt_gguf **out, pt_error *err) {
    if (!out || !path) return pt_fail(err, PT_ERR_ARG, "gguf: no path given");
    *out = NULL;
    const uint8_t *map;
    uint64_t size;
    pt_status st = pt_map_file(path, "gguf", &map, &size, err);
    if (st) return st;
    st = parse(map, size, true, out, err);
    if (st) munmap((void *)map, (size_t)size);
    return st;
}

void pt_gguf_close(pt_gguf *g) {
    if (!g) return;
    gguf_file *f = (gguf_file *)g;
    if (g->kv)
        for (uint64_t i = 0; i < g->n_kv; i++) free_value(&g->kv[i].value);
    free(g->kv);
    free(g->tensors);
    free(f->kv_by_key);
    free(f->tensor_by_name);
    if (g->owns_map) munmap((void *)g->map, (size_t)g->size);
    free(f);
}

bool pt_gguf_str_eq(pt_gguf_str s, const char *c) {
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

const pt_gguf_kv *pt_gguf_find(const pt_gguf *g, const char *key) {
    const gguf_file *f = (const gguf_file *)g;
    pt_gguf_str k = cstr(key);
    uint64_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = str_cmp(f->kv_by_key[mid]->key, k);
        if (r == 0) return f->kv_by_key[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

const pt_gguf_tensor *pt_gguf_find_tensor(const pt_gguf *g, const char *name) {
    const gguf_file *f = (const gguf_file *)g;
    pt_gguf_str k = cstr(name);
    uint64_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int r = str_cmp(f->tensor_by_name[mid]->name, k);
        if (r == 0) return f->tensor_by_name[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

/* ---- typed getters ------------------------------------------------------ */

static bool is_unsigned(pt_gguf_type t) {
    return t == PT_GGUF_UINT8 || t == PT_GGUF_UINT16 || t == PT_GGUF_UINT32 || t == PT_GGUF_UINT64;
}
static bool is_signed(pt_gguf_type t) {
    return t == PT_GGUF_INT8 || t == PT_GGUF_INT16 || t == PT_GGUF_INT32 || t == PT_GGUF_INT64;
}

bool pt_gguf_get_u32(const pt_gguf *g, const char *key, uint32_t *out) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv) return false;
    const pt_gguf_value *v = &kv->value;
    if (is_unsigned(v->type) && v->v.u <= UINT32_MAX) { *out = (uint32_t)v->v.u; return true; }
    if (is_signed(v->type) && v->v.i >= 0 && v->v.i <= (int64_t)UINT32_MAX) {
        *out = (uint32_t)v->v.i;
        return true;
    }
    return false;
}

bool pt_gguf_get_i64(const pt_gguf *g, const char *key, int64_t *out) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv) return false;
    const pt_gguf_value *v = &kv->value;
    if (is_signed(v->type)) { *out = v->v.i; return true; }
    if (is_unsigned(v->type) && v->v.u <= (uint64_t)INT64_MAX) { *out = (int64_t)v->v.u; return true; }
    return false;
}

bool pt_gguf_get_f32(const pt_gguf *g, const char *key, float *out) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv || (kv->value.type != PT_GGUF_FLOAT32 && kv->value.type != PT_GGUF_FLOAT64)) return false;
    *out = (float)kv->value.v.f;
    return true;
}

bool pt_gguf_get_bool(const pt_gguf *g, const char *key, bool *out) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv || kv->value.type != PT_GGUF_BOOL) return false;
    *out = kv->value.v.b;
    return true;
}

bool pt_gguf_get_str(const pt_gguf *g, const char *key, pt_gguf_str *out) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv || kv->value.type != PT_GGUF_STRING) return false;
    *out = kv->value.v.s;
    return true;
}

const pt_gguf_value *pt_gguf_get_arr(const pt_gguf *g, const char *key, pt_gguf_type elem_type) {
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    if (!kv || kv->value.type != PT_GGUF_ARRAY || kv->value.v.arr.elem_type != elem_type) return NULL;
    return &kv->value;
}

/* Element i of a scalar array as a value; false when arr is not a scalar
 * array or i is out of range. */
static bool arr_elem(const pt_gguf_value *arr, uint64_t i, pt_gguf_value *out) {
    if (!arr || arr->type != PT_GGUF_ARRAY || i >= arr->v.arr.n) return false;
    uint64_t es = pt_gguf_scalar_size(arr->v.arr.elem_type);
    if (!es) return false;
    decode_scalar(arr->v.arr.elem_type, arr->v.arr.raw + i * es, out);
    return true;
}

int64_t pt_gguf_arr_i64(const pt_gguf_value *arr, uint64_t i) {
    pt_gguf_value v;
    if (!arr_elem(arr, i, &v)) return 0;
    if (is_unsigned(v.type)) return (int64_t)v.v.u; /* u64 above INT64_MAX wraps */
    if (is_signed(v.type)) return v.v.i;
    if (v.type == PT_GGUF_BOOL) return v.v.b;
    return (int64_t)v.v.f; /* floats truncate toward zero */
}

double pt_gguf_arr_f64(const pt_gguf_value *arr, uint64_t i) {
    pt_gguf_value v;
    if (!arr_elem(arr, i, &v)) return 0;
    if (is_unsigned(v.type)) return (double)v.v.u;
    if (is_signed(v.type)) return (double)v.v.i;
    if (v.type == PT_GGUF_BOOL) return v.v.b;
    return v.v.f;
}

const char *pt_gguf_type_name(pt_gguf_type t) {
    switch (t) {
    case PT_GGUF_UINT8: return "uint8";
    case PT_GGUF_INT8: return "int8";
    case PT_GGUF_UINT16: return "uint16";
    case PT_GGUF_INT16: return "int16";
    case PT_GGUF_UINT32: return "uint32";
    case PT_GGUF_INT32: return "int32";
    case PT_GGUF_FLOAT32: return "float32";
    case PT_GGUF_BOOL: return "bool";
    case PT_GGUF_STRING: return "string";
    case PT_GGUF_ARRAY: return "array";
    case PT_GGUF_UINT64: return "uint64";
    case PT_GGUF_INT64: return "int64";
    case PT_GGUF_FLOAT64: return "float64";
    }
    return "?";
}

/* ---- value formatting --------------------------------------------------- */

/* Output buffer of value_format: len < cap always; full once something
 * did not fit (then the tail is replaced by "..."). */
typedef struct textbuf {
    char *buf;
    size_t cap, len;
    bool full;
} textbuf;

static void tb_put(textbuf *t, const char *s, size_t n) {
    if (t->full) return;
    size_t room = t->cap - 1 - t->len;
    if (n > room) {
        n = room;
        t->full = true;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void tb_str(textbuf *t, const char *s) { tb_put(t, s, strlen(s)); }

/* Shortest decimal text that reads back as the same value: float32 values
 * round-trip through strtof, float64 through strtod. */
static void fmt_float(char *out, size_t cap, double v, bool is_f32) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (is_f32 ? strtof(out, NULL) == (float)v : strtod(out, NULL) == v) return;
    }
    /* NaN never compares equal: keep the last text ("nan") */
}

/* Strings are shown in double quotes with C escapes, so a value with
 * newlines (a chat template) stays on one line. UTF-8 passes through. */
static void fmt_string(textbuf *t, pt_gguf_str s) {
    tb_put(t, "\"", 1);
    uint64_t run = 0; /* bytes at s.ptr + i - run not yet copied */
    for (uint64_t i = 0; i < s.len && !t->full; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        const char *esc = NULL;
        char hex[8];
        switch (ch) {
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        default:
            if (ch < 0x20 || ch == 0x7f) {
                snprintf(hex, sizeof hex, "\\x%02x", ch);
                esc = hex;
            }
        }
        if (!esc) { run++; continue; }
        tb_put(t, s.ptr + i - run, (size_t)run);
        run = 0;
        tb_str(t, esc);
    }
    tb_put(t, s.ptr + s.len - run, (size_t)run);
    tb_put(t, "\"", 1);
}

static void fmt_value(textbuf *t, const pt_gguf_value *v, int max_items) {
    char num[64];
    switch (v->type) {
    case PT_GGUF_UINT8: case PT_GGUF_UINT16: case PT_GGUF_UINT32: case PT_GGUF_UINT64:
        snprintf(num, sizeof num, "%" PRIu64, v->v.u);
        tb_str(t, num);
        return;
    case PT_GGUF_INT8: case PT_GGUF_INT16: case PT_GGUF_INT32: case PT_GGUF_INT64:
        snprintf(num, sizeof num, "%" PRId64, v->v.i);
        tb_str(t, num);
        return;
    case PT_GGUF_FLOAT32: case PT_GGUF_FLOAT64:
        fmt_float(num, sizeof num, v->v.f, v->type == PT_GGUF_FLOAT32);
        tb_str(t, num);
        return;
    case PT_GGUF_BOOL: tb_str(t, v->v.b ? "true" : "false"); return;
    case PT_GGUF_STRING: fmt_string(t, v->v.s); return;
    case PT_GGUF_ARRAY: break;
    default: tb_str(t, "?"); return;
    }
    uint64_t n = v->v.arr.n;
    uint64_t shown_n = max_items < 0 || (uint64_t)max_items > n ? n : (uint64_t)max_items;
    tb_put(t, "[", 1);
    for (uint64_t i = 0; i < shown_n && !t->full; i++) {
        if (i) tb_put(t, ", ", 2);
        pt_gguf_value e;
        if (v->v.arr.items) fmt_value(t, &v->v.arr.items[i], max_items);
        else if (arr_elem(v, i, &e)) fmt_value(t, &e, max_items);
    }
    if (shown_n < n) {
        snprintf(num, sizeof num, "%s... (%" PRIu64 " total)", shown_n ? ", " : "", n);
        tb_str(t, num);
    }
    tb_put(t, "]", 1);
}

void pt_gguf_value_format(const pt_gguf_value *v, char *buf, size_t cap, int max_items) {
    if (!buf || cap == 0) return;
    textbuf t = {buf, cap, 0, false};
    if (v) fmt_value(&t, v, max_items);
    if (t.full && cap >= 4) {
        /* End with "...", cutting at a UTF-8 character boundary. */
        size_t cut = cap - 4;
        while (cut > 0 && ((unsigned char)buf[cut] & 0xC0) == 0x80) cut--;
        memcpy(buf + cut, "...", 3);
        t.len = cut + 3;
    }
    buf[t.len] = 0;
}
