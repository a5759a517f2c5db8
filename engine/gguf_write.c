/*
 * gguf_write.c — the GGUF writer; the layout is in gguf_write.h.
 *
 * Bytes go through a buffer of our own to write(2) (not stdio, so short
 * writes and errno are seen as they happen, and a test's LD_PRELOAD shim
 * can fail them); the first failure is kept with its errno, so a full
 * disk is reported as such (at the write or the fsync that saw it) and
 * the .tmp removed.
 */
#include "gguf_write.h"

#include "quant.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GGUF_VERSION_OUT 3
#define GGUF_DEFAULT_ALIGNMENT 32

#define BUF_BYTES ((size_t)1 << 20)

struct pt_gguf_writer {
    int fd;                 /* -1 once closed */
    uint8_t *buf;           /* BUF_BYTES, filled to `used` */
    size_t used;
    char *path, *tmp;       /* final name, final name + ".tmp" */
    uint64_t pos;           /* bytes written */
    uint64_t alignment;
    uint64_t *sizes;        /* data bytes of each tensor, from the header */
    uint64_t n_tensors, cur;/* tensors in the header; the one being written */
    uint64_t cur_written;   /* bytes of tensor `cur` written */
    int werrno;             /* errno of the first failed write, 0: none */
};

static pt_status write_failed(pt_gguf_writer *w, pt_error *err) {
    return pt_fail(err, PT_ERR_IO, "cannot write %s: %s", w->tmp,
                   strerror(w->werrno ? w->werrno : EIO));
}

/* Write the buffer out; false (werrno set) on failure. */
static bool flush_buf(pt_gguf_writer *w) {
    size_t off = 0;
    while (off < w->used && !w->werrno) {
        const ssize_t k = write(w->fd, w->buf + off, w->used - off);
        if (k > 0) off += (size_t)k;
        else if (k < 0 && errno == EINTR) continue;
        else w->werrno = k < 0 ? errno : ENOSPC; /* 0 bytes written: no room */
    }
    w->used = 0;
    return !w->werrno;
}

static pt_status put(pt_gguf_writer *w, const void *p, size_t n, pt_error *err) {
    const uint8_t *src = p;
    while (n && !w->werrno) {
        if (w->used == BUF_BYTES && !flush_buf(w)) break;
        const size_t k = n < BUF_BYTES - w->used ? n : BUF_BYTES - w->used;
        memcpy(w->buf + w->used, src, k);
        w->used += k;
        w->pos += k;
        src += k;
        n -= k;
    }
    return w->werrno ? write_failed(w, err) : PT_OK;
}

static pt_status put_u32(pt_gguf_writer *w, uint32_t v, pt_error *err) {
    const uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return put(w, b, 4, err);
}

static pt_status put_u64(pt_gguf_writer *w, uint64_t v, pt_error *err) {
    pt_status st = put_u32(w, (uint32_t)v, err);
    return st ? st : put_u32(w, (uint32_t)(v >> 32), err);
}

static pt_status put_str(pt_gguf_writer *w, pt_gguf_str s, pt_error *err) {
    pt_status st = put_u64(w, s.len, err);
    return st ? st : put(w, s.ptr, (size_t)s.len, err);
}

static pt_status put_zeros(pt_gguf_writer *w, uint64_t n, pt_error *err) {
    static const uint8_t zeros[64];
    while (n) {
        const size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        pt_status st = put(w, zeros, k, err);
        if (st) return st;
        n -= k;
    }
    return PT_OK;
}

static pt_status pad(pt_gguf_writer *w, pt_error *err) {
    const uint64_t r = w->pos % w->alignment;
    return r ? put_zeros(w, w->alignment - r, err) : PT_OK;
}

