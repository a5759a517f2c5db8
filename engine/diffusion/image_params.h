/*
 * image_params.h — checking a caller's pt_image_params against the
 * model (image_params.c). Internal to the engine.
 */
#ifndef PETREL_IMAGE_PARAMS_H
#define PETREL_IMAGE_PARAMS_H

#include "petrel.h"

#include <stdbool.h>

/* Most sampler steps of one generation. */
#define SD_MAX_STEPS 1000
/* CLIP's context: 77 tokens (BOS, at most 75 text tokens, EOS, padding). */
#define SD_TEXT_TOKENS 77

/* What the checks of a pt_image_params need to know of the model. */
typedef struct sd_image_limits {
    int default_width, default_height;
    int text_layers;
    int latent_channels;
    bool has_taesd;
} sd_image_limits;

/* The caller's params (versioned by size) over the defaults into *p,
 * validated against the model: prompt, steps, cfg, size, sampler,
 * clip skip, TAESD, init_latent. Width and height 0 become the model's
 * default; negative NULL becomes "". One-line PT_ERR_ARG otherwise. */
pt_status sd_image_params_read(const pt_image_params *given, const sd_image_limits *lim,
                               pt_image_params *p, pt_error *err);

#endif
