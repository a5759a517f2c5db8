/*
 * vae_tiles.h — tiled decoding of a latent: decode overlapping latent
 * tiles one at a time and blend their overlaps linearly, so the memory of
 * a decode is bounded by the tile, not by the image. Works for any decoder
 * that maps a latent of h x w pixels to an image of (scale h) x (scale w)
 * pixels (the VAE and TAESD decoders: scale 8). Internal to the engine.
 *
 * Geometry, per axis (a latent of n pixels, tiles of t, overlap o, with
 * 0 <= o <= t / 2): one tile [0, n) when n <= t; otherwise stride
 * s = t - o and k = ceil((n - t) / s) + 1 tiles starting at
 * min(i * s, n - t) (the last one moved back to end at n), each t pixels.
 * Neighbouring tiles overlap by at least o (the last pair by more when
 * the last tile was moved back, and then tile k - 3 may reach into tile
 * k - 1 too).
 *
 * Blending, per axis in output pixels: tile i's weight is the product of
 * a ramp rising linearly from ~0 to 1 across its overlap with tile i - 1
 * and one falling from 1 to ~0 across its overlap with tile i + 1 (at
 * pixel j of an overlap of m pixels: (j + 0.5) / m rising, 1 - that
 * falling; so two neighbours' weights sum to 1 where only they meet), 1
 * elsewhere (also at the image border) and 0 outside the tile. A tile's
 * 2-D weight is the product of its two axis weights; the output is the
 * weighted sum divided by the sum of the weights (positive wherever a
 * tile lies), which is separable (the tiles form a grid) and so kept as
 * two 1-D arrays.
 *
 * How far the result may be from an untiled decode: not boundable in
 * closed form. Away from overlaps a tile differs from the whole image
 * because its convolutions see zero padding at the tile border instead of
 * the neighbouring pixels (the VAE decoder's receptive field covers dozens
 * of latent pixels), and, for the VAE, because its GroupNorm statistics
 * and its mid-block attention are taken over the tile only (TAESD has
 * neither). Larger tiles and overlaps bring it closer; tests/test_sd_vae.c
 * measures the PSNR on the fixture model and states the bound it demands.
 */
#ifndef PETREL_VAE_TILES_H
#define PETREL_VAE_TILES_H
#include "petrel.h"
#include <stdint.h>

/* Decode one latent tile: lat is HWC h x w x c_lat, out is HWC
 * (scale h) x (scale w) x c_out. */
typedef pt_status (*sd_tile_decode_fn)(void *ctx, const float *lat, int h, int w, float *out,
                                       pt_error *err);

/* Tiles along an axis of n latent pixels: fills start[0..k) (k at most
 * max_tiles) and returns k, or 0 when t, o are invalid (t < 1, o < 0,
 * 2 o > t) or more than max_tiles tiles are needed. The tile length is
 * min(n, t). */
int sd_tiles_plan(int n, int t, int o, int *start, int max_tiles);

/* Bytes sd_decode_tiled allocates itself for these arguments (one tile's
 * latent and output, the axis weights and the plan), not counting what fn
 * allocates: the caller's memory accounting adds it around the call. */
uint64_t sd_decode_tiled_bytes(int h, int w, int c_lat, int scale, int c_out, int tile);

/* The checks every decoder (VAE, TAESD; CPU or OpenCL) makes on its
 * arguments: each latent side in 1 .. max_side, 0 <= 2 overlap <= tile
 * (tile 0: no tiling). `what` names the decoder in the message. */
pt_status sd_decode_check_args(const char *what, int h, int w, int max_side, int tile, int overlap,
                               pt_error *err);

/* Decode latent lat (HWC h x w x c_lat) into out (HWC scale*h x scale*w x
 * c_out) tile by tile with tiles of tile x tile latent pixels overlapping
 * by overlap (see above). Allocates one tile's latent and output and the
 * axis weights; *peak_bytes (may be NULL) gets the most bytes this
 * function held at once (sd_decode_tiled_bytes). */
pt_status sd_decode_tiled(sd_tile_decode_fn fn, void *ctx, const float *lat, int h, int w,
                          int c_lat, int scale, int c_out, int tile, int overlap, float *out,
                          uint64_t *peak_bytes, pt_error *err);

#endif
