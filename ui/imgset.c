/* imgset.c — picture settings (see imgset.h). */
#include "imgset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void pt_img_settings_default(pt_img_settings *s) {
    memset(s, 0, sizeof *s);
    s->steps = 0;
    s->cfg = -1;
    s->seed = 42;
    s->sampler = PT_IMAGE_SAMPLER_COUNT;
}

static bool side_ok(int v) { return v == 0 || (v >= 64 && v <= PT_IMG_MAX_SIDE && v % 64 == 0); }

bool pt_img_settings_check(const pt_img_settings *s, char *why, size_t cap) {
    const char *p = s->prompt;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) { snprintf(why, cap, "the prompt is empty: type what to draw"); return false; }
    if (!memchr(s->prompt, 0, sizeof s->prompt) || !memchr(s->negative, 0, sizeof s->negative)) {
        snprintf(why, cap, "the prompt is too long");
        return false;
    }
    if (s->steps < 0 || s->steps > PT_IMG_MAX_STEPS) {
        snprintf(why, cap, "steps must be 1..%d", PT_IMG_MAX_STEPS);
        return false;
    }
    if (!isfinite(s->cfg) || s->cfg > PT_IMG_MAX_CFG) {
        snprintf(why, cap, "CFG must be 0..%g", (double)PT_IMG_MAX_CFG);
        return false;
    }
    if (!side_ok(s->width) || !side_ok(s->height) || (s->width == 0) != (s->height == 0)) {
        snprintf(why, cap, "the size must be multiples of 64 in 64..%d", PT_IMG_MAX_SIDE);
        return false;
    }
    if ((unsigned)s->sampler > PT_IMAGE_SAMPLER_COUNT) {
        snprintf(why, cap, "unknown sampler");
        return false;
    }
    return true;
}

void pt_img_step_steps(pt_img_settings *s, int d) {
    int v = s->steps + d;
    s->steps = v < 0 ? 0 : v > PT_IMG_MAX_STEPS ? PT_IMG_MAX_STEPS : v;
}

void pt_img_step_cfg(pt_img_settings *s, int d) {
    /* "the model's" (< 0) sits one notch below 0 */
    float v = s->cfg < 0 ? (d > 0 ? 0.5f * (float)(d - 1) : -1) : s->cfg + 0.5f * (float)d;
    if (s->cfg >= 0 && v < 0) v = -1;
    if (v > PT_IMG_MAX_CFG) v = PT_IMG_MAX_CFG;
    s->cfg = v;
}

void pt_img_step_seed(pt_img_settings *s, int d) {
    if (d < 0 && s->seed < (uint64_t)-d) s->seed = 0;
    else s->seed += (uint64_t)(int64_t)d;
}

static int step_side(int v, int d) {
    /* 0 ("the model's") is the notch below 64 */
    int n = v + 64 * d;
    if (v == 0 && d > 0) n = 64 * d;
    if (n < 64) n = 0;
    if (n > PT_IMG_MAX_SIDE) n = PT_IMG_MAX_SIDE;
    return n;
}

void pt_img_step_width(pt_img_settings *s, int d) {
    s->width = step_side(s->width, d);
    if (s->width == 0) s->height = 0;
    else if (s->height == 0) s->height = s->width;
}

void pt_img_step_height(pt_img_settings *s, int d) {
    s->height = step_side(s->height, d);
    if (s->height == 0) s->width = 0;
    else if (s->width == 0) s->width = s->height;
}

void pt_img_step_size(pt_img_settings *s, int d) {
    int v = step_side(s->width > s->height ? s->width : s->height, d);
    s->width = s->height = v;
}

void pt_img_step_sampler(pt_img_settings *s, int d) {
    /* the model's, euler, euler_a, ..., lcm, round */
    const int n = PT_IMAGE_SAMPLER_COUNT + 1;
    int i = ((int)s->sampler + 1) % n;   /* the model's (COUNT) is 0 */
    i = ((i + d) % n + n) % n;
    s->sampler = i == 0 ? PT_IMAGE_SAMPLER_COUNT : (pt_image_sampler)(i - 1);
}

void pt_img_parameters(const pt_img_settings *s, const char *model, char *out, size_t cap) {
    char settings[640];
    snprintf(settings, sizeof settings,
             "Steps: %d, Sampler: %s, CFG scale: %g, Seed: %llu, Size: %dx%d, Model: %s", s->steps,
             pt_image_sampler_title(s->sampler), (double)s->cfg, (unsigned long long)s->seed,
             s->width, s->height, model ? model : "");
    if (s->negative[0]) snprintf(out, cap, "%s\nNegative prompt: %s\n%s", s->prompt, s->negative, settings);
    else snprintf(out, cap, "%s\n%s", s->prompt, settings);
}

void pt_img_summary(const pt_img_settings *s, char *out, size_t cap) {
    snprintf(out, cap, "seed %llu, %d steps, cfg %g, %dx%d, %s", (unsigned long long)s->seed,
             s->steps, (double)s->cfg, s->width, s->height, pt_image_sampler_title(s->sampler));
}
