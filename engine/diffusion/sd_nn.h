/*
 * sd_nn.h — the runtime and the layers every image graph (CLIP text
 * encoder, UNet, VAE, TAESD) is built from, on the CPU kernels
 * (matmul.h, qmatmul.h, image_ops.h). Internal to the engine.
 *
 * Layout. Activations are float32 HWC (image_ops.h): an image of h x w
 * pixels and c channels is x[(y * w + x) * c + ch]; a batch of n images is
 * n such images back to back; a token sequence is the same with
 * h * w = tokens. So a pixel is a row of c floats, a 1x1 convolution or a
 * Linear is one matrix product over rows, and no layer ever transposes.
 *
 * Weights. Every layer loads from sd_weights by a prefix of canonical
 * (diffusers) names: prefix + ".weight", prefix + ".bias". Norm scales and
 * biases are copied to owned float32 (whatever the file stores). Matrices
 * follow the runtime's weight policy (sd_weight_policy): kept as stored
 * (F32 / F16 / BF16 views into the mapping, or Q8_0 / Q4_0 from petrel's
 * GGUF), or quantized at load to Q8_0 / Q4_0 with every row zero-padded
 * to a multiple of 32 columns; either way a matrix the CPU variant's int8
 * kernels can take is repacked for them (pt_weight_pack), and products
 * of packed matrices read the int8 quantization of their input (pt_qact).
 *
 * Convolutions (sd_conv) run as im2col (pt_im2col_hwc) over tiles of
 * output pixels followed by the matrix product with the weight reordered
 * to rows of (ky, kx, c_in), zero-padded to k_pad (a multiple of 32), so
 * a tile's product writes its output pixels in HWC directly. Tiles are
 * spread over the pool, one per task, each with its own per-thread
 * buffers, so scratch stays a few MB per thread for any image size.
 *
 * Determinism. Every output value is computed by one kernel call whose
 * result does not depend on which tile, task or thread computes it
 * (qmatmul.h, quant.h, image_ops.h), and reductions that cross pixels
 * (GroupNorm statistics) are summed in fixed chunks combined in a fixed
 * order: results are bitwise the same for any thread count.
 *
 * Threads. A graph's run takes the runtime's pt_threadpool for its whole
 * duration (sd_rt_begin / sd_rt_end, called by the graph entry points:
 * sd_clip_encode, sd_unet_run, the VAE decoders), so the layer calls below
 * run between those two. Loading uses no pool.
 *
 * Memory accounting. The runtime counts the bytes the graphs hold
 * (sd_mem): weights prepared at load (packed, quantized, reordered copies,
 * norms and biases), weights used in place from the file mappings, and
 * activations plus scratch. `peak` is the most of their sum since the
 * last sd_rt_mem_mark, so the pipeline marks at the start of each stage
 * (text encode, denoise, decode) and reads the stage's peak after it.
 *
 * Errors. Functions that allocate or read weights return a pt_status and
 * fill err with one line naming the tensor or the shape. The run
 * functions fail only when memory runs out (buffers are grown on first
 * use and then reused across steps) or on shapes the layer was not
 * loaded for.
 */
#ifndef PETREL_SD_NN_H
#define PETREL_SD_NN_H

#include "cpu_features.h"
#include "matmul.h"
#include "petrel.h"
#include "sd_weights.h"
#include "threadpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- runtime ------------------------------------------------------------ */

typedef enum sd_weight_policy {
    SD_WEIGHTS_STORED = 0, /* as the file stores them */
    SD_WEIGHTS_Q8_0,       /* F32/F16/BF16 linear and conv weights -> Q8_0 at load */
    SD_WEIGHTS_Q4_0,       /* ... -> Q4_0 at load */
    SD_WEIGHTS_F16,        /* F32/BF16 linear and conv weights -> F16 at load (the
                            * F16 products of fmatmul.h; F16 stays as stored) */
} sd_weight_policy;

/* What a set of graphs holds, in bytes. */
typedef struct sd_mem {
    uint64_t weights; /* prepared at load: packed / quantized / reordered copies,
                       * owned float norms and biases */
    uint64_t mapped;  /* weights read in place from the file mappings */
    uint64_t acts;    /* activations, per-thread tiles and other scratch */
    uint64_t peak;    /* most of weights + mapped + acts since sd_rt_mem_mark */
} sd_mem;

