/*
 * image_pixels.h — the pixel-level ends of the image pipeline: the
 * decoder's float RGB to RGB8 exactly as diffusers' postprocessing does,
 * the cheap latent preview, and the latent's NCHW <-> HWC transposes.
 * Internal to the engine; plain loops, no kernels (all are O(pixels)).
 */
#ifndef PETREL_IMAGE_PIXELS_H
#define PETREL_IMAGE_PIXELS_H
#include <stddef.h>
#include <stdint.h>

/* Decoder output rgb, HWC [h][w][3] floats in about [-1, 1], to RGB8 rows
 * of `stride` bytes as diffusers' VaeImageProcessor: in float32,
 * v = clamp(x * 0.5 + 0.5, 0, 1), then round(v * 255) with ties to even
 * (numpy's .round()), then uint8. NaN becomes 0. */
void sd_rgb8_from_float(uint8_t *out, size_t stride, const float *rgb, int w, int h);

/* The latent-to-RGB approximation of ComfyUI's SD1.5 latent format
 * (rgb = sum_c latent[c] * SD_PREVIEW_FACTORS[c], then (v + 1) / 2
 * clamped to [0, 1] and scaled to 0..255), over the latent x, NCHW
 * [c][h][w] with c >= 4 (channels past 4 are ignored), into RGB8 rows of
 * `stride` bytes (w x h pixels). Good enough to watch a picture form. */
void sd_latent_preview(uint8_t *out, size_t stride, const float *x, int c, int h, int w);

/* dst HWC [h][w][c] from src NCHW [c][h][w], and back. */
void sd_nchw_to_hwc(float *dst, const float *src, int c, int h, int w);
void sd_hwc_to_nchw(float *dst, const float *src, int c, int h, int w);

#endif
