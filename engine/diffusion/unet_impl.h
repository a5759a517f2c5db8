/*
 * unet_impl.h — the UNet's layers and buffers (struct sd_unet), shared by
 * its CPU forward (unet.c) and its OpenCL forward (unet_opencl.c).
 * Internal to them.
 */
#ifndef PETREL_UNET_IMPL_H
#define PETREL_UNET_IMPL_H

#include "unet.h"

#include <stdbool.h>

#define UNET_MAX_LPB 4 /* layers_per_block supported (SD: 2) */

/* A ResNet, and the transformer after it when has_attn, at resolution
 * level `level` (h >> level by w >> level pixels). */
typedef struct unet_stage {
    sd_resnet res;
    sd_transformer attn;
    bool has_attn;
    int level;
} unet_stage;

struct sd_unet {
    sd_unet_config cfg;
    sd_runtime *rt;              /* the runtime the weights are counted in */
    sd_linear t1, t2;            /* time_embedding.linear_1 [T x ch0], linear_2 [T x T] */
    sd_conv conv_in;             /* in_channels -> ch0 */
    unet_stage down[SD_MAX_LEVELS][UNET_MAX_LPB];
    sd_conv downsample[SD_MAX_LEVELS];   /* all but the last level */
    unet_stage mid0;             /* resnets.0 + attentions.0 */
    unet_stage mid1;             /* resnets.1 */
    unet_stage up[SD_MAX_LEVELS][UNET_MAX_LPB + 1]; /* up[i]: up_blocks.i (level n-1-i) */
    sd_conv upsample[SD_MAX_LEVELS];     /* up_blocks.i.upsamplers.0.conv, i < n-1 */
    sd_norm norm_out;
    sd_conv conv_out;            /* ch0 -> out_channels */
    /* Activation buffers for (bn, bh, bw, bctx), one allocation (buf,
     * buf_n floats) cut into:
     *   skips  every pushed activation back to back (conv_in's output,
     *          each down stage's, each down-sampler's)
     *   a, b   ping-pong activations [n][pixels][channels], the largest
     *   cat    a concatenation or an up-sampled activation, the largest
     *   work   the largest scratch of a ResNet or transformer
     *   temb   [n][T] x 2 and the sinusoid [n][ch0] */
    int bn, bh, bw, bctx;
    float *buf;
    size_t buf_n;
};

/* diffusers' get_timestep_embedding(t, dim, flip_sin_to_cos, shift) for
 * each of n rows e [n][dim], in float32 as torch computes it. */
void sd_timestep_embedding(float *e, int n, int dim, float t, bool flip, float shift);

/* The checks both forwards make on their arguments: n latents of h x w
 * (multiples of the down-sampling factor, at most 4096), a finite
 * timestep, at least one context row. */
pt_status sd_unet_check_args(const sd_unet *u, int n, int h, int w, float t, const float *ctx,
                             int n_ctx, pt_error *err);

#endif