typedef enum sd_mem_kind { SD_MEM_WEIGHTS = 0, SD_MEM_MAPPED, SD_MEM_ACTS } sd_mem_kind;

typedef struct sd_runtime_params {
    const char *cpu;           /* kernel variant name (cpu_features.h); NULL: best */
    pt_threadpool *threadpool; /* shared pool; NULL: a private one of n_threads */
    int n_threads;             /* private pool size; <= 0: one per core */
    sd_weight_policy policy;
} sd_runtime_params;

/* Per-thread buffer slots (sd_rt_thread_buf): each thread of the pool has
 * one buffer per slot, grown on demand and kept. */
enum { SD_TBUF_COLS = 0, /* conv: im2col tile [tile][k_pad] floats */
       SD_TBUF_QACT,     /* conv: pt_qact of that tile */
       SD_TBUF_ATTN,     /* attention: pt_attn_scratch_floats */
       SD_TBUF_COUNT };

/* Fields are read by the layers of sd_nn*.c and by graph code that runs
 * its own per-pixel tasks (sd_rt_run); only the sd_rt_* functions write
 * them. */
typedef struct sd_runtime {
    pt_cpu cpu;                 /* kernel variant of every pack and product */
    pt_threadpool *tp;          /* taken for a graph run (sd_rt_begin) */
    bool owns_tp;
    pt_pool *pool;              /* tp->pool */
    int n_threads;              /* pt_pool_threads(pool) */
    sd_weight_policy policy;
    /* the int8 kernels' per-thread scratch: [n_threads][mm_scratch_n]
     * bytes, sized for products of up to mm_cols columns (grown at load) */
    uint8_t *mm_scratch;
    size_t mm_scratch_n;
    int64_t mm_cols;
    /* shared buffers of one product: the input quantized (pt_qact) and the
     * input rows zero-padded to a padded matrix's columns */
    void *qa_buf;
    size_t qa_n;                /* bytes */
    float *pad_buf;
    size_t pad_n;               /* floats */
    /* GroupNorm statistics: [chunks][2][groups] doubles */
    double *gn_buf;
    size_t gn_n;                /* doubles */
    /* attention keys in attention.h's blocked layout, one head of one
     * sequence after another: [n_seq * heads][blocks * BK * head_dim] */
    float *kt_buf;
    size_t kt_n;                /* floats */
    /* per-thread slots: tbuf[slot] is [n_threads][tbuf_n[slot]] bytes */
    uint8_t *tbuf[SD_TBUF_COUNT];
    size_t tbuf_n[SD_TBUF_COUNT];
    sd_mem mem;
} sd_runtime;

pt_status sd_rt_new(const sd_runtime_params *p, sd_runtime **out, pt_error *err);
void sd_rt_free(sd_runtime *rt); /* NULL is a no-op */

/* Take / give back the pool for the duration of a graph run. */
void sd_rt_begin(sd_runtime *rt);
void sd_rt_end(sd_runtime *rt);

/* Memory accounting (see above). sd_rt_alloc / sd_rt_dealloc are malloc /
 * free that count n bytes as `kind`; sd_rt_count adds (n > 0) or removes
 * (n < 0) bytes held elsewhere (a packed matrix, a mapped tensor). */
void *sd_rt_alloc(sd_runtime *rt, size_t n, sd_mem_kind kind);
void sd_rt_dealloc(sd_runtime *rt, void *p, size_t n, sd_mem_kind kind);
void sd_rt_count(sd_runtime *rt, int64_t n, sd_mem_kind kind);
/* Start a stage: peak = what is held now. */
void sd_rt_mem_mark(sd_runtime *rt);
/* Hand the pages of freed graphs (a UNet, a text encoder) back to the
 * system now; see sd_runtime.c. */
void sd_rt_give_back(void);
sd_mem sd_rt_mem(const sd_runtime *rt);

/* Make sure the kernels' per-thread scratch covers products of `cols`
 * columns (the loaders call it for every matrix). */
pt_status sd_rt_reserve_cols(sd_runtime *rt, int64_t cols, pt_error *err);
/* Thread `thread`'s buffer of slot `slot`, after sd_rt_reserve_thread(rt,
 * slot, bytes) made every thread's at least `bytes` long (64-aligned). */
