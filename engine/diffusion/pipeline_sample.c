/*
 * pipeline_sample.c — the sampling stage: the initial latent, then the
 * sampler loop as diffusers' StableDiffusionPipeline runs it:
 *
 *   x = noise * init_noise_sigma
 *   for each step i:
 *       in  = scale_model_input(x, i)                  (both rows alike)
 *       out = unet([in, in], t_i, [uncond, cond])      (one pass, n = 2)
 *       eps = out_u + cfg * (out_c - out_u)            (n = 1: eps = out)
 *       x   = step(eps, x, noise_i)                    (noise: ancestral)
 *
 * Guidance runs only when cfg > 1, as diffusers' do_classifier_free_
 * guidance: at cfg <= 1 the UNet sees the prompt alone (half the work).
 *
 * Noise. With a seed, the initial latent is the seeded generator's
 * SD_RNG_STREAM_LATENT and step i's ancestral noise its
 * SD_RNG_STREAM_STEP(i) (sd_rng.h), so a sampler that draws noise does
 * not change the initial latent of the same seed, and every sampler's
 * step i sees the same noise. The caller's init_latent and noise_fn
 * replace them (tests replaying a diffusers run).
 */
#include <stdlib.h>
#include <string.h>

#include "image_pixels.h"
#include "pipeline_internal.h"
#include "scheduler.h"
#include "sd_rng.h"
#include "status.h"

/* The buffers of the loop; n = c * h * w latent values. */
typedef struct sample_bufs {
    float *in;      /* UNet input, HWC [n_rows][h][w][c] (rows equal) */
    float *out;     /* UNet output, HWC [n_rows][h][w][c] */
    float *eps;     /* guided model output, NCHW [c][h][w] */
    float *tmp;     /* NCHW [c][h][w]: the scaled input, then a row's output */
    float *noise;   /* NCHW [c][h][w] */
    uint8_t *preview; /* RGB8 [h][w][3] */
} sample_bufs;

static void bufs_free(sample_bufs *b) {
    free(b->in);
    free(b->out);
    free(b->eps);
    free(b->tmp);
    free(b->noise);
    free(b->preview);
}

static sd_sampler sampler_kind(pt_image_sampler s) {
    switch (s) {
    case PT_IMAGE_EULER_A: return SD_SAMPLER_EULER_A;
    case PT_IMAGE_DPMPP_2M: return SD_SAMPLER_DPMPP_2M;
    case PT_IMAGE_DDIM: return SD_SAMPLER_DDIM;
    case PT_IMAGE_LCM: return SD_SAMPLER_LCM;
    default: return SD_SAMPLER_EULER;
    }
}

/* One UNet pass at step i: eps (NCHW) from x (NCHW). */
static pt_status model_eps(pt_image_model *m, const pt_image_params *p, sd_sched *s, int i,
                           const float *ctx, int n_rows, const float *x, sample_bufs *b, int c,
                           int h, int w, pt_error *err) {
    const size_t n = (size_t)c * (size_t)h * (size_t)w;
    sd_sched_scale_input(s, i, x, b->tmp, n);
    sd_nchw_to_hwc(b->in, b->tmp, c, h, w);
    for (int r = 1; r < n_rows; r++) memcpy(b->in + (size_t)r * n, b->in, n * sizeof *b->in);
    const float t = sd_sched_timestep(s, i);
    pt_status st = m->dev ? sd_unet_run_ocl(m->unet, m->dev, b->in, n_rows, h, w, t, ctx,
                                            SD_TEXT_TOKENS, b->out, err)
                          : sd_unet_run(m->unet, m->rt, b->in, n_rows, h, w, t, ctx, SD_TEXT_TOKENS,
                                        b->out, err);
    if (st != PT_OK) return st;
    if (n_rows == 1) {
        sd_hwc_to_nchw(b->eps, b->out, c, h, w);
        return PT_OK;
    }
    /* rows: 0 uncond, 1 cond; eps = u + cfg * (c - u) in float32, the
     * order of diffusers' expression */
    sd_hwc_to_nchw(b->eps, b->out, c, h, w);
    sd_hwc_to_nchw(b->tmp, b->out + n, c, h, w);
    const float cfg = p->cfg;
    for (size_t k = 0; k < n; k++) {
        const float d = b->tmp[k] - b->eps[k];
        const float g = cfg * d;
        b->eps[k] = b->eps[k] + g;
    }
    return PT_OK;
}

