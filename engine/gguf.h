/*
 * gguf.h — a validating GGUF v2/v3 reader over mmap. Internal to the engine.
 *
 * On-disk layout (little-endian):
 *   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv    x { string key | u32 value_type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
 *   padding to `general.alignment` (default 32)
 *   tensor data; each tensor's offset is relative to the data start and a
 *   multiple of the alignment.
 *   string = u64 length | bytes (not NUL-terminated)
 *   array  = u32 elem_type | u64 count | elements (arrays may nest)
 *
 * Every count, length, offset and size is checked against the file before
 * it is used; a bad file gives PT_ERR_FORMAT (or PT_ERR_UNSUPPORTED for an
 * unknown tensor type or version) with a message naming the problem.
 * Strings and tensor data point into the mapping: they live as long as the
 * pt_gguf.
 */
#ifndef PETREL_GGUF_H
#define PETREL_GGUF_H

#include "petrel.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum pt_gguf_type {
    PT_GGUF_UINT8 = 0,
    PT_GGUF_INT8 = 1,
    PT_GGUF_UINT16 = 2,
    PT_GGUF_INT16 = 3,
    PT_GGUF_UINT32 = 4,
    PT_GGUF_INT32 = 5,
    PT_GGUF_FLOAT32 = 6,
    PT_GGUF_BOOL = 7,
    PT_GGUF_STRING = 8,
    PT_GGUF_ARRAY = 9,
    PT_GGUF_UINT64 = 10,
    PT_GGUF_INT64 = 11,
    PT_GGUF_FLOAT64 = 12,
} pt_gguf_type;

/* Bytes of one scalar of type t (on disk, little-endian), or 0 for STRING,
 * ARRAY and unknown types. */
uint64_t pt_gguf_scalar_size(uint32_t t);

/* A string inside the mapping: len bytes at ptr, NOT NUL-terminated. */
typedef struct pt_gguf_str {
    const char *ptr;
    uint64_t len;
} pt_gguf_str;

typedef struct pt_gguf_value pt_gguf_value;
struct pt_gguf_value {
    pt_gguf_type type;
    union {
        uint64_t u;    /* UINT8..UINT64 */
        int64_t i;     /* INT8..INT64 */
        double f;      /* FLOAT32, FLOAT64 */
        bool b;        /* BOOL */
        pt_gguf_str s; /* STRING */
        struct {
            pt_gguf_type elem_type;
            uint64_t n;
            /* Scalar elements: raw little-endian bytes in the mapping
             * (possibly unaligned; read with pt_gguf_arr_* below). */
            const uint8_t *raw;
            /* STRING and ARRAY elements: n parsed values (heap). */
            pt_gguf_value *items;
        } arr;
    } v;
};

typedef struct pt_gguf_kv {
    pt_gguf_str key;
    pt_gguf_value value;
} pt_gguf_kv;

typedef struct pt_gguf_tensor {
    pt_gguf_str name;
    uint32_t n_dims;      /* 1..4 */
    int64_t ne[4];        /* ne[0] fastest varying; unused dims are 1 */
    uint32_t type;        /* enum pt_type (kernels/cpu/quant.h) */
    uint64_t offset;      /* from the start of the file */
    uint64_t nbytes;
    const void *data;     /* map + offset */
} pt_gguf_tensor;

typedef struct pt_gguf {
    uint32_t version;
    uint64_t n_kv, n_tensors;
    pt_gguf_kv *kv;           /* n_kv, file order */
    pt_gguf_tensor *tensors;  /* n_tensors, file order */
    uint64_t alignment;
    uint64_t data_offset;     /* start of tensor data in the file */
    const uint8_t *map;       /* whole file */
    uint64_t size;
    bool owns_map;            /* munmap on close */
} pt_gguf;

/* Map and parse a file. */
pt_status pt_gguf_open(const char *path, pt_gguf **out, pt_error *err);
/* Parse a buffer the caller keeps alive (tests, fuzzing). */
pt_status pt_gguf_open_memory(const void *data, uint64_t size, pt_gguf **out, pt_error *err);
void pt_gguf_close(pt_gguf *g);

bool pt_gguf_str_eq(pt_gguf_str s, const char *cstr);

const pt_gguf_kv *pt_gguf_find(const pt_gguf *g, const char *key);
const pt_gguf_tensor *pt_gguf_find_tensor(const pt_gguf *g, const char *name);

/* Typed getters: true when the key exists and converts without loss
 * (any integer type that fits, float32/float64 for floats). */
bool pt_gguf_get_u32(const pt_gguf *g, const char *key, uint32_t *out);
bool pt_gguf_get_i64(const pt_gguf *g, const char *key, int64_t *out);
bool pt_gguf_get_f32(const pt_gguf *g, const char *key, float *out);
bool pt_gguf_get_bool(const pt_gguf *g, const char *key, bool *out);
bool pt_gguf_get_str(const pt_gguf *g, const char *key, pt_gguf_str *out);
/* The array under key with the given element type, or NULL. */
const pt_gguf_value *pt_gguf_get_arr(const pt_gguf *g, const char *key, pt_gguf_type elem_type);

/* Element i of a scalar array, converted. */
int64_t pt_gguf_arr_i64(const pt_gguf_value *arr, uint64_t i);
double pt_gguf_arr_f64(const pt_gguf_value *arr, uint64_t i);

const char *pt_gguf_type_name(pt_gguf_type t);
/* Render a value as text into buf (always NUL-terminated, truncated with
 * "..."); arrays show at most max_items elements then ", ... (N total)". */
void pt_gguf_value_format(const pt_gguf_value *v, char *buf, size_t cap, int max_items);

#endif
