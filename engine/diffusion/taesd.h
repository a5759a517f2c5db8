/*
 * taesd.h — TAESD, the tiny autoencoder (diffusers' AutoencoderTiny:
 * models/autoencoders/autoencoder_tiny.py with vae.py's DecoderTiny /
 * EncoderTiny): a cheap decoder of latents to RGB (and an encoder), of
 * plain 3x3 convolutions and ReLUs. Internal to the engine; built from
 * the layers of sd_nn.h.
 *
 * Decoder ("taesd.decoder.layers.N", c = channels, B = blocks_per_stage,
 * U = n_upsamples; indices N in order):
 *   input clamp       x = tanh(x / 3) * 3           (no parameters)
 *   conv 3x3 lc -> c, ReLU
 *   stages s = 0 .. U: B blocks (1 in the last stage), then, except in the
 *                     last stage, nearest 2x up-sampling and a 3x3 conv
 *                     c -> c without bias; the last stage ends with a 3x3
 *                     conv c -> 3 with bias
 *   output            x * 2 - 1
 * where a block (AutoencoderTinyBlock, "layers.N.conv.{0,2,4}") is
 *   y = ReLU(conv3(ReLU(conv2(ReLU(conv1(x))))) + x)
 * (its skip is the identity: in and out channels are equal). The real
 * TAESD: c 64, B 3, U 3, giving layers 0 .. 18 and a scale of 8.
 * Encoder ("taesd.encoder.layers.N"), present when its tensors are:
 *   input x = (x + 1) / 2, conv 3x3 3 -> c (bias), 1 block, then U times
 *   a stride-2 3x3 conv (padding 1, no bias) and B blocks, and a 3x3
 *   conv c -> lc (bias).
 *
 * Scaling: the decoder takes the latent as AutoencoderTiny.decode does,
 * which is the sampler's latent as it is: AutoencoderTiny's
 * scaling_factor is 1.0, so the pipeline must NOT divide by the VAE's
 * 0.18215 before TAESD (it does before sd_vae_decode). The output is RGB
 * in about [-1, 1] (diffusers' convention, not clamped): the pipeline
 * maps it to RGB8 as (x + 1) / 2 clamped to [0, 1], as for the VAE. The
 * encoder's output is in the same latent space (the sampler's).
 *
 * Layout and memory: float32 HWC, one image; activations in the
 * ping-pong buffers of vae_acts.h (no scratch needed: each block keeps
 * its input in a third buffer), counted by the runtime.
 */
#ifndef PETREL_TAESD_H
#define PETREL_TAESD_H
#include "petrel.h"
#include "sd_nn.h"
#include "sd_weights.h"
#include "vae.h"

typedef struct sd_taesd sd_taesd;

/* Load the decoder, and the encoder when encoder and its tensors exist
 * (sd_taesd_has_encoder tells), with sd_weights_config(w)->taesd. A
 * missing decoder tensor or a wrong shape is a PT_ERR_FORMAT naming it. */
pt_status sd_taesd_load(sd_runtime *rt, const sd_weights *w, bool encoder, sd_taesd **out,
                        pt_error *err);
void sd_taesd_free(sd_runtime *rt, sd_taesd *t); /* NULL is a no-op */
bool sd_taesd_has_encoder(const sd_taesd *t);
int sd_taesd_scale(const sd_taesd *t); /* 2^n_upsamples */

/* latent [h][w][lc] -> rgb [s h][s w][3] (s = sd_taesd_scale); tiling as
 * for sd_vae_decode (TAESD has no GroupNorm or attention, so only the
 * zero padding at tile borders differs from a whole decode). */
pt_status sd_taesd_decode(sd_runtime *rt, const sd_taesd *t, const float *latent, int h, int w,
                          float *rgb, const sd_vae_tiling *tiling, pt_error *err);
/* rgb [H][W][3] in [-1, 1] (H, W multiples of s) -> latent [H/s][W/s][lc]. */
pt_status sd_taesd_encode(sd_runtime *rt, const sd_taesd *t, const float *rgb, int H, int W,
                          float *latent, pt_error *err);

#endif