/* One scalar, little-endian, in the width of its type. */
static pt_status put_scalar(pt_gguf_writer *w, const pt_gguf_value *v, pt_error *err) {
    uint64_t bits = 0;
    switch (v->type) {
    case PT_GGUF_UINT8: case PT_GGUF_UINT16: case PT_GGUF_UINT32: case PT_GGUF_UINT64:
        bits = v->v.u;
        break;
    case PT_GGUF_INT8: case PT_GGUF_INT16: case PT_GGUF_INT32: case PT_GGUF_INT64:
        bits = (uint64_t)v->v.i; /* two's complement; truncated to the width below */
        break;
    case PT_GGUF_BOOL:
        bits = v->v.b ? 1 : 0;
        break;
    case PT_GGUF_FLOAT32: {
        const float f = (float)v->v.f; /* read from a float32: exact */
        uint32_t u;
        memcpy(&u, &f, 4);
        bits = u;
        break;
    }
    case PT_GGUF_FLOAT64:
        memcpy(&bits, &v->v.f, 8);
        break;
    default:
        return pt_fail(err, PT_ERR_ARG, "gguf write: value type %d is not a scalar", (int)v->type);
    }
    uint8_t b[8];
    const uint64_t n = pt_gguf_scalar_size(v->type);
    for (uint64_t i = 0; i < n; i++) b[i] = (uint8_t)(bits >> (8 * i));
    return put(w, b, (size_t)n, err);
}

/* The value without its type tag (the caller wrote it). */
static pt_status put_value(pt_gguf_writer *w, const pt_gguf_value *v, pt_error *err) {
    if (v->type == PT_GGUF_STRING) return put_str(w, v->v.s, err);
    if (v->type != PT_GGUF_ARRAY) return put_scalar(w, v, err);
    pt_status st;
    const pt_gguf_type et = v->v.arr.elem_type;
    if ((st = put_u32(w, (uint32_t)et, err)) || (st = put_u64(w, v->v.arr.n, err))) return st;
    const uint64_t es = pt_gguf_scalar_size(et);
    if (es) /* scalars are kept as the raw little-endian bytes of the file */
        return put(w, v->v.arr.raw, (size_t)(v->v.arr.n * es), err);
    for (uint64_t i = 0; i < v->v.arr.n; i++) {
        /* elements have no type tag of their own: a nested array is
         * u32 elem_type | u64 count | elements, a string u64 len | bytes */
        if ((st = put_value(w, &v->v.arr.items[i], err))) return st;
    }
    return PT_OK;
}

pt_status pt_gguf_writer_open(const char *path, pt_gguf_writer **out, pt_error *err) {
    *out = NULL;
    pt_gguf_writer *w = calloc(1, sizeof *w);
    const size_t n = strlen(path);
    if (!w || !(w->path = strdup(path)) || !(w->tmp = malloc(n + 5)) || !(w->buf = malloc(BUF_BYTES))) {
        if (w) {
            free(w->path);
            free(w->tmp);
        }
        free(w);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    }
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp", 5);
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    if ((w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        const int e = errno;
        free(w->buf);
        free(w->tmp);
        free(w->path);
        free(w);
        return pt_fail(err, PT_ERR_IO, "cannot create %s.tmp: %s", path, strerror(e));
    }
    *out = w;
    return PT_OK;
}

/* general.alignment of the metadata, as the reader accepts it. */
static pt_status alignment_of(const pt_gguf_kv *kv, uint64_t n_kv, uint64_t *out, pt_error *err) {
    *out = GGUF_DEFAULT_ALIGNMENT;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!pt_gguf_str_eq(kv[i].key, "general.alignment")) continue;
        const uint64_t a = kv[i].value.v.u;
        if (kv[i].value.type != PT_GGUF_UINT32 || !a || (a & (a - 1)) || a % 8)
            return pt_fail(err, PT_ERR_ARG,
                           "gguf write: general.alignment must be a u32 power of two, a multiple of 8");
        *out = a;
    }
    return PT_OK;
}

