/*
 * vae.h — the AutoencoderKL of Stable Diffusion (diffusers'
 * models/autoencoders/autoencoder_kl.py with vae.py's Decoder / Encoder):
 * the decoder from latents to RGB, the encoder from RGB to the latent
 * distribution's mean, and tiled decoding for large images. Internal to
 * the engine; built from the layers of sd_nn.h.
 *
 * Decoder (channels ch[] = block_out_channels, n levels, L = layers_per_block):
 *   post_quant_conv   1x1, latent_channels -> latent_channels
 *   conv_in           3x3, latent_channels -> ch[n-1]
 *   mid_block         ResNet, attention, ResNet at ch[n-1]
 *   up_blocks[i]      i = 0 .. n-1 at c = ch[n-1-i]: L+1 ResNets (the first
 *                     from the previous block's channels), then, except the
 *                     last, nearest 2x up-sampling and a 3x3 conv c -> c
 *   conv_norm_out     GroupNorm + SiLU, then conv_out 3x3 ch[0] -> 3
 * so a latent of h x w gives an image of 2^(n-1) h x 2^(n-1) w (8x for
 * SD's 4 levels).
 * Encoder (mirror):
 *   conv_in           3x3, 3 -> ch[0]
 *   down_blocks[i]    L ResNets (the first from ch[i-1]) at ch[i], then,
 *                     except the last, a stride-2 3x3 conv (padding 0) after
 *                     padding the image by one zero row at the bottom and
 *                     one zero column at the right (diffusers' Downsample2D
 *                     with padding 0)
 *   mid_block, conv_norm_out (GroupNorm + SiLU), conv_out 3x3 -> 2 x latent
 *   quant_conv        1x1, 2 x latent -> 2 x latent: [mean | logvar]
 * and sd_vae_encode returns the mean (DiagonalGaussianDistribution.mode()).
 * Every GroupNorm has norm_num_groups groups and eps 1e-6. The mid-block
 * attention is diffusers' Attention with one head of dim c over the
 * pixels: y = x + to_out(softmax(q k^T / sqrt(c)) v) with q, k, v =
 * to_q / to_k / to_v of GroupNorm(x) (rescale_output_factor 1).
 *
 * Layout: latents and images are float32 HWC (pixel-major, channels
 * fastest), one image. The decoder takes the latent as diffusers'
 * vae.decode does: the pipeline divides the sampler's latent by
 * scaling_factor first. The image comes out in about [-1, 1], not clamped
 * (the pipeline maps it to RGB8 as (x + 1) / 2, clamped). The encoder
 * takes an image in [-1, 1] and returns the unscaled mean (multiply by
 * scaling_factor to get the sampler's latent).
 *
 * Memory: activations are allocated through the runtime (sd_rt_alloc,
 * counted as SD_MEM_ACTS) and live in two ping-pong buffers plus one
 * scratch buffer, each grown (freed, then allocated) only when a level
 * needs more, so the peak is about three activations of the largest level
 * plus the ResNet's scratch: for SD's decoder at 512x512 the up block at
 * 512x512 reads 256 channels (256 MiB) and writes 128. The runtime's
 * sd_mem.peak after sd_rt_mem_mark reports it. Tiled decoding
 * (vae_tiles.h) bounds it by the tile instead.
 */
#ifndef PETREL_VAE_H
#define PETREL_VAE_H
#include "petrel.h"
#include "sd_nn.h"
#include "sd_weights.h"

#include <stdbool.h>

typedef struct sd_vae sd_vae;

/* Tiled decoding: when tile > 0 and the latent is larger than tile in
 * either direction, decode tiles of tile x tile latent pixels that
 * overlap by overlap (0 <= 2 overlap <= tile) and blend them
 * (vae_tiles.h, which says how far that may differ from one decode).
 * tile 0: always decode whole. */
typedef struct sd_vae_tiling {
    int tile;
    int overlap;
} sd_vae_tiling;

/* Load the decoder ("vae.decoder.*", "vae.post_quant_conv.*") and, when
 * encoder, the encoder ("vae.encoder.*", "vae.quant_conv.*") with the
 * hyperparameters of sd_weights_config(w)->vae. A missing tensor or a
 * wrong shape is a PT_ERR_FORMAT naming it. */
pt_status sd_vae_load(sd_runtime *rt, const sd_weights *w, bool encoder, sd_vae **out,
                      pt_error *err);
void sd_vae_free(sd_runtime *rt, sd_vae *v); /* NULL is a no-op */

/* The factor from latent to image pixels (2^(levels-1): 8 for SD). */
int sd_vae_scale(const sd_vae *v);

/* latent [h][w][latent_channels] -> rgb [s h][s w][3] with s =
 * sd_vae_scale(v); tiling NULL or tile 0: whole. Takes the runtime's pool
 * for the run (sd_rt_begin / sd_rt_end). */
pt_status sd_vae_decode(sd_runtime *rt, const sd_vae *v, const float *latent, int h, int w,
                        float *rgb, const sd_vae_tiling *tiling, pt_error *err);
/* The same on an OpenCL device (vae_opencl.c, sd_opencl.h): each latent
 * (or tile) goes up, the decoder runs on device buffers, its pixels come
 * back. Results differ from sd_vae_decode by float rounding only. */
typedef struct sd_ocl sd_ocl;
pt_status sd_vae_decode_ocl(sd_ocl *d, const sd_vae *v, const float *latent, int h, int w,
                            float *rgb, const sd_vae_tiling *tiling, pt_error *err);

/* rgb [H][W][3] in [-1, 1] -> mean [H/s][W/s][latent_channels]; H and W
 * must be multiples of s. PT_ERR_ARG when the VAE was loaded without its
 * encoder. */
pt_status sd_vae_encode(sd_runtime *rt, const sd_vae *v, const float *rgb, int H, int W,
                        float *mean, pt_error *err);

#endif
