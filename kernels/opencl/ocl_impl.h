/*
 * ocl_impl.h — what the host driver's files share (ocl.c, ocl_sd.c): the
 * work sizes passed to the compiler, the kernel ids (in kernel_names'
 * order, ocl.c) and the enqueueing of a kernel. Internal to them.
 */
#ifndef PETREL_OCL_IMPL_H
#define PETREL_OCL_IMPL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "ocl.h"

#include <stddef.h>

/* Work sizes, passed to the compiler as -D: a matmul group computes
 * MM_NR rows for 1 (decode) or MM_NT tokens with MM_WG items. */
#define MM_WG 64
#define MM_NR 4
#define MM_NT 8
#define OPS_WG 64
#define RMS_WG 128 /* ops.cl's rmsnorm */
#define ATT_WG 64
#define ATT_MAX_D PT_OCL_MAX_HEAD_DIM /* ATT_WG * ATT_DPI of attention.cl */
#define ATT_TQ 4                      /* attention.cl: tokens a group of attention_tq */
_Static_assert(ATT_WG * 4 == ATT_MAX_D, "attention.cl's ATT_DPI is 4");
#define GEMM_WG 256   /* gemm.cl: a 16 x 16 grid of items */
#define GEMM_TILE 64  /* gemm.cl's default tile: 64 rows x 64 tokens, 4 x 4 per item */
/* The product ocl_tune.c times each tile on: a Q4_0 matrix of this many
 * rows and columns by this many tokens (a 1.5B model's attention matrix
 * and a long prompt's batch) */
#define GEMM_TUNE_ROWS 2048
#define GEMM_TUNE_COLS 2048
#define GEMM_TUNE_N 512
#define VEC_NR_DEFAULT 1
#define GEMM_MIN_N 32 /* fewer tokens: the _n kernels */
/* sd_ops.cl's tiled attention: groups of MHA_TQ queries x MHA_TP items
 * per query, tiles of MHA_TK keys (MHA_TK a multiple of MHA_TP) */
#define MHA_TQ 32
#define MHA_TK 32
#define MHA_TP 4
_Static_assert(MHA_TK % MHA_TP == 0, "each item scores MHA_TK / MHA_TP keys of a tile");
/* GroupNorm's statistics: slices of about this many values of a group
 * (whole pixels; at least one) per work-group */
#define GN_SLICE_VALUES 2048

enum {
    /* per type: the group kernels for 1 and MM_NT tokens, then the row kernel (CPU devices);
     * ocl.c's legacy_slot counts on this order */
    K_Q4_0_1, K_Q4_0_N, K_Q4_0_R, K_Q4_1_1, K_Q4_1_N, K_Q4_1_R, K_Q5_0_1, K_Q5_0_N, K_Q5_0_R,
    K_Q5_1_1, K_Q5_1_N, K_Q5_1_R, K_Q8_0_1, K_Q8_0_N, K_Q8_0_R, K_F32_1, K_F32_N, K_F32_R,
    K_F16_1, K_F16_N, K_F16_R, K_BF16_1, K_BF16_N, K_BF16_R, K_Q4_K_1, K_Q4_K_N, K_Q4_K_R,
    K_Q5_K_1, K_Q5_K_N, K_Q5_K_R, K_Q6_K_1, K_Q6_K_N, K_Q6_K_R,
    /* the tiled products of gemm.cl, same type order */
    K_Q4_0_G, K_Q4_1_G, K_Q5_0_G, K_Q5_1_G, K_Q8_0_G, K_F32_G, K_F16_G, K_BF16_G, K_Q4_K_G,
    K_Q5_K_G, K_Q6_K_G,
    /* the fused gate-up decode products of matmul.cl (MM_GLU) */
    K_Q4_0_GLU, K_Q4_1_GLU, K_Q5_0_GLU, K_Q5_1_GLU, K_Q8_0_GLU,
    K_RMSNORM, K_ADD, K_ADD_BIAS, K_ROPE, K_ACT_MUL, K_SOFTMAX, K_ATTENTION, K_ATTENTION_TQ, K_ROPE_STORE,
    /* the image graphs' (conv.cl, sd_ops.cl; ocl_sd.c) */
    K_IM2COL, K_UPSAMPLE, K_CONCAT, K_GROUPNORM, K_LAYERNORM, K_GEGLU, K_ACT, K_ADD_IMAGE, K_MHA,
    K_GN_PART, K_GN_STATS, K_MHA_T12, K_MHA_T16, K_MHA_T20, K_MHA_T40, /* the _t's: in dpi order */
    K_COUNT
};
struct pt_ocl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    cl_kernel k[K_COUNT];
    pt_ocl_device_info info;
    bool cpu;          /* a CPU device (PoCL): the row kernels of matmul.cl */
    bool gemm;         /* the device runs gemm.cl's 256-item groups (every kernel of it) */
    bool from_cache;
    int gemm_m, gemm_n;   /* gemm.cl's tile: rows x tokens (GEMM_M, GEMM_N) */
    int vec_nr;           /* matmul.cl's MM_VEC: rows a work-group (VEC_NR) */
    bool tuned_from_file; /* the tile came from the tuning file (ocl_tune.c) */
    char cache_dir[512];  /* "" when program binaries are not cached */
    /* sd_ops.cl's tiled attention: on CPU devices only, unless
     * PETREL_OCL_MHA=tiled (or =plain: never). On NVIDIA's OpenCL (H200,
     * driver 580) it fails with CL_OUT_OF_RESOURCES, cause not found yet,
     * while it passes every check on PoCL. */
    bool mha_tiled;
    cl_mem scratch;       /* pt_ocl_scratch's, scratch_bytes long */
    size_t scratch_bytes;
    /* PETREL_OCL_PROFILE=FILE: every kernel is waited for and its device
     * time added to prof_ns; the totals are appended to FILE at close */
    char prof_path[512];
    uint64_t prof_ns[K_COUNT], prof_n[K_COUNT];
    char err[512];
};

/* Build the program (from the binary cache where it has it) with gemm.cl's
 * tile gemm_m x gemm_n and MM_VEC's vec_nr rows a group, and create every
 * kernel. */
int pt_ocl_rebuild(pt_ocl *o, int gemm_m, int gemm_n, int vec_nr);
/* "%016llx" of the source, platform, device and driver: the name the
 * tuning file goes under (ocl_tune.c). */
void pt_ocl_device_key(const pt_ocl *o, char *out, size_t cap);

/* Set the arguments of kernel k from (size, pointer) pairs and enqueue it
 * on a grid of `dims` dimensions. */
int pt_ocl_launch(pt_ocl *o, int k, int dims, const size_t *global, const size_t *local, int n_args,
                  ...);
/* The driver's scratch buffer of at least `bytes` (grown when smaller; a
 * kernel still queued on the old one keeps it alive), or NULL (message
 * set). Kernels on the one in-order queue never run at once, so each call
 * may use it all. */
pt_ocl_mem *pt_ocl_scratch(pt_ocl *o, size_t bytes);
/* CL_KERNEL_WORK_GROUP_SIZE of kernel k on the device (0 when unknown). */
size_t pt_ocl_kernel_wg(pt_ocl *o, int k);
/* Set the driver's last message (pt_ocl_error). */
void pt_ocl_set_error(pt_ocl *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ARG(v) sizeof(v), (const void *)&(v)

static inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

#endif
