/*
 * pipeline_decode.c — the decode stage: the sampler's latent to RGB8
 * through the VAE decoder (prepared for this stage only, then freed and
 * its pages given back; on the OpenCL device when the model has one) or
 * the TAESD decoder (on the CPU), then diffusers' 8-bit conversion
 * (image_pixels.h).
 */
#include <stdlib.h>
#include <string.h>

#include "image_pixels.h"
#include "pipeline_internal.h"
#include "status.h"
#include "taesd.h"
#include "vae.h"

/* Latents larger than this (in latent pixels, either side) are decoded
 * in tiles of SD_VAE_TILE with SD_VAE_OVERLAP (vae_tiles.h): a 768x768
 * image decodes whole, larger ones in bounded memory. */
#define SD_VAE_TILE_ABOVE 96
#define SD_VAE_TILE 64
#define SD_VAE_OVERLAP 16

pt_status sd_decode(pt_image_model *m, const pt_image_params *p, const float *x, pt_image *out,
                    pt_error *err) {
    const int c = m->cfg.vae.latent_channels, h = p->height / 8, w = p->width / 8;
    const size_t n = (size_t)c * (size_t)h * (size_t)w;
    const size_t n_rgb = (size_t)p->width * (size_t)p->height * 3;
    /* latent HWC [h][w][c] as the decoder takes it; rgb HWC [8h][8w][3] */
    float *lat = malloc(n * sizeof *lat), *rgb = malloc(n_rgb * sizeof *rgb);
    uint8_t *pix = malloc(n_rgb);
    /* counted with the decoder's activations: at 2048x2048 the float
     * image alone is 48 MiB */
    const int64_t own = (int64_t)(n * sizeof *lat + n_rgb * sizeof *rgb + n_rgb);
    sd_rt_count(m->rt, own, SD_MEM_ACTS);
    pt_status st = PT_OK;
    if (!lat || !rgb || !pix) {
        st = pt_fail(err, PT_ERR_NOMEM, "out of memory for a %dx%d image", p->width, p->height);
        goto done;
    }
    sd_nchw_to_hwc(lat, x, c, h, w);
    const sd_vae_tiling tiling = {
        .tile = h > SD_VAE_TILE_ABOVE || w > SD_VAE_TILE_ABOVE ? SD_VAE_TILE : 0,
        .overlap = SD_VAE_OVERLAP,
    };
    if (p->use_taesd) {
        /* AutoencoderTiny takes the sampler's latent as it is (its
         * scaling_factor is 1) */
        sd_taesd *t = NULL;
        st = sd_taesd_load(m->rt, m->w, false, &t, err);
        if (st == PT_OK) st = sd_taesd_decode(m->rt, t, lat, h, w, rgb, &tiling, err);
        sd_taesd_free(m->rt, t);
        sd_weights_release(m->w, "taesd.");
    } else {
        /* diffusers: latents = 1 / scaling_factor * latents, in float32 */
        const float inv = (float)(1.0 / (double)m->cfg.vae.scaling_factor);
        for (size_t i = 0; i < n; i++) lat[i] = inv * lat[i];
        sd_vae *vae = NULL;
        st = sd_vae_load(m->rt, m->w, false, &vae, err);
        if (st == PT_OK && m->dev) st = sd_vae_decode_ocl(m->dev, vae, lat, h, w, rgb, &tiling, err);
        else if (st == PT_OK) st = sd_vae_decode(m->rt, vae, lat, h, w, rgb, &tiling, err);
        sd_ocl_forget_weights(m->dev, SD_OCL_W_VAE); /* before its layers go */
        sd_ocl_release_buffers(m->dev);
        sd_vae_free(m->rt, vae);
        sd_weights_release(m->w, "vae.");
    }
    if (st != PT_OK) goto done;
    sd_rgb8_from_float(pix, (size_t)p->width * 3, rgb, p->width, p->height);
    *out = (pt_image){.width = p->width, .height = p->height, .stride = (size_t)p->width * 3,
                      .pixels = pix};
    pix = NULL;
done:
    free(lat);
    free(rgb);
    free(pix);
    sd_rt_count(m->rt, -own, SD_MEM_ACTS); /* the RGB8 pixels now belong to the caller */
    return st;
}