pt_status sd_rt_reserve_thread(sd_runtime *rt, int slot, size_t bytes, pt_error *err);
static inline void *sd_rt_thread_buf(const sd_runtime *rt, int slot, int thread) {
    return rt->tbuf[slot] + (size_t)thread * rt->tbuf_n[slot];
}

/* Run fn(ctx, task, n_tasks, thread) for task in [0, n_tasks) on the pool
 * (inline when the pool has one thread). Between sd_rt_begin and _end. */
void sd_rt_run(sd_runtime *rt, pt_pool_fn fn, void *ctx, int n_tasks);

/* ---- Linear ------------------------------------------------------------- */

/* y = x W^T + b over rows: torch's Linear(in, out), or a 1x1 Conv2d
 * (weight [out][in][1][1]: the same matrix). */
typedef struct sd_linear {
    pt_weight w;       /* [out x k_pad] (rows = out, cols = k_pad); packed when
                        * the kernels can take it */
    float *bias;       /* [out] owned, or NULL */
    int in, out;       /* torch's in_features, out_features */
    int k_pad;         /* stored columns: in, or in rounded up to 32 when the
                        * rows were padded (quantized at load) or were stored
                        * padded (SD_LAYOUT_CONV_OHWI_PAD); inputs are then
                        * zero-padded to it */
    void *own;         /* heap copy w.data points into (quantized, padded or
                        * reordered), or NULL: w.data is in the mapping */
    size_t own_n;      /* bytes of own */
} sd_linear;

/* Load prefix.weight ([out][in] or [out][in][1][1]) and prefix.bias ([out];
 * an error when need_bias and it is missing, else NULL when missing). */
pt_status sd_linear_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int in, int out,
                         bool need_bias, sd_linear *l, pt_error *err);
/* The same from tensors in hand (bias NULL: none), for weights that come
 * from no sd_weights (tests, derived weights); `name` is for messages. The
 * tensors' data must outlive l unless it was copied (policy, reorder). */
pt_status sd_linear_init(sd_runtime *rt, const sd_tensor *wt, const sd_tensor *bias,
                         const char *name, int in, int out, sd_linear *l, pt_error *err);
void sd_linear_free(sd_runtime *rt, sd_linear *l);

/* y[t] = W x[t] + b for t in [0, n): x [n][in], y [n][out] (y must not
 * overlap x). */
pt_status sd_linear_run(sd_runtime *rt, const sd_linear *l, const float *x, int64_t n, float *y,
                        pt_error *err);
/* Up to three products of one input (q, k, v): every l[i] has the same
 * `in` and k_pad; y[i] [n][l[i]->out]. */
pt_status sd_linear_run_n(sd_runtime *rt, const sd_linear *const *l, float *const *y, int n_l,
                          const float *x, int64_t n, pt_error *err);

/* ---- Conv2d ------------------------------------------------------------- */

/* k x k convolution, stride 1 or 2, zero padding `pad`, with or without bias. */
typedef struct sd_conv {
    sd_linear mm;      /* [c_out x k_pad], each row in (ky, kx, c_in) order,
                        * c_in fastest, zero-padded from k*k*c_in to k_pad;
                        * mm.in = k*k*c_in (for k == 1: a plain 1x1 matrix) */
    int c_in, c_out, k, stride, pad;
} sd_conv;

/* Load prefix.weight (torch [c_out][c_in][k][k], reordered at load; or
 * SD_LAYOUT_CONV_OHWI_PAD, taken as it is) and prefix.bias ([c_out]) when
 * present: a conv without one (TAESD's) has mm.bias NULL. */
pt_status sd_conv_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c_in,
                       int c_out, int k, int stride, int pad, sd_conv *c, pt_error *err);
/* The same from tensors in hand (as sd_linear_init). */
pt_status sd_conv_init(sd_runtime *rt, const sd_tensor *wt, const sd_tensor *bias,
                       const char *name, int c_in, int c_out, int k, int stride, int pad,
                       sd_conv *c, pt_error *err);
void sd_conv_free(sd_runtime *rt, sd_conv *c);

/* y = conv(x) (+ add): x n images [n][h][w][c_in]; y, add
 * [n][h_out][w_out][c_out] (pt_conv_out_size). add may be NULL; y must
 * not overlap x or add. */