pt_status pt_gguf_writer_header(pt_gguf_writer *w, const pt_gguf_kv *kv, uint64_t n_kv,
                                 const pt_gguf_out_tensor *t, uint64_t n_tensors, pt_error *err) {
    pt_status st = alignment_of(kv, n_kv, &w->alignment, err);
    if (st) return st;
    free(w->sizes);
    w->sizes = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *w->sizes);
    if (!w->sizes) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    w->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++) {
        uint64_t rows = 1;
        if (t[i].n_dims < 1 || t[i].n_dims > 4)
            return pt_fail(err, PT_ERR_ARG, "gguf write: tensor %.*s has %u dimensions", (int)t[i].name.len,
                           t[i].name.ptr, t[i].n_dims);
        for (uint32_t d = 1; d < t[i].n_dims; d++) rows *= (uint64_t)t[i].ne[d];
        const size_t row = pt_type_row_bytes(t[i].type, t[i].ne[0]);
        if (!row)
            return pt_fail(err, PT_ERR_ARG, "gguf write: tensor %.*s: %" PRId64 " values per row of type %s",
                           (int)t[i].name.len, t[i].name.ptr, t[i].ne[0], pt_type_name(t[i].type));
        w->sizes[i] = rows * row;
    }

    static const char magic[4] = {'G', 'G', 'U', 'F'};
    if ((st = put(w, magic, 4, err)) || (st = put_u32(w, GGUF_VERSION_OUT, err)) ||
        (st = put_u64(w, n_tensors, err)) || (st = put_u64(w, n_kv, err)))
        return st;
    for (uint64_t i = 0; i < n_kv; i++)
        if ((st = put_str(w, kv[i].key, err)) || (st = put_u32(w, (uint32_t)kv[i].value.type, err)) ||
            (st = put_value(w, &kv[i].value, err)))
            return st;
    uint64_t offset = 0; /* from the start of the data */
    for (uint64_t i = 0; i < n_tensors; i++) {
        if ((st = put_str(w, t[i].name, err)) || (st = put_u32(w, t[i].n_dims, err))) return st;
        for (uint32_t d = 0; d < t[i].n_dims; d++)
            if ((st = put_u64(w, (uint64_t)t[i].ne[d], err))) return st;
        if ((st = put_u32(w, t[i].type, err)) || (st = put_u64(w, offset, err))) return st;
        offset += (w->sizes[i] + w->alignment - 1) / w->alignment * w->alignment;
    }
    w->cur = 0;
    w->cur_written = 0;
    return pad(w, err);
}

pt_status pt_gguf_writer_data(pt_gguf_writer *w, const void *data, size_t n, pt_error *err) {
    if (w->cur >= w->n_tensors || n > w->sizes[w->cur] - w->cur_written)
        return pt_fail(err, PT_ERR_ARG, "gguf write: more data than the header's tensors hold");
    w->cur_written += n;
    return put(w, data, n, err);
}

pt_status pt_gguf_writer_end_tensor(pt_gguf_writer *w, pt_error *err) {
    if (w->cur >= w->n_tensors || w->cur_written != w->sizes[w->cur])
        return pt_fail(err, PT_ERR_ARG, "gguf write: tensor %" PRIu64 " has %" PRIu64 " bytes, not %" PRIu64,
                       w->cur, w->cur_written, w->cur < w->n_tensors ? w->sizes[w->cur] : 0);
    w->cur++;
    w->cur_written = 0;
    return pad(w, err);
}

static void writer_free(pt_gguf_writer *w) {
    free(w->buf);
    free(w->sizes);
    free(w->tmp);
    free(w->path);
    free(w);
}

pt_status pt_gguf_writer_commit(pt_gguf_writer *w, pt_error *err) {
    pt_status st = PT_OK;
    if (w->cur != w->n_tensors)
        st = pt_fail(err, PT_ERR_ARG, "gguf write: %" PRIu64 " of %" PRIu64 " tensors written", w->cur,
                     w->n_tensors);
    if (!st && flush_buf(w) && fsync(w->fd) != 0) w->werrno = errno ? errno : EIO;
    if (close(w->fd) != 0 && !w->werrno) w->werrno = errno ? errno : EIO;
    w->fd = -1;
    if (!st && w->werrno) st = write_failed(w, err);
    if (!st && rename(w->tmp, w->path) != 0) {
        const int e = errno;
        st = pt_fail(err, PT_ERR_IO, "cannot rename %s to %s: %s", w->tmp, w->path, strerror(e));
    }
    if (st) unlink(w->tmp);
    writer_free(w);
    return st;
}

void pt_gguf_writer_abort(pt_gguf_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    unlink(w->tmp);
    writer_free(w);
}

uint64_t pt_gguf_writer_bytes(const pt_gguf_writer *w) {
    return w->pos;
}
