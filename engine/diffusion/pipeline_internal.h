/*
 * pipeline_internal.h — the image model behind petrel.h's pt_image_* API
 * and the stages of one generation. Internal to the engine.
 *
 * A generation (pt_image_generate, pipeline.c) runs four stages, each in
 * its own file:
 *   text    pipeline_text.c    tokenize prompt and negative, load the
 *                              text encoder, encode both rows in one run,
 *                              free it and give its pages back
 *   sample  pipeline_sample.c  initial latent, then per step: scale the
 *                              input, one UNet pass over [uncond, cond],
 *                              guidance, the sampler's update, progress
 *   decode  pipeline_decode.c  load the VAE decoder (or use TAESD), decode
 *                              latent / scaling_factor, free it, RGB8
 * The UNet is prepared once, at load (pipeline_load.c).
 *
 * Latent layout. The sampler's latent x is NCHW [4][h/8][w/8] floats,
 * the order diffusers and the seeded noise use (so init_latent, the
 * noise and x are element-wise the same arrays as diffusers'); the UNet
 * reads and writes HWC, so each step transposes its input and output
 * (O(latent), nothing next to the UNet).
 */
#ifndef PETREL_PIPELINE_INTERNAL_H
#define PETREL_PIPELINE_INTERNAL_H

#include "petrel.h"
#include "sd_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "image_params.h"
#include "clip_tokenizer.h"
#include "sd_nn.h"
#include "sd_weights.h"
#include "sd_opencl.h"
#include "unet.h"

struct pt_image_model {
    sd_weights *w;             /* the files (mapped) */
    sd_model_config cfg;       /* copy of sd_weights_config(w) */
    sd_runtime *rt;            /* cpu, pool, weight policy, memory counts */
    sd_unet *unet;             /* prepared at load; NULL between generations
                                * unless resident (sd_prepare_unet) */
    bool resident;             /* pt_image_model_params.resident */
    sd_clip_tokenizer *tok;
    char weights_name[8];      /* linear/conv weights as they run: "F32", "Q8_0", ... */
    bool has_taesd;
    sd_image_limits lim;
    sd_ocl *dev;               /* the UNet's OpenCL device, or NULL: the CPU */
    char device_note[320];     /* why OpenCL was asked for and is not used, or "" */
    /* the last generation's stats (pt_image_get_stats) */
    double load_seconds;
    pt_image_stats stats;
    double step_seconds[SD_MAX_STEPS];
};

/* Prepare m->unet from the weights (at load, and before a generation
 * when it was freed after the last one), then give the file's pages
 * back. */
pt_status sd_prepare_unet(pt_image_model *m, pt_error *err);
/* Free m->unet unless the model is resident. */
void sd_drop_unet(pt_image_model *m);

/* Seconds on a monotonic clock. */
double sd_now(void);

/* Whether the caller asked to stop. */
static inline bool sd_cancelled(const pt_image_params *p) {
    return p->cancel && atomic_load(p->cancel);
}

/* The end of a stage: the runtime's memory now and its peak since the
 * stage began (sd_rt_mem_mark) into the stats. */
void sd_stage_end(pt_image_model *m, pt_image_stage stage);

/* Text stage: the conditioning rows ctx [n_rows][77][hidden] for
 * n_rows 2 (row 0 the negative prompt, row 1 the prompt: diffusers' order
 * of torch.cat([negative, prompt])) or 1 (the prompt alone). */
pt_status sd_encode_text(pt_image_model *m, const pt_image_params *p, int n_rows, float *ctx,
                         pt_error *err);

/* Sample stage: the final latent x, NCHW [4][height/8][width/8], from the
 * conditioning of sd_encode_text. */
pt_status sd_sample(pt_image_model *m, const pt_image_params *p, const float *ctx, int n_rows,
                    float *x, double t_start, pt_error *err);

/* Decode stage: x (NCHW, as sd_sample leaves it) to out (RGB8). */
pt_status sd_decode(pt_image_model *m, const pt_image_params *p, const float *x, pt_image *out,
                    pt_error *err);

#endif
