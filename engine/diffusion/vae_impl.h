/*
 * vae_impl.h — the VAE's layers (struct sd_vae), shared by its CPU code
 * (vae.c) and its OpenCL decoder (vae_opencl.c). Internal to them.
 */
#ifndef PETREL_VAE_IMPL_H
#define PETREL_VAE_IMPL_H

#include "vae.h"

#define VAE_MAX_SIDE 2048  /* latent pixels per side (16384 image pixels) */

/* UNetMidBlock2D of the VAE: ResNet, attention (GroupNorm + one head),
 * ResNet, all at c channels. */
typedef struct vae_mid {
    sd_resnet r0, r1;
    sd_norm norm;  /* attentions.0.group_norm */
    sd_attn attn;  /* attentions.0.to_q / to_k / to_v / to_out.0 */
} vae_mid;

/* One up block of the decoder or down block of the encoder: n_res ResNets
 * and an optional up-/down-sampling conv. */
#define VAE_MAX_RES 8
typedef struct vae_level {
    sd_resnet res[VAE_MAX_RES]; /* layers_per_block (+ 1 in the decoder) used */
    int n_res;
    sd_conv sample; /* upsamplers.0.conv / downsamplers.0.conv */
    bool has_sample;
} vae_level;

struct sd_vae {
    sd_vae_config cfg;
    int scale;          /* 2^(n_levels - 1) */
    /* decoder */
    sd_conv post_quant; /* 1x1, lc -> lc */
    sd_conv dec_in;     /* 3x3, lc -> ch[n-1] */
    vae_mid dec_mid;
    vae_level up[SD_MAX_LEVELS];
    sd_norm dec_norm;   /* conv_norm_out at ch[0] */
    sd_conv dec_out;    /* 3x3, ch[0] -> out_channels */
    /* encoder (has_enc) */
    bool has_enc;
    sd_conv enc_in;     /* 3x3, in_channels -> ch[0] */
    vae_level down[SD_MAX_LEVELS];
    vae_mid enc_mid;
    sd_norm enc_norm;   /* conv_norm_out at ch[n-1] */
    sd_conv enc_out;    /* 3x3, ch[n-1] -> 2 lc */
    sd_conv quant;      /* 1x1, 2 lc -> 2 lc: [mean | logvar] */
};

#endif
