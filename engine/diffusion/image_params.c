/*
 * image_params.c — the plain parts of the image API: default parameters,
 * sampler and stage names, pt_image_free, and the validation of a
 * caller's pt_image_params (every bad value is one line of PT_ERR_ARG).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image_params.h"
#include "status.h"

/* Indexed by pt_image_sampler: petrel's name, and the one A1111 writes. */
static const char *const SAMPLER_NAMES[PT_IMAGE_SAMPLER_COUNT] = {
    "euler", "euler_a", "dpmpp_2m", "ddim", "lcm",
};
static const char *const SAMPLER_TITLES[PT_IMAGE_SAMPLER_COUNT] = {
    "Euler", "Euler a", "DPM++ 2M Karras", "DDIM", "LCM",
};
static const char *const STAGE_NAMES[PT_IMAGE_STAGE_COUNT] = {
    "load", "text", "sample", "decode",
};

const char *pt_image_sampler_name(pt_image_sampler s) {
    return (unsigned)s < PT_IMAGE_SAMPLER_COUNT ? SAMPLER_NAMES[s] : "?";
}

const char *pt_image_sampler_title(pt_image_sampler s) {
    return (unsigned)s < PT_IMAGE_SAMPLER_COUNT ? SAMPLER_TITLES[s] : "?";
}

bool pt_image_sampler_parse(const char *name, pt_image_sampler *out) {
    for (int i = 0; name && i < PT_IMAGE_SAMPLER_COUNT; i++)
        if (!strcmp(name, SAMPLER_NAMES[i])) {
            *out = (pt_image_sampler)i;
            return true;
        }
    return false;
}

const char *pt_image_stage_name(pt_image_stage s) {
    return (unsigned)s < PT_IMAGE_STAGE_COUNT ? STAGE_NAMES[s] : "?";
}

void pt_image_free(pt_image *img) {
    if (!img) return;
    free(img->pixels);
    memset(img, 0, sizeof *img);
}

pt_image_model_params pt_image_model_default_params(void) {
    return (pt_image_model_params){.size = sizeof(pt_image_model_params)};
}

pt_image_params pt_image_default_params(void) {
    return (pt_image_params){
        .size = sizeof(pt_image_params),
        .steps = 20,
        .cfg = 7.5f,
        .sampler = PT_IMAGE_EULER,
    };
}

/* One side (width or height) of the image: 0 takes the default. */
static pt_status check_side(const char *what, int *v, int dflt, pt_error *err) {
    if (*v == 0) *v = dflt;
    if (*v < PT_IMAGE_MIN_SIZE || *v > PT_IMAGE_MAX_SIZE || *v % 64)
        return pt_fail(err, PT_ERR_ARG, "%s %d is not a multiple of 64 in %d..%d", what, *v,
                       PT_IMAGE_MIN_SIZE, PT_IMAGE_MAX_SIZE);
    return PT_OK;
}

pt_status sd_image_params_read(const pt_image_params *given, const sd_image_limits *lim,
                               pt_image_params *p, pt_error *err) {
    *p = pt_image_default_params();
    if (!given) return pt_fail(err, PT_ERR_ARG, "no image parameters given (a prompt is needed)");
    pt_status st = pt_params_overlay(p, sizeof *p, given, "pt_image_params", err);
    if (st != PT_OK) return st;
    if (!p->prompt) return pt_fail(err, PT_ERR_ARG, "no prompt given");
    if (strnlen(p->prompt, PT_IMAGE_MAX_PROMPT + 1) > PT_IMAGE_MAX_PROMPT)
        return pt_fail(err, PT_ERR_ARG, "the prompt is longer than %d bytes", PT_IMAGE_MAX_PROMPT);
    if (!p->negative) p->negative = "";
    if (strnlen(p->negative, PT_IMAGE_MAX_PROMPT + 1) > PT_IMAGE_MAX_PROMPT)
        return pt_fail(err, PT_ERR_ARG, "the negative prompt is longer than %d bytes",
                       PT_IMAGE_MAX_PROMPT);
    if (p->steps < 1 || p->steps > SD_MAX_STEPS)
        return pt_fail(err, PT_ERR_ARG, "steps %d is not in 1..%d", p->steps, SD_MAX_STEPS);
    if (!isfinite(p->cfg) || p->cfg < 0 || p->cfg > 100)
        return pt_fail(err, PT_ERR_ARG, "guidance scale (cfg) %g is not a number in 0..100",
                       (double)p->cfg);
    if ((st = check_side("width", &p->width, lim->default_width, err)) ||
        (st = check_side("height", &p->height, lim->default_height, err)))
        return st;
    if ((unsigned)p->sampler >= PT_IMAGE_SAMPLER_COUNT)
        return pt_fail(err, PT_ERR_ARG, "sampler %d is not one of the %d samplers", (int)p->sampler,
                       PT_IMAGE_SAMPLER_COUNT);
    if (p->clip_skip < 0 || p->clip_skip > lim->text_layers)
        return pt_fail(err, PT_ERR_ARG, "clip skip %d is not in 0..%d (the text encoder's layers)",
                       p->clip_skip, lim->text_layers);
    if (p->use_taesd && !lim->has_taesd)
        return pt_fail(err, PT_ERR_ARG, "TAESD decoding asked for, but the model has no TAESD decoder "
                       "(load one with taesd_path)");
    if (p->init_latent) {
        const size_t n = (size_t)lim->latent_channels * (size_t)(p->height / 8) * (size_t)(p->width / 8);
        for (size_t i = 0; i < n; i++)
            if (!isfinite(p->init_latent[i]))
                return pt_fail(err, PT_ERR_ARG, "init_latent[%zu] is not a finite number", i);
    }
    return PT_OK;
}