pt_status sd_conv_run(sd_runtime *rt, const sd_conv *c, const float *x, int n, int h, int w,
                      float *y, const float *add, pt_error *err);

/* ---- norms and element-wise ops ------------------------------------------ */

/* GroupNorm (groups > 0) or LayerNorm (groups == 0) over c channels. */
typedef struct sd_norm {
    float *gamma, *beta; /* [c] owned */
    int c, groups;
    float eps;
} sd_norm;

/* prefix.weight, prefix.bias ([c] each). */
pt_status sd_norm_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c, int groups,
                       float eps, sd_norm *nm, pt_error *err);
void sd_norm_free(sd_runtime *rt, sd_norm *nm);

/* GroupNorm of each of n images of n_pix pixels (statistics per image and
 * group), then SiLU when silu: y, x [n][n_pix][c]; y may alias x. */
pt_status sd_groupnorm_run(sd_runtime *rt, const sd_norm *nm, float *y, const float *x, int n,
                           int64_t n_pix, bool silu, pt_error *err);
/* LayerNorm of n_rows rows of c values; y may alias x. */
void sd_layernorm_run(sd_runtime *rt, const sd_norm *nm, float *y, const float *x, int64_t n_rows);

typedef enum sd_eltwise { SD_SILU = 0, SD_GELU, SD_QUICK_GELU } sd_eltwise;
/* x[0..n) = f(x) in place. */
void sd_act_run(sd_runtime *rt, sd_eltwise f, float *x, int64_t n);
/* y[0..n) += x[0..n). */
void sd_add_run(sd_runtime *rt, float *y, const float *x, int64_t n);
/* out [n_rows][inner] = a * gelu(b) of x [n_rows][2*inner] = [a | b]. */
void sd_geglu_run(sd_runtime *rt, float *out, const float *x, int64_t n_rows, int inner);
/* Nearest 2x up-sampling of n images: x [n][h][w][c] -> y [n][2h][2w][c]. */
void sd_upsample_run(sd_runtime *rt, float *y, const float *x, int n, int h, int w, int c);
/* Channel concatenation: y [n_pix][ca + cb] = [a | b], a [n_pix][ca],
 * b [n_pix][cb]. */
void sd_concat_run(sd_runtime *rt, float *y, const float *a, int ca, const float *b, int cb,
                   int64_t n_pix);

/* ---- multi-head attention ------------------------------------------------ */

/* For each of n_seq sequences and each of `heads` heads (head_dim values
 * each, head h at columns h*head_dim of a row):
 *   out[s][i][h] = softmax_j(q[s][i][h] . k[s][j][h] * scale) v[s][j][h]
 * with q, out [n_seq][n_q][heads*head_dim], k, v [n_seq][n_kv][heads*
 * head_dim], scale = 1/sqrt(head_dim); over all j (causal false) or
 * j <= i (causal: CLIP; n_q == n_kv). Computed by pt_attn_full (running
 * softmax, no n_q x n_kv buffer); the causal case runs each query against
 * its prefix of keys, so both are the same kernel and agree across CPU
 * variants as image_ops.h states. out must not overlap q, k or v. */
pt_status sd_mha_run(sd_runtime *rt, float *out, const float *q, const float *k, const float *v,
                     int n_seq, int n_q, int n_kv, int heads, int head_dim, bool causal,
                     pt_error *err);

/* diffusers' Attention (to_q, to_k, to_v, to_out.0): self-attention
 * (ctx_dim == dim) or cross-attention to ctx_dim-wide context rows. */
typedef struct sd_attn {
    sd_linear q, k, v, out;
    int dim, ctx_dim, heads, head_dim;
} sd_attn;

/* prefix.to_q, .to_k, .to_v (biases optional), prefix.to_out.0 (bias). */
pt_status sd_attn_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int dim,
                       int ctx_dim, int heads, sd_attn *a, pt_error *err);
void sd_attn_free(sd_runtime *rt, sd_attn *a);

/* Floats of scratch sd_attn_run needs for n_seq sequences of n_q queries
 * and n_kv context rows. */
