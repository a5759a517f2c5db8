/*
 * ocl.h — the OpenCL host driver: devices, buffers and the kernels of
 * matmul.cl, ops.cl and attention.cl, and the image graphs' of conv.cl and
 * sd_ops.cl (ocl_sd.c). Compute only, no engine types
 * (pointers, shapes and the GGML type ids of kernels/cpu/quant.h).
 *
 * Every call returns 0 or an OpenCL status (negative); the message of the
 * last failure is pt_ocl_error(). Kernels are enqueued on one in-order
 * queue: calls return before the work is done; pt_ocl_read waits for it.
 * Buffer shapes are those of the .cl files (row-major float32 unless
 * said).
 */
#ifndef PETREL_OCL_H
#define PETREL_OCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pt_ocl pt_ocl;
typedef struct pt_ocl_mem pt_ocl_mem; /* a cl_mem */

/* One device as `petrel info --devices` shows it. */
typedef struct pt_ocl_device_info {
    char platform[128];
    char name[128];
    char version[128];       /* CL_DEVICE_VERSION */
    char driver[128];        /* CL_DRIVER_VERSION */
    uint64_t global_mem, max_alloc, local_mem;
    int compute_units;
    bool unified_memory;     /* CL_DEVICE_HOST_UNIFIED_MEMORY */
    uint32_t base_align;     /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: a sub-buffer's origin */
    bool int_dot;            /* cl_khr_integer_dot_product or cl_arm_integer_dot_product */
    bool subgroups;          /* cl_khr_subgroups or cl_intel_subgroups */
    bool cpu;                /* CL_DEVICE_TYPE_CPU (PoCL) */
    char extensions[4096];   /* truncated to fit */
} pt_ocl_device_info;

/* The devices of every platform, in platform order: fills up to cap
 * entries of out and returns how many exist (0 when a platform has none),
 * or a negative status when there is no platform (message in err). */
int pt_ocl_devices(pt_ocl_device_info *out, int cap, char *err, size_t err_cap);

/* Open device `index` (of pt_ocl_devices' list) and build the kernels.
 * cache_dir: where program binaries are kept per device and driver
 * (created when missing), or NULL for none. NULL on failure (message in
 * err). */
pt_ocl *pt_ocl_open(int index, const char *cache_dir, char *err, size_t err_cap);
void pt_ocl_close(pt_ocl *o);
const char *pt_ocl_error(const pt_ocl *o);
const pt_ocl_device_info *pt_ocl_info(const pt_ocl *o);
/* Products on CPU devices use the row kernels of matmul.cl, on others the
 * work-group kernels; tests set `group` to check the group kernels on a
 * CPU device too. */
void pt_ocl_use_group_kernels(pt_ocl *o, bool group);
/* Whether the program came from the binary cache (tests). */
bool pt_ocl_from_cache(const pt_ocl *o);
/* gemm.cl's tile in use (rows x tokens a work-group), and whether it was
 * read from the tuning file. */
void pt_ocl_gemm_tile(const pt_ocl *o, int *rows, int *tokens, bool *from_file);
/* Choose gemm.cl's tile and the decode products' rows a group for this
 * device: read `<key>.tune` in the cache directory when it is there
 * (unless retime), else time the tiles on a Q4_0 product of rows x cols by
 * n tokens, then the rows-a-group counts on the decode products of a 1.5B
 * model's feed-forward (the first n_variants of each list, 0: all), keep
 * the fastest and write the file (when the program has a cache
 * directory).
 * The program is left built with what it chose. pt_ocl_open runs it on
 * GPUs with a cache directory, in place of the default build; tests call
 * it on any device. 0, or an OpenCL status (then the program may be
 * another tile's, or not built). */
int pt_ocl_tune(pt_ocl *o, int rows, int cols, int n, int n_variants, bool retime);
/* Rebuild the program with gemm.cl's tile rows x tokens (64 or 128 each). */
int pt_ocl_set_gemm_tile(pt_ocl *o, int rows, int tokens);
/* Rebuild with the decode products' rows a work-group (1, 2 or 4), and
 * read it. */
int pt_ocl_set_vec_rows(pt_ocl *o, int rows);
int pt_ocl_vec_rows(const pt_ocl *o);

/* A device buffer of `bytes`, filled from init when non-NULL (zeroed
 * otherwise). With `host` (read-only weights on a unified-memory device)
 * the buffer uses init in place (CL_MEM_USE_HOST_PTR): init must outlive
 * it. NULL on failure. */
pt_ocl_mem *pt_ocl_alloc(pt_ocl *o, size_t bytes, const void *init, bool host);
void pt_ocl_free(pt_ocl_mem *m);
/* Bytes [off, off + bytes) of m as a buffer of its own (pt_ocl_free it;
 * m must outlive it); off a multiple of pt_ocl_info(o)->base_align. */
pt_ocl_mem *pt_ocl_sub(pt_ocl *o, pt_ocl_mem *m, size_t off, size_t bytes);
int pt_ocl_write(pt_ocl *o, pt_ocl_mem *m, size_t off, const void *src, size_t bytes);
int pt_ocl_read(pt_ocl *o, pt_ocl_mem *m, size_t off, void *dst, size_t bytes);
int pt_ocl_copy(pt_ocl *o, pt_ocl_mem *dst, size_t dst_off, pt_ocl_mem *src, size_t src_off,
                size_t bytes);
int pt_ocl_finish(pt_ocl *o);

/* Whether pt_ocl_matmul has a kernel for the type. */
bool pt_ocl_has_type(uint32_t type);
/* y[t][r] = W[r] . x[t]: W rows x cols of `type` (GGUF layout), x [n][cols], y [n][rows]. */
int pt_ocl_matmul(pt_ocl *o, uint32_t type, pt_ocl_mem *w, int64_t rows, int64_t cols,
                  pt_ocl_mem *x, int n, pt_ocl_mem *y);
