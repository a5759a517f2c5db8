/*
 * scheduler.h — the samplers of the image pipeline, each equal to the
 * diffusers scheduler class of the same algorithm built with from_config
 * on SD's scheduler config (sd_schedule_config), with that class's own
 * defaults for everything the config does not say:
 *
 *   "euler"     EulerDiscreteScheduler (timestep_spacing linspace)
 *   "euler_a"   EulerAncestralDiscreteScheduler (linspace)
 *   "dpmpp_2m"  DPMSolverMultistepScheduler, algorithm_type dpmsolver++,
 *               solver_order 2, midpoint, use_karras_sigmas true,
 *               lower_order_final true, final_sigmas_type zero
 *   "ddim"      DDIMScheduler, eta 0 (timestep_spacing leading)
 *   "lcm"       LCMScheduler, original_inference_steps 50 (1..50 steps),
 *               timestep_scaling 10
 *
 * Arithmetic follows diffusers operation by operation: numpy float64
 * where it uses numpy (timestep and sigma tables), float32 where it uses
 * torch tensors (betas, alphas_cumprod, each step's update), every float
 * operation rounded on its own (no FMA contraction: see scheduler.c), and
 * the libm functions log/exp/pow/sqrt that torch and numpy call on Linux.
 * So a schedule's tables and each step's output are the same on every
 * CPU variant, and equal to diffusers' to the last bit where glibc's libm
 * and torch agree (see tests/test_sd_sched.c for the measured agreement).
 *
 * Use, as diffusers' pipelines do:
 *   sd_sched s; sd_sched_init(&s, &cfg, SD_SAMPLER_EULER, steps, &err);
 *   x = noise * s.init_noise_sigma;
 *   for (i = 0; i < s.steps; i++) {
 *       sd_sched_scale_input(&s, i, x, x_in, n);      // UNet input
 *       eps = unet(x_in, sd_sched_timestep(&s, i), ...);
 *       sd_sched_step(&s, i, eps, x, n, sd_sched_needs_noise(&s, i) ? noise_i : NULL, &err);
 *   }
 *   sd_sched_free(&s);
 * Latents are any layout (the update is elementwise) as long as model_out,
 * x and noise share it.
 */
#ifndef PETREL_SD_SCHEDULER_H
#define PETREL_SD_SCHEDULER_H

#include "petrel.h"
#include "sd_config.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum sd_sampler {
    SD_SAMPLER_EULER = 0,
    SD_SAMPLER_EULER_A,
    SD_SAMPLER_DPMPP_2M,
    SD_SAMPLER_DDIM,
    SD_SAMPLER_LCM,
    SD_SAMPLER_COUNT
} sd_sampler;

#define SD_SCHED_MAX_STEPS 1000
#define SD_LCM_ORIGINAL_STEPS 50

typedef struct sd_sched {
    sd_sampler kind;
    sd_prediction prediction;
    int steps;              /* model evaluations (== the steps asked for) */
    int train_steps;        /* num_train_timesteps */
    /* [steps]: the UNet's timestep input at step i (diffusers'
     * scheduler.timesteps[i]: float32 for euler/euler_a, integers for the
     * others). */
    float *timesteps;
    /* [steps + 1] for euler, euler_a, dpmpp_2m (scheduler.sigmas, the last
     * one 0); NULL for ddim and lcm, which have none. */
    float *sigmas;
    float *alphas_cumprod;  /* [train_steps], float32 as torch.cumprod gives it */
    float final_alpha_cumprod; /* ddim/lcm: set_alpha_to_one ? 1 : alphas_cumprod[0] */
    float init_noise_sigma; /* the initial latent is N(0,1) times this */
    bool clip_sample;       /* ddim/lcm: clamp x0 to [-1, 1] */
    /* dpmpp_2m state: x0 prediction of the previous step ([n] floats,
     * allocated at step 0), how many steps ran. */
    float *prev_x0;
    size_t prev_n;
    int lower_order_nums;
    int next_step;          /* steps run in order 0, 1, ...: the next i */
} sd_sched;

/* Build the schedule of `steps` steps (1..1000; lcm 1..50) for cfg.
 * PT_ERR_ARG for a bad steps count, sampler or config (one line). */
pt_status sd_sched_init(sd_sched *s, const sd_schedule_config *cfg, sd_sampler kind, int steps,
                        pt_error *err);
void sd_sched_free(sd_sched *s);

/* The UNet's timestep input at step i. */
float sd_sched_timestep(const sd_sched *s, int i);
/* The UNet input at step i is x / sd_sched_input_divisor (euler and
 * euler_a: sqrt(sigma_i^2 + 1), float32; 1 for the others).
 * sd_sched_scale_input writes exactly that division to out (out may be x). */
float sd_sched_input_divisor(const sd_sched *s, int i);
void sd_sched_scale_input(const sd_sched *s, int i, const float *x, float *out, size_t n);
/* Whether step i adds noise: euler_a every step, lcm every step but the
 * last. The caller passes n fresh N(0,1) values then (sd_rng.h). */
bool sd_sched_needs_noise(const sd_sched *s, int i);

/* One denoising step: x[0..n) (the current latent, overwritten by the
 * next one) from model_out[0..n) (epsilon or v, per cfg.prediction) and,
 * when sd_sched_needs_noise, noise[0..n). Steps must run in order
 * 0 .. steps-1 with the same n (dpmpp_2m keeps the previous step);
 * anything else is PT_ERR_ARG, as is a missing noise. PT_ERR_NOMEM if the
 * dpmpp_2m history cannot be allocated. */
pt_status sd_sched_step(sd_sched *s, int i, const float *model_out, float *x, size_t n,
                        const float *noise, pt_error *err);

/* "euler", "euler_a", "dpmpp_2m", "ddim", "lcm" <-> sd_sampler; false /
 * NULL for an unknown name / value. */
bool sd_sampler_from_name(const char *name, sd_sampler *out);
const char *sd_sampler_name(sd_sampler kind);

#endif