static void report(const pt_image_params *p, int step, double t_start, const float *x, int c,
                   int h, int w, uint8_t *preview) {
    if (!p->progress) return;
    sd_latent_preview(preview, (size_t)w * 3, x, c, h, w);
    const pt_image img = {.width = w, .height = h, .stride = (size_t)w * 3, .pixels = preview};
    const pt_image_progress pr = {
        .step = step, .total = p->steps, .elapsed = sd_now() - t_start, .preview = &img,
    };
    p->progress(p->progress_user, &pr);
}

pt_status sd_sample(pt_image_model *m, const pt_image_params *p, const float *ctx, int n_rows,
                    float *x, double t_start, pt_error *err) {
    const int c = m->cfg.vae.latent_channels, h = p->height / 8, w = p->width / 8;
    const size_t n = (size_t)c * (size_t)h * (size_t)w;
    sample_bufs b = {
        .in = malloc((size_t)n_rows * n * sizeof(float)),
        .out = malloc((size_t)n_rows * n * sizeof(float)),
        .eps = malloc(n * sizeof(float)),
        .tmp = malloc(n * sizeof(float)),
        .noise = malloc(n * sizeof(float)),
        .preview = malloc((size_t)h * (size_t)w * 3),
    };
    sd_sched s;
    bool have_sched = false;
    pt_status st = PT_OK;
    if (!b.in || !b.out || !b.eps || !b.tmp || !b.noise || !b.preview) {
        st = pt_fail(err, PT_ERR_NOMEM, "out of memory for the latents");
        goto done;
    }
    st = sd_sched_init(&s, &m->cfg.schedule, sampler_kind(p->sampler), p->steps, err);
    if (st != PT_OK) goto done;
    have_sched = true;

    /* x = noise * init_noise_sigma (float32, as diffusers' prepare_latents) */
    if (p->init_latent) memcpy(x, p->init_latent, n * sizeof *x);
    else sd_rng_normal(p->seed, SD_RNG_STREAM_LATENT, 0, x, n);
    const float sigma0 = s.init_noise_sigma;
    for (size_t k = 0; k < n; k++) x[k] = x[k] * sigma0;

    for (int i = 0; i < p->steps; i++) {
        if (sd_cancelled(p)) {
            st = pt_fail(err, PT_ERR_CANCELLED, "cancelled after %d of %d steps", i, p->steps);
            goto done;
        }
        const double ts = sd_now();
        st = model_eps(m, p, &s, i, ctx, n_rows, x, &b, c, h, w, err);
        if (st != PT_OK) goto done;
        const float *noise = NULL;
        if (sd_sched_needs_noise(&s, i)) {
            if (p->noise_fn) p->noise_fn(p->noise_user, i, b.noise, n);
            else sd_rng_normal(p->seed, SD_RNG_STREAM_STEP(i), 0, b.noise, n);
            noise = b.noise;
        }
        st = sd_sched_step(&s, i, b.eps, x, n, noise, err);
        if (st != PT_OK) goto done;
        m->step_seconds[i] = sd_now() - ts;
        m->stats.n_steps = i + 1;
        m->stats.sample_seconds += m->step_seconds[i];
        report(p, i + 1, t_start, x, c, h, w, b.preview);
    }
done:
    /* the UNet's activations are not needed until the next generation */
    sd_unet_release_buffers(m->unet);
    sd_ocl_release_buffers(m->dev);
    if (have_sched) sd_sched_free(&s);
    bufs_free(&b);
    return st;
}