/* Whether pt_ocl_matmul_fused takes this type and token count (the
 * decode products of the legacy quantized types on a GPU). */
bool pt_ocl_fuses(const pt_ocl *o, uint32_t type, int n);
/* y[r] = (accumulate ? y[r] : 0) + W[r] . x + (bias ? bias[r] : 0) for one
 * token (n == 1), where pt_ocl_fuses says so. */
int pt_ocl_matmul_fused(pt_ocl *o, uint32_t type, pt_ocl_mem *w, int64_t rows, int64_t cols,
                        pt_ocl_mem *x, pt_ocl_mem *y, pt_ocl_mem *bias, bool accumulate);
/* out[r] = act(Wg[r] . x) * (Wu[r] . x) for one token, act silu or (gelu)
 * GELU's tanh form: a gated feed-forward's two products and its
 * activation in one launch, where pt_ocl_fuses says so. */
int pt_ocl_matmul_glu(pt_ocl *o, uint32_t type, pt_ocl_mem *wg, pt_ocl_mem *wu, int64_t rows, int64_t cols,
                      pt_ocl_mem *x, pt_ocl_mem *out, bool gelu);
/* y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w over `rows` rows of dim (w NULL: none; y may be x). */
int pt_ocl_rmsnorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *w, int rows, int dim,
                   float eps);
int pt_ocl_add(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, int64_t count);
int pt_ocl_add_bias(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *b, int rows, int dim);
/* x [n][n_heads][head_dim] rotated by cs [n][n_rot] (kernels/cpu/ops.h pt_rope). */
int pt_ocl_rope(pt_ocl *o, pt_ocl_mem *x, pt_ocl_mem *cs, int n, int n_heads, int head_dim,
                int n_rot, bool neox);
/* rope of q [n][H][D] in place, rope of k [n][Hkv][D] into rows p0 .. p0 + n
 * of kc [n_ctx][Hkv][D] and v into vc (k itself unchanged): one launch for
 * two pt_ocl_rope and two pt_ocl_copy. D and n_rot even. */
int pt_ocl_rope_store(pt_ocl *o, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v, pt_ocl_mem *cs,
                      pt_ocl_mem *kc, pt_ocl_mem *vc, int n, int p0, int H, int Hkv, int D, int n_rot,
                      bool neox);
/* g = act(g) * u over count floats; gelu: GELU's tanh form, else silu. */
int pt_ocl_act_mul(pt_ocl *o, pt_ocl_mem *g, pt_ocl_mem *u, int64_t count, bool gelu);
int pt_ocl_softmax(pt_ocl *o, pt_ocl_mem *x, int rows, int n);
/* attention.cl: out, q [n][H][D]; kc, vc [n_ctx][Hkv][D]; D <= PT_OCL_MAX_HEAD_DIM. */
#define PT_OCL_MAX_HEAD_DIM 256
int pt_ocl_attention(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *kc, pt_ocl_mem *vc,
                     int n, int H, int Hkv, int D, int p0, int window, float scale);

/* ---- the image graphs' ops (ocl_sd.c): HWC float32 as sd_nn.h ---------- */

/* cols [n_px][ld] = im2col of output pixels [p0, p0 + n_px) (over the n
 * images' h_out * w_out pixels, image-major) of a k x k convolution of x
 * [n][h][w][c] (image_ops.h's order of columns), each row zero-padded from
 * k * k * c to ld columns (ld >= k * k * c; with k = 1 and h = 1 a copy of
 * rows of c values into rows of ld). */
int pt_ocl_im2col(pt_ocl *o, pt_ocl_mem *cols, int ld, pt_ocl_mem *x, int h, int w, int c, int k,
                  int stride, int pad, int64_t p0, int64_t n_px);
/* y [n][2h][2w][c]: nearest 2x up-sampling of x [n][h][w][c]. */
int pt_ocl_upsample2x(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h, int w, int c);
/* y [n_pix][ca + cb] = [a | b]. */
int pt_ocl_concat(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *a, int ca, pt_ocl_mem *b, int cb,
                  int64_t n_pix);
/* GroupNorm of n images [n][n_pix][c] (then SiLU when silu); y may be x.
 * Its statistics go through the driver's scratch buffer (ocl_impl.h). */
int pt_ocl_groupnorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *gamma, pt_ocl_mem *beta,
                     int n, int64_t n_pix, int c, int groups, float eps, bool silu);
/* LayerNorm of rows of c values; y may be x. */
int pt_ocl_layernorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *gamma, pt_ocl_mem *beta,
                     int64_t rows, int c, float eps);
/* out [rows][inner] = a * gelu(b) of x [rows][2 * inner] = [a | b]. */
int pt_ocl_geglu(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *x, int64_t rows, int inner);
/* x = silu(x) (gelu false) or gelu(x) (erf form) over count floats. */
int pt_ocl_act(pt_ocl *o, pt_ocl_mem *x, int64_t count, bool gelu);
/* y [n][n_pix][c] += t [n][c] (row img of t on every pixel of image img). */
int pt_ocl_add_image(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *t, int n, int64_t n_pix, int c);
/* Non-causal attention: out, q [n_seq][n_q][H * D], k, v [n_seq][n_kv][H * D];
 * D <= PT_OCL_MHA_MAX_D (sd_ops.cl's ATT_WG * MHA_DPI); D <= 160 takes the
 * tiled kernels where the device's local memory holds their tiles. */
#define PT_OCL_MHA_MAX_D 512
int pt_ocl_mha(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v, int n_seq,
               int n_q, int n_kv, int H, int D, float scale);

#endif
