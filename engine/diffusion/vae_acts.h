/*
 * vae_acts.h — the activation buffers of one run of a VAE-style graph
 * (the VAE decoder and encoder, TAESD): two ping-pong buffers, the
 * current activation x in buf[cur] and the next layer's output written to
 * buf[1 - cur], plus one scratch buffer for the layers that need one.
 * Each is grown (freed, then allocated through the runtime, counted as
 * SD_MEM_ACTS) only when a layer needs more than it holds, and never
 * shrunk during the run, so the buffers of a level are reused by every
 * layer of that level and a run's peak is about two activations of its
 * largest level plus scratch. Internal to the engine.
 */
#ifndef PETREL_VAE_ACTS_H
#define PETREL_VAE_ACTS_H
#include "sd_nn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct vae_acts {
    float *buf[3];  /* [0], [1]: ping-pong activations; [2]: scratch */
    size_t cap[3];  /* floats each holds */
    int cur;        /* buf[cur] holds the current activation */
} vae_acts;

#define VAE_SCRATCH 2

/* Make buffer i hold at least n floats (its contents are lost when it
 * grows). */
pt_status vae_acts_need(sd_runtime *rt, vae_acts *a, int i, size_t n, pt_error *err);
/* Give every buffer back. */
void vae_acts_free(sd_runtime *rt, vae_acts *a);

static inline float *vae_x(const vae_acts *a) { return a->buf[a->cur]; }
static inline float *vae_y(const vae_acts *a) { return a->buf[1 - a->cur]; }
static inline void vae_swap(vae_acts *a) { a->cur = 1 - a->cur; }

/* Layer steps on a->x, one image of h x w pixels; each leaves its result
 * as the new x. */
/* x (c_in channels) -> conv(x) (c->c_out channels, size per stride/pad) */
pt_status vae_conv(sd_runtime *rt, vae_acts *a, const sd_conv *c, int *h, int *w, pt_error *err);
/* x -> resnet(x) */
pt_status vae_resnet(sd_runtime *rt, vae_acts *a, const sd_resnet *r, int h, int w,
                     pt_error *err);
/* x -> x + attention(GroupNorm(x)), one image of n_pix pixels of c
 * channels (the VAE mid block's attention) */
pt_status vae_attention(sd_runtime *rt, vae_acts *a, const sd_norm *norm, const sd_attn *at,
                        int64_t n_pix, pt_error *err);
/* x (h x w x c) -> nearest 2x up-sampled x; *h, *w doubled */
pt_status vae_upsample(sd_runtime *rt, vae_acts *a, int *h, int *w, int c, pt_error *err);

#endif
