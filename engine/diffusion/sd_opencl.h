/*
 * sd_opencl.h — the image graphs' layers (sd_nn.h) on an OpenCL device
 * (kernels/opencl: the matmul kernels of the LLM, conv.cl, sd_ops.cl).
 * Internal to the engine.
 *
 * The layers are sd_nn.h's, loaded for the CPU as always; these functions
 * run them on device buffers (pt_ocl_mem, float32 HWC, the shapes of
 * sd_nn.h) so that a graph keeps its activations on the device from its
 * input to its output.
 *
 * Weights. A layer's matrix and its vectors (bias, norm scales) are
 * uploaded on the layer's first run and kept, keyed by the address of the
 * layer's sd_linear / sd_norm. A Q8_0, Q4_0 or Q4_1 matrix (the Q8_0 /
 * Q4_0 policies, petrel's quantized GGUF files) goes up as its own GGML
 * blocks, rows of k_pad columns (the CPU's zero padding kept; read back
 * from the packed copy when the CPU repacked it), and matmul.cl / gemm.cl
 * multiply them, the input rows zero-padded to k_pad on the device; any
 * other matrix as rows of `in` columns (pt_weight_row of what the CPU
 * holds), F16 when the CPU's are F16 and float32 otherwise. Either way the
 * device multiplies by the values the CPU multiplies by (the CPU may
 * multiply int8-quantized inputs where the device multiplies floats).
 * Uploads belong to the group set last (sd_ocl_weights_group: one per
 * graph), and sd_ocl_forget_weights drops a group's: call it before that
 * graph's layers are freed (their addresses may come back for others).
 *
 * Scratch. Buffers are slots of the device, grown on demand and kept
 * until sd_ocl_release_buffers: the layers use slots below
 * SD_OCL_SLOT_USER, a graph numbers its own activations from it. Work is
 * queued in order on one queue, so a slot is free again as soon as the
 * call that used it returns.
 *
 * Without OpenCL (PETREL_OPENCL=OFF) sd_ocl_open says so and nothing
 * else is reached.
 */
#ifndef PETREL_SD_OPENCL_H
#define PETREL_SD_OPENCL_H

#include "sd_nn.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sd_ocl sd_ocl;
typedef struct pt_ocl_mem pt_ocl_mem; /* ocl.h: a device buffer */

#define SD_OCL_SLOT_USER 16 /* the first slot of a graph's own buffers */
#define SD_OCL_SLOTS 80

/* Device `index` (pt_devices_list's numbering), programs cached in
 * cache_dir (NULL: none). PT_ERR_UNSUPPORTED when there is no OpenCL. */
pt_status sd_ocl_open(int index, const char *cache_dir, sd_ocl **out, pt_error *err);
void sd_ocl_close(sd_ocl *d); /* NULL: nothing */
const char *sd_ocl_name(const sd_ocl *d);
typedef struct pt_ocl pt_ocl;
pt_ocl *sd_ocl_driver(sd_ocl *d); /* the host driver (ocl.h), for tests */
/* A convolution's im2col buffer holds at most this many floats (128 MiB):
 * larger images run the im2col and the product over chunks of output
 * pixels (the VAE's last levels: 2.4 GB at 512x512 in one piece). Tests
 * set a small one to run the chunks. */
#define SD_OCL_CONV_COLS ((size_t)32 << 20)
void sd_ocl_set_conv_cols(sd_ocl *d, size_t floats);
enum { SD_OCL_W_UNET = 0, SD_OCL_W_VAE = 1 }; /* weight groups */
void sd_ocl_weights_group(sd_ocl *d, int group);
void sd_ocl_forget_weights(sd_ocl *d, int group); /* group < 0: every group */
/* Bytes of device memory the uploaded weights of `group` (< 0: every
 * group) hold: matrices as uploaded plus float32 vectors. */
uint64_t sd_ocl_weight_bytes(const sd_ocl *d, int group);
void sd_ocl_release_buffers(sd_ocl *d);

/* Slot `slot`'s buffer, at least `floats` long (contents not kept when it
 * grows). NULL (err set) when the device has no room. */
pt_ocl_mem *sd_ocl_slot(sd_ocl *d, int slot, size_t floats, pt_error *err);
pt_status sd_ocl_write(sd_ocl *d, pt_ocl_mem *m, const float *src, size_t n, pt_error *err);
pt_status sd_ocl_read(sd_ocl *d, pt_ocl_mem *m, float *dst, size_t n, pt_error *err);

/* sd_nn.h's layers and ops on device buffers; same shapes, same aliasing
 * rules (sd_ocl_transformer works in place on x). */
pt_status sd_ocl_linear(sd_ocl *d, const sd_linear *l, pt_ocl_mem *x, int64_t n, pt_ocl_mem *y,
                        pt_error *err);
pt_status sd_ocl_conv(sd_ocl *d, const sd_conv *c, pt_ocl_mem *x, int n, int h, int w,
                      pt_ocl_mem *y, pt_ocl_mem *add, pt_error *err);
pt_status sd_ocl_groupnorm(sd_ocl *d, const sd_norm *nm, pt_ocl_mem *y, pt_ocl_mem *x, int n,
                           int64_t n_pix, bool silu, pt_error *err);
pt_status sd_ocl_layernorm(sd_ocl *d, const sd_norm *nm, pt_ocl_mem *y, pt_ocl_mem *x,
                           int64_t n_rows, pt_error *err);
pt_status sd_ocl_act(sd_ocl *d, sd_eltwise f, pt_ocl_mem *x, int64_t n, pt_error *err);
pt_status sd_ocl_add(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *x, int64_t n, pt_error *err);
pt_status sd_ocl_geglu(sd_ocl *d, pt_ocl_mem *out, pt_ocl_mem *x, int64_t n_rows, int inner,
                       pt_error *err);
pt_status sd_ocl_upsample(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h, int w, int c,
                          pt_error *err);
pt_status sd_ocl_concat(sd_ocl *d, pt_ocl_mem *y, pt_ocl_mem *a, int ca, pt_ocl_mem *b, int cb,
                        int64_t n_pix, pt_error *err);
pt_status sd_ocl_mha(sd_ocl *d, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v,
                     int n_seq, int n_q, int n_kv, int heads, int head_dim, pt_error *err);
pt_status sd_ocl_attn(sd_ocl *d, const sd_attn *a, pt_ocl_mem *y, pt_ocl_mem *x, int n_seq,
                      int64_t n_q, pt_ocl_mem *ctx, int64_t n_kv, pt_error *err);
pt_status sd_ocl_resnet(sd_ocl *d, const sd_resnet *r, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h,
                        int w, pt_ocl_mem *temb_silu, pt_error *err);
pt_status sd_ocl_transformer(sd_ocl *d, const sd_transformer *t, pt_ocl_mem *x, int n,
                             int64_t n_pix, pt_ocl_mem *ctx, int64_t n_ctx, pt_error *err);

#endif
