/*
 * imgset.h — the settings of one picture (the studio's form, what a
 * generation used, what a gallery entry remembers), and checking them.
 * Pure: no ncurses, no engine calls but the sampler names.
 */
#ifndef PETREL_UI_IMGSET_H
#define PETREL_UI_IMGSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "petrel.h"

#define PT_IMG_PROMPT_CAP 2048
#define PT_IMG_NEGATIVE_CAP 1024

/* steps 0, cfg < 0, sampler PT_IMAGE_SAMPLER_COUNT, width/height 0 mean
 * "the model's own" (what its file recommends); the worker fills them in
 * and the DONE event reports the values used. */
typedef struct pt_img_settings {
    char prompt[PT_IMG_PROMPT_CAP];
    char negative[PT_IMG_NEGATIVE_CAP];
    int steps;                  /* 1..PT_IMG_MAX_STEPS, 0 = the model's */
    float cfg;                  /* 0..30, < 0 = the model's */
    uint64_t seed;
    int width, height;          /* multiples of 64 in 64..PT_IMG_MAX_SIDE, 0 = the model's */
    pt_image_sampler sampler;   /* PT_IMAGE_SAMPLER_COUNT = the model's */
} pt_img_settings;

/* The studio keeps sizes modest: a phone draws 512x512 in minutes. */
#define PT_IMG_MAX_STEPS 150
#define PT_IMG_MAX_SIDE 1024
#define PT_IMG_MAX_CFG 30.0f

void pt_img_settings_default(pt_img_settings *s);
/* Is s fit to send? false with a one-line reason in why (empty prompt,
 * a size that is not a multiple of 64, steps out of range, ...). */
bool pt_img_settings_check(const pt_img_settings *s, char *why, size_t why_cap);

/* Step a field by d notches, clamped to its range (Left/Right, -/+):
 * steps by 1, cfg by 0.5, seed by 1 (wrapping is not allowed at 0), a
 * side by 64; sampler cycles. "The model's" counts as the first notch
 * below the smallest value. */
void pt_img_step_steps(pt_img_settings *s, int d);
void pt_img_step_cfg(pt_img_settings *s, int d);
void pt_img_step_seed(pt_img_settings *s, int d);
void pt_img_step_size(pt_img_settings *s, int d);   /* width and height together (square) */
void pt_img_step_width(pt_img_settings *s, int d);
void pt_img_step_height(pt_img_settings *s, int d);
void pt_img_step_sampler(pt_img_settings *s, int d);

/* A1111's "parameters" text of a picture (prompt, "Negative prompt: "
 * line when set, settings line), as `petrel imagine` writes it. */
void pt_img_parameters(const pt_img_settings *s, const char *model_name, char *out, size_t cap);
/* One line for the gallery: "seed 42 · 20 steps · cfg 7.5 · 64x64 · Euler". */
void pt_img_summary(const pt_img_settings *s, char *out, size_t cap);

#endif