size_t sd_attn_scratch_floats(const sd_attn *a, int n_seq, int64_t n_q, int64_t n_kv);
/* y [n_seq][n_q][dim] = to_out(attention(to_q(x), to_k(ctx), to_v(ctx)))
 * with x [n_seq][n_q][dim] and ctx [n_seq][n_kv][ctx_dim] (ctx == x for
 * self-attention). y must not overlap x or ctx. */
pt_status sd_attn_run(sd_runtime *rt, const sd_attn *a, float *y, const float *x, int n_seq,
                      int64_t n_q, const float *ctx, int64_t n_kv, float *scratch, pt_error *err);

/* ---- ResNet block (diffusers ResnetBlock2D) ------------------------------ */

/* h = conv1(silu(norm1(x))) (+ time_emb_proj(silu(temb)) per channel);
 * h = conv2(silu(norm2(h))); y = shortcut(x) + h, where shortcut is a 1x1
 * conv when c_in != c_out, else the identity. (Dropout is inference's
 * identity; output_scale_factor 1.) */
typedef struct sd_resnet {
    sd_norm norm1, norm2;
    sd_conv conv1, conv2;
    sd_linear temb;        /* time_emb_proj [c_out x temb_dim], when temb_dim */
    sd_conv shortcut;      /* conv_shortcut, when has_shortcut */
    bool has_shortcut;
    int c_in, c_out, temb_dim;
} sd_resnet;

/* temb_dim 0: no time embedding (VAE). eps: GroupNorm epsilon (UNet 1e-5,
 * VAE 1e-6). */
pt_status sd_resnet_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c_in,
                         int c_out, int temb_dim, int groups, float eps, sd_resnet *r,
                         pt_error *err);
void sd_resnet_free(sd_runtime *rt, sd_resnet *r);

/* Floats of scratch for n images of n_pix pixels. */
size_t sd_resnet_scratch_floats(const sd_resnet *r, int n, int64_t n_pix);
/* y [n][h][w][c_out] from x [n][h][w][c_in]; temb_silu [n][temb_dim] is
 * silu(temb) (shared by every block of a step), NULL when temb_dim is 0.
 * y must not overlap x. */
pt_status sd_resnet_run(sd_runtime *rt, const sd_resnet *r, float *y, const float *x, int n, int h,
                        int w, const float *temb_silu, float *scratch, pt_error *err);

/* ---- spatial transformer (diffusers Transformer2DModel) ----------------- */

/* BasicTransformerBlock: x += attn1(norm1(x)); x += attn2(norm2(x), ctx);
 * x += ff(norm3(x)) with ff = Linear(inner -> dim)(GEGLU(Linear(dim ->
 * 2*inner))), inner = 4 * dim. LayerNorm eps 1e-5. */
typedef struct sd_tblock {
    sd_norm norm1, norm2, norm3;
    sd_attn attn1, attn2;
    sd_linear ff_in;       /* ff.net.0.proj [2*inner x dim] */
    sd_linear ff_out;      /* ff.net.2 [dim x inner] */
    int inner;
} sd_tblock;

/* GroupNorm (eps 1e-6) -> proj_in -> blocks -> proj_out -> + x. proj_in /
 * proj_out are Linear (use_linear_projection) or 1x1 convs: the same
 * product in HWC. */
typedef struct sd_transformer {
    sd_norm norm;
    sd_linear proj_in, proj_out;
    sd_tblock *blocks;     /* [depth] */
    int depth, c, heads, ctx_dim;
} sd_transformer;

pt_status sd_transformer_load(sd_runtime *rt, const sd_weights *w, const char *prefix, int c,
                              int heads, int depth, int ctx_dim, int groups, sd_transformer *t,
                              pt_error *err);
void sd_transformer_free(sd_runtime *rt, sd_transformer *t);

/* Floats of scratch for n images of n_pix pixels and n_ctx context rows. */
size_t sd_transformer_scratch_floats(const sd_transformer *t, int n, int64_t n_pix, int64_t n_ctx);
/* x [n][n_pix][c] in place (x = x + transformer(x)); ctx [n][n_ctx][ctx_dim]. */
pt_status sd_transformer_run(sd_runtime *rt, const sd_transformer *t, float *x, int n,
                             int64_t n_pix, const float *ctx, int64_t n_ctx, float *scratch,
                             pt_error *err);

#endif
