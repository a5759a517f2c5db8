/*
 * backend.h — the op table a device fills for the graphs (llm_graph.c),
 * and the buffers it owns. Internal to the engine.
 *
 * A graph holds pt_buf handles only and calls the device's ops on them;
 * it never reads a buffer's memory except through read/write. Two
 * devices exist: the CPU (backend_cpu.c: plain C on the kernels of
 * kernels/cpu, buffers in host memory) and OpenCL (backend_opencl.c on
 * kernels/opencl). Ops are queued in call order on their device; read
 * waits for the work before it.
 *
 * Shapes (float32, row-major; E, H, Hkv, D as in llm_internal.h):
 *   matmul     y [n][rows] = W x, x [n][cols]; W a weight buffer of
 *              `type` in GGUF layout (rows of pt_type_row_bytes(cols))
 *   rmsnorm    `rows` rows of dim: y = x / rms(x) * w (w NULL: none);
 *              y may be x. Q/K norms are rows = n * heads, dim = D.
 *   rope       x [n][heads][D] rotated by cs [n][n_rot] (pt_rope_table's
 *              table of each token's position; made on the host so that
 *              every device rotates by the same angles)
 *   attention  out, q [n][H][D]; the cache kc, vc [n_ctx][Hkv][D], with
 *              query token t at position p0 + t seeing positions
 *              max(0, p0 + t + 1 - window) .. p0 + t (window 0: all)
 *   act_mul    g = act(g) * u over count floats
 */
#ifndef PETREL_BACKEND_H
#define PETREL_BACKEND_H

#include "llm.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pt_buf pt_buf;       /* a device's buffer: each backend defines it */
typedef struct pt_device pt_device;

typedef struct pt_attn_shape {
    int n, H, Hkv, D, p0, window;
    float scale;
} pt_attn_shape;

typedef struct pt_device_ops {
    /* A buffer of bytes, filled from init (zeroed when NULL). */
    pt_buf *(*alloc)(pt_device *d, size_t bytes, const void *init);
    /* A read-only weight of bytes at data, which outlives the buffer (the
     * GGUF mapping): copied to the device, or used in place where the
     * device shares host memory. */
    pt_buf *(*weight)(pt_device *d, const void *data, size_t bytes);
    void (*free)(pt_device *d, pt_buf *b);
    pt_status (*write)(pt_device *d, pt_buf *b, size_t off, const void *src, size_t bytes);
    pt_status (*read)(pt_device *d, pt_buf *b, size_t off, void *dst, size_t bytes);
    pt_status (*copy)(pt_device *d, pt_buf *dst, size_t dst_off, pt_buf *src, size_t src_off,
                      size_t bytes);
    bool (*has_type)(uint32_t type);  /* matmul has a kernel for it */
    pt_status (*matmul)(pt_device *d, uint32_t type, pt_buf *w, int64_t rows, int64_t cols,
                        pt_buf *x, int n, pt_buf *y);
    pt_status (*rmsnorm)(pt_device *d, pt_buf *y, pt_buf *x, pt_buf *w, int rows, int dim, float eps);
    pt_status (*add)(pt_device *d, pt_buf *y, pt_buf *x, int64_t count);
    pt_status (*add_bias)(pt_device *d, pt_buf *y, pt_buf *b, int rows, int dim);
    pt_status (*rope)(pt_device *d, pt_buf *x, pt_buf *cs, int n, int heads, int head_dim, int n_rot,
                      bool neox);
    pt_status (*attention)(pt_device *d, pt_buf *out, pt_buf *q, pt_buf *kc, pt_buf *vc,
                           const pt_attn_shape *a);
    pt_status (*act_mul)(pt_device *d, pt_buf *g, pt_buf *u, int64_t count, pt_ffn_act act);
    pt_status (*softmax)(pt_device *d, pt_buf *x, int rows, int n);
    void (*close)(pt_device *d);
    /* Optional (NULL: the graph runs matmul, add_bias and add one by one).
     * matmul_fuses: whether matmul_fused takes this type and token count.
     * matmul_fused: y = W x + bias (bias NULL: none), or with accumulate
     * y += W x + bias (a residual added where the product lands), in one
     * step. */
    bool (*matmul_fuses)(pt_device *d, uint32_t type, int n);
    pt_status (*matmul_fused)(pt_device *d, uint32_t type, pt_buf *w, int64_t rows, int64_t cols,
                              pt_buf *x, int n, pt_buf *y, pt_buf *bias, bool accumulate);
    /* Optional (NULL: rope, rope, copy, copy): rope of q [n][H][D] in
     * place and of k into rows p0 .. p0 + n of kc [n_ctx][Hkv][D], v into
     * vc (k may be left unrotated); false from rope_stores: not for this
     * shape. */
    /* Optional (NULL: matmul, matmul, act_mul), where matmul_fuses says
     * so: out = act(Wg x) * (Wu x), Wg and Wu of one type and shape. */
    pt_status (*matmul_glu)(pt_device *d, uint32_t type, pt_buf *wg, pt_buf *wu, int64_t rows, int64_t cols,
                            pt_buf *x, int n, pt_buf *out, pt_ffn_act act);
    bool (*rope_stores)(pt_device *d, int D, int n_rot);
    pt_status (*rope_store)(pt_device *d, pt_buf *q, pt_buf *k, pt_buf *v, pt_buf *cs, pt_buf *kc,
                            pt_buf *vc, const pt_attn_shape *a, int n_rot, bool neox);
} pt_device_ops;

/* A device: its ops, its name for reports and the backend's own state.
 * Ops that fail set `err` (the device's last message) and return it. */
struct pt_device {
    const pt_device_ops *ops;
    pt_backend kind;
    int max_head_dim;  /* the largest head size attention takes, 0: any */
    char name[160];
    pt_error err;
    void *impl;
};

/* The CPU device (never fails but for memory). */
pt_status pt_device_cpu_open(pt_device **out, pt_error *err);
/* OpenCL device `index` (petrel info --devices' numbering), its program
 * binaries cached in cache_dir (NULL: no cache). PT_ERR_UNSUPPORTED when
 * petrel was built without OpenCL, there is no platform or no such
 * device, or the kernels do not build. */
pt_status pt_device_opencl_open(int index, const char *cache_dir, pt_device **out, pt_error *err);
/* Close a device (NULL: nothing). */
void pt_device_close(pt_device *d);

#endif
