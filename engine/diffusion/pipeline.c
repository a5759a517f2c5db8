/*
 * pipeline.c — one generation (pt_image_generate): check the params,
 * then the text, sample and decode stages of pipeline_internal.h, with
 * the cancel flag read between them, and the stats of each.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline_internal.h"
#include "status.h"

double sd_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sd_stage_end(pt_image_model *m, pt_image_stage stage) {
    const sd_mem mem = sd_rt_mem(m->rt);
    m->stats.current_bytes[stage] = mem.weights + mem.mapped + mem.acts;
    m->stats.peak_bytes[stage] = mem.peak;
}

/* Forget the last generation's stats (the load's stay). */
static void stats_reset(pt_image_model *m) {
    const uint64_t load_cur = m->stats.current_bytes[PT_IMAGE_STAGE_LOAD];
    const uint64_t load_peak = m->stats.peak_bytes[PT_IMAGE_STAGE_LOAD];
    memset(&m->stats, 0, sizeof m->stats);
    m->stats.load_seconds = m->load_seconds;
    m->stats.current_bytes[PT_IMAGE_STAGE_LOAD] = load_cur;
    m->stats.peak_bytes[PT_IMAGE_STAGE_LOAD] = load_peak;
}

pt_status pt_image_generate(pt_image_model *m, const pt_image_params *params, pt_image *out,
                            pt_error *err) {
    if (!out) return pt_fail(err, PT_ERR_ARG, "pt_image_generate: no place for the image");
    memset(out, 0, sizeof *out);
    if (!m) return pt_fail(err, PT_ERR_ARG, "pt_image_generate: no model");
    pt_image_params p;
    pt_status st = sd_image_params_read(params, &m->lim, &p, err);
    if (st != PT_OK) return st;
    stats_reset(m);
    const double t0 = sd_now();
    /* cfg > 1: uncond and cond rows in one batch; else the prompt alone */
    const int n_rows = p.cfg > 1.0f ? 2 : 1;
    const int hidden = m->cfg.clip.hidden;
    const size_t n_lat = (size_t)m->cfg.vae.latent_channels * (size_t)(p.height / 8) * (size_t)(p.width / 8);
    /* ctx [n_rows][77][hidden]: the text states; x NCHW [c][h/8][w/8] */
    float *ctx = malloc((size_t)n_rows * SD_TEXT_TOKENS * (size_t)hidden * sizeof *ctx);
    float *x = malloc(n_lat * sizeof *x);
    if (!ctx || !x) {
        st = pt_fail(err, PT_ERR_NOMEM, "out of memory for a %dx%d generation", p.width, p.height);
        goto done;
    }
    if (sd_cancelled(&p)) {
        st = pt_fail(err, PT_ERR_CANCELLED, "cancelled before the text encoder ran");
        goto done;
    }

    double ts = sd_now();
    sd_rt_mem_mark(m->rt);
    st = sd_encode_text(m, &p, n_rows, ctx, err);
    m->stats.text_seconds = sd_now() - ts;
    sd_stage_end(m, PT_IMAGE_STAGE_TEXT);
    if (st != PT_OK) goto done;

    sd_rt_mem_mark(m->rt);
    st = sd_sample(m, &p, ctx, n_rows, x, t0, err);
    sd_stage_end(m, PT_IMAGE_STAGE_SAMPLE);
    if (st != PT_OK) goto done;
    if (p.out_latent) memcpy(p.out_latent, x, n_lat * sizeof *x);
    if (sd_cancelled(&p)) {
        st = pt_fail(err, PT_ERR_CANCELLED, "cancelled before decoding");
        goto done;
    }

    ts = sd_now();
    sd_rt_mem_mark(m->rt);
    st = sd_decode(m, &p, x, out, err);
    m->stats.decode_seconds = sd_now() - ts;
    m->stats.decoded_with_taesd = p.use_taesd;
    sd_stage_end(m, PT_IMAGE_STAGE_DECODE);
done:
    free(ctx);
    free(x);
    if (st != PT_OK) pt_image_free(out);
    return st;
}

void pt_image_get_stats(const pt_image_model *m, pt_image_stats *out) {
    *out = m->stats;
    out->step_seconds = m->step_seconds;
}
