/*
 * gguf_write.h — a GGUF v3 writer. Internal to the engine.
 *
 * Writes the layout gguf.h reads, byte for byte as ggml's gguf writer
 * (gguf.cpp, gguf_write_to_buf) and gguf-py lay it out:
 *
 *   "GGUF" | u32 version = 3 | u64 n_tensors | u64 n_kv
 *   n_kv x      { string key | u32 value_type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
 *   zero bytes up to a multiple of the alignment (from the file start)
 *   tensor data, each tensor followed by zero bytes up to a multiple of
 *   the alignment (the last one too); offset = the tensor's distance from
 *   the start of the data, so every offset is a multiple of the alignment
 *   string = u64 length | bytes, no NUL
 *   array  = u32 elem_type | u64 count | elements (strings as above,
 *            nested arrays recursively, scalars packed little-endian)
 *
 * The alignment is general.alignment when the metadata holds it (a u32,
 * a power of two and a multiple of 8, as the reader demands), else 32.
 *
 * The file is written to "PATH.tmp" and renamed to PATH only by
 * pt_gguf_writer_commit, after every byte was written, flushed and synced:
 * a failed or abandoned write (full disk, cancel, error) leaves nothing
 * under PATH, and pt_gguf_writer_abort removes the .tmp.
 */
#ifndef PETREL_GGUF_WRITE_H
#define PETREL_GGUF_WRITE_H

#include "gguf.h"

#include <stddef.h>
#include <stdint.h>

/* One tensor's entry in the header; its data follows in the same order. */
typedef struct pt_gguf_out_tensor {
    pt_gguf_str name;
    uint32_t n_dims;  /* 1..4 */
    int64_t ne[4];
    uint32_t type;    /* enum pt_type */
} pt_gguf_out_tensor;

typedef struct pt_gguf_writer pt_gguf_writer;

/* Create PATH.tmp (truncating an old one). */
pt_status pt_gguf_writer_open(const char *path, pt_gguf_writer **out, pt_error *err);

/* Write the header: kv[0..n_kv) in order, then the n_tensors entries with
 * their offsets computed from their types and shapes, then the padding.
 * PT_ERR_ARG for a tensor of unknown type or a shape not a whole number
 * of blocks, or a general.alignment that is not a u32 power of two and a
 * multiple of 8. */
pt_status pt_gguf_writer_header(pt_gguf_writer *w, const pt_gguf_kv *kv, uint64_t n_kv,
                                 const pt_gguf_out_tensor *t, uint64_t n_tensors, pt_error *err);

/* Append n bytes of the current tensor's data. */
pt_status pt_gguf_writer_data(pt_gguf_writer *w, const void *data, size_t n, pt_error *err);

/* End the current tensor: check that exactly its size was written, then
 * pad to the alignment. */
pt_status pt_gguf_writer_end_tensor(pt_gguf_writer *w, pt_error *err);

/* Every tensor ended: flush, fsync, close and rename PATH.tmp to PATH.
 * Frees w whatever the outcome (on failure the .tmp is removed). */
pt_status pt_gguf_writer_commit(pt_gguf_writer *w, pt_error *err);

/* Give up: close and remove PATH.tmp, free w. NULL is a no-op. */
void pt_gguf_writer_abort(pt_gguf_writer *w);

/* Bytes written so far (the file's size once committed). */
uint64_t pt_gguf_writer_bytes(const pt_gguf_writer *w);

#endif
