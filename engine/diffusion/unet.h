/*
 * unet.h — UNet2DConditionModel of SD 1.x / 2.x (diffusers) on sd_nn.h's
 * layers. Internal to the engine.
 *
 * Forward (n latents, e.g. cond and uncond in one pass):
 *   temb = linear_2(silu(linear_1(timestep_embedding(t))))     [n][T]
 *     timestep_embedding as diffusers' get_timestep_embedding
 *     (channels[0] values, flip_sin_to_cos, freq_shift, max period 1e4)
 *   h = conv_in(x); skips = [h]
 *   down level i: layers_per_block x (ResNet(temb), transformer when
 *     cross_attn[i]), each output pushed to skips; then (not the last
 *     level) a 3x3 stride-2 conv, pushed too
 *   mid: ResNet, transformer, ResNet
 *   up level i (reversed): layers_per_block + 1 x (concat [h | skips.pop()]
 *     along channels, ResNet, transformer when the mirrored level has
 *     one); then (not the last) nearest 2x up-sampling and a 3x3 conv
 *   out = conv_out(silu(conv_norm_out(h)))
 * ResNets' GroupNorms use norm_eps, the transformers' 1e-6 (diffusers).
 * Activations are HWC: x, out [n][h][w][in/out_channels]; h, w multiples
 * of 2^(n_levels - 1).
 */
#ifndef PETREL_UNET_H
#define PETREL_UNET_H

#include "sd_config.h"
#include "sd_nn.h"
#include "sd_weights.h"

typedef struct sd_unet sd_unet;

/* Load the "unet." tensors of w for cfg. Weights follow rt's policy. */
pt_status sd_unet_load(const sd_weights *w, const sd_unet_config *cfg, sd_runtime *rt,
                       sd_unet **out, pt_error *err);
/* out [n][h][w][out_channels] = the model's prediction (epsilon or v) for
 * latents x [n][h][w][in_channels] at timestep t, conditioned on ctx
 * [n][n_ctx][cross_dim]. The activation buffers are sized on the first
 * run of an (n, h, w) and reused by later runs of it (a new size
 * reallocates them); sd_unet_release_buffers gives them back. Takes rt's
 * pool for the run. out must not overlap x. */
pt_status sd_unet_run(sd_unet *u, sd_runtime *rt, const float *x, int n, int h, int w, float t,
                      const float *ctx, int n_ctx, float *out, pt_error *err);
void sd_unet_release_buffers(sd_unet *u);
/* The same pass on an OpenCL device (unet_opencl.c, sd_opencl.h): x, ctx
 * uploaded, every layer run on device buffers, out read back. Results
 * differ from sd_unet_run by float rounding only (sd_opencl.h). */
typedef struct sd_ocl sd_ocl;
pt_status sd_unet_run_ocl(sd_unet *u, sd_ocl *d, const float *x, int n, int h, int w, float t,
                          const float *ctx, int n_ctx, float *out, pt_error *err);
/* Frees weights and buffers (the runtime it was loaded with must still
 * exist). NULL is a no-op. */
void sd_unet_free(sd_unet *u);

#endif
