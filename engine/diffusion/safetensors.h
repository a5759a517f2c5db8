/*
 * safetensors.h — a validating reader of .safetensors files over mmap.
 * Internal to the engine.
 *
 * On-disk layout:
 *   u64 N (little-endian)          length of the header
 *   N bytes of JSON                one object (UTF-8; may end in spaces):
 *       "NAME": {"dtype": "F16", "shape": [d0, d1, ...],
 *                "data_offsets": [begin, end]}   for each tensor
 *       "__metadata__": {"key": "string", ...}   optional, free text
 *   data area                      from byte 8 + N to the end of the file;
 *                                  begin/end are relative to its start,
 *                                  row-major (C order), little-endian
 *
 * Checked before anything is used: N fits in the file (and below
 * ST_MAX_HEADER); the header is a JSON object; every tensor has a known
 * dtype, a shape of at most ST_MAX_DIMS non-negative integers, and
 * 0 <= begin <= end <= size of the data area with
 * end - begin == product(shape) * dtype size (computed with overflow
 * checks); no two tensors share a name or overlap. Errors are one line
 * naming the file: "model.safetensors: tensor 'x' data [10, 20) ...".
 */
#ifndef PETREL_SAFETENSORS_H
#define PETREL_SAFETENSORS_H

#include "petrel.h"

#include <stdbool.h>
#include <stdint.h>

#define ST_MAX_DIMS 4                       /* SD weights have rank <= 4 */
#define ST_MAX_HEADER (100u * 1024 * 1024)  /* as the reference reader */

typedef enum st_dtype {
    ST_F32 = 0,
    ST_F16,
    ST_BF16,
    ST_I32, /* listed, but no image weight uses them: not convertible */
    ST_I64,
    ST_U8,
    ST_DTYPE_COUNT,
} st_dtype;

typedef struct st_tensor {
    const char *name;   /* NUL-terminated, owned by the st_file */
    st_dtype dtype;
    int n_dims;         /* 0 (a scalar) .. ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS]; /* shape[0] outermost; unused dims 1 */
    uint64_t offset;    /* from the start of the file */
    uint64_t nbytes;
    const void *data;   /* map + offset (not aligned in general) */
} st_tensor;

typedef struct st_file {
    const char *name;       /* the path given (or a label), for messages */
    const uint8_t *map;     /* whole file */
    uint64_t size;
    uint64_t data_offset;   /* 8 + N */
    uint64_t n_tensors;
    st_tensor *tensors;     /* n_tensors, sorted by name (strcmp) */
    /* "__metadata__" as string pairs, n_meta of each (NULL when absent) */
    uint64_t n_meta;
    const char **meta_keys, **meta_values;
    bool owns_map;
    void *json_;            /* the parsed header (names point into it) */
} st_file;

/* Map and parse a file. */
pt_status st_open(const char *path, st_file **out, pt_error *err);
/* Parse a buffer the caller keeps alive (tests, fuzzing); label names it. */
pt_status st_open_memory(const void *data, uint64_t size, const char *label, st_file **out,
                         pt_error *err);
void st_close(st_file *f);

const st_tensor *st_find(const st_file *f, const char *name);
/* A "__metadata__" value, or NULL. */
const char *st_meta(const st_file *f, const char *key);

const char *st_dtype_name(st_dtype d);   /* "F16" */
int st_dtype_size(st_dtype d);           /* bytes per element */
/* The enum pt_type of a dtype petrel computes with (F32, F16, BF16), or
 * UINT32_MAX for I32/I64/U8. */
uint32_t st_dtype_pt_type(st_dtype d);

#endif
