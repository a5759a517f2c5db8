/*
 * sd_config.h — hyperparameters of a Stable-Diffusion-style image model,
 * whatever file they came from: a diffusers folder (each component's
 * config.json), a single-file LDM checkpoint (inferred from tensor
 * shapes, as stable-diffusion.cpp and diffusers' from_single_file do), or
 * petrel's own image GGUF (metadata keys "sd.*", see sd_weights.h).
 * Internal to the engine.
 *
 * Field names follow diffusers' config keys where one exists. Limits:
 * SD_MAX_LEVELS resolution levels (SD 1.x/2.x use 4, the demo model 3).
 */
#ifndef PETREL_SD_CONFIG_H
#define PETREL_SD_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

#define SD_MAX_LEVELS 4

typedef enum sd_act {
    SD_ACT_QUICK_GELU = 0, /* x * sigmoid(1.702 x): OpenAI CLIP (SD 1.x) */
    SD_ACT_GELU,           /* exact (erf) GELU: OpenCLIP (SD 2.x) */
} sd_act;

typedef enum sd_prediction {
    SD_PRED_EPSILON = 0,
    SD_PRED_V,             /* v-prediction (SD 2.x 768-v) */
} sd_prediction;

/* CLIPTextModel (transformers): token + position embeddings, n_layers
 * pre-norm blocks (LayerNorm, causal self-attention with biases, LayerNorm,
 * MLP fc1 -> act -> fc2), final LayerNorm. */
typedef struct sd_clip_config {
    int vocab;            /* vocab_size */
    int hidden;           /* hidden_size */
    int intermediate;     /* intermediate_size */
    int layers;           /* num_hidden_layers */
    int heads;            /* num_attention_heads */
    int max_pos;          /* max_position_embeddings (77) */
    sd_act act;           /* hidden_act */
    float ln_eps;         /* layer_norm_eps (1e-5) */
    int bos, eos, pad;    /* token ids; pad == eos for SD 1.x, 0 for SD 2.x */
    /* Which hidden state conditions the UNet: 1 = the last layer, then the
     * final LayerNorm (SD 1.x); 2 = the penultimate layer, then the final
     * LayerNorm (SD 2.x, and "clip skip 2" of SD 1.x tools). */
    int skip;
} sd_clip_config;

/* UNet2DConditionModel with SD block types: level i (0 .. n_levels-1) has
 * layers_per_block ResNet blocks (each followed by a spatial transformer
 * when cross_attn[i]) and a 2x down-sampling conv except the last level;
 * the mid block is ResNet, transformer, ResNet; the up path mirrors the
 * down path with layers_per_block + 1 ResNet blocks per level and skip
 * connections, nearest 2x up-sampling + conv except the last level. */
typedef struct sd_unet_config {
    int in_channels, out_channels;   /* 4, 4 */
    int n_levels;                    /* len(block_out_channels) */
    int channels[SD_MAX_LEVELS];     /* block_out_channels */
    bool cross_attn[SD_MAX_LEVELS];  /* CrossAttnDownBlock2D at this level */
    int layers_per_block;            /* 2 */
    int heads[SD_MAX_LEVELS];        /* attention heads per level (diffusers'
                                      * attention_head_dim or num_attention_heads) */
    int transformer_depth[SD_MAX_LEVELS]; /* transformer_layers_per_block (1) */
    int cross_dim;                   /* cross_attention_dim (768, 1024) */
    int groups;                      /* norm_num_groups (32) */
    float norm_eps;                  /* norm_eps (1e-5) */
    bool linear_proj;                /* use_linear_projection (SD 2.x): proj_in/out
                                      * are Linear, else 1x1 Conv (same math in HWC) */
    bool flip_sin_to_cos;            /* true */
    float freq_shift;                /* 0 */
    int time_embed_dim;              /* 4 * channels[0] */
    sd_prediction prediction;        /* from the scheduler config or the family */
    int sample_size;                 /* sample_size: the latent side it was trained
                                      * at (64 for SD 1.x = 512 px, 96 for SD 2.x
                                      * 768-v); 0 = unknown (the pipeline then
                                      * assumes 512 px, 768 for v-prediction) */
} sd_unet_config;

/* AutoencoderKL decoder (and encoder): conv_in, mid (ResNet, attention,
 * ResNet), n_levels up blocks of layers_per_block + 1 ResNets with an
 * up-sampler except the last, GroupNorm + SiLU, conv_out; post_quant_conv
 * (1x1) before it. The encoder mirrors it. */
typedef struct sd_vae_config {
    int in_channels, out_channels;  /* 3, 3 */
    int latent_channels;            /* 4 */
    int n_levels;
    int channels[SD_MAX_LEVELS];    /* block_out_channels */
    int layers_per_block;           /* 2 for SD, 1 for the demo model */
    int groups;                     /* 32 */
    float scaling_factor;           /* 0.18215 (SD 1.x/2.x) */
    bool has_encoder;               /* encoder tensors present */
} sd_vae_config;

/* AutoencoderTiny (TAESD) decoder: fixed architecture (64 channels,
 * 3 blocks per stage); only its channel counts vary. */
typedef struct sd_taesd_config {
    int latent_channels;            /* 4 */
    int channels;                   /* 64 */
    int blocks_per_stage;           /* 3 */
    int n_upsamples;                /* 3 */
    bool present;
} sd_taesd_config;

/* The training noise schedule (diffusers' scheduler config). */
typedef enum sd_beta_schedule { SD_BETA_SCALED_LINEAR = 0, SD_BETA_LINEAR } sd_beta_schedule;
/* timestep_spacing; DEFAULT: the config does not say, so each sampler
 * takes its diffusers class's default (linspace for euler, euler_a,
 * dpmpp_2m; leading for ddim; lcm has its own). */
typedef enum sd_spacing {
    SD_SPACING_DEFAULT = 0, SD_SPACING_LINSPACE, SD_SPACING_LEADING, SD_SPACING_TRAILING
} sd_spacing;
typedef struct sd_schedule_config {
    int num_train_timesteps;        /* 1000 */
    double beta_start, beta_end;    /* 0.00085, 0.012: double as in the JSON
                                     * (diffusers takes the square root of the
                                     * double before rounding to float32) */
    sd_beta_schedule beta_schedule; /* scaled_linear */
    sd_prediction prediction;       /* epsilon */
    int steps_offset;               /* 1 */
    sd_spacing timestep_spacing;    /* DEFAULT unless the config names one */
    /* 1 true, 0 false, -1 not in the config (the class default: ddim
     * true/true, lcm false/true). SD's scheduler_config.json says false
     * for both, which a zeroed struct gives. */
    signed char clip_sample;
    signed char set_alpha_to_one;
} sd_schedule_config;

typedef struct sd_model_config {
    char family[16];                /* "sd1", "sd2", "demo" (informational) */
    sd_clip_config clip;
    sd_unet_config unet;
    sd_vae_config vae;
    sd_taesd_config taesd;
    sd_schedule_config schedule;
} sd_model_config;

#endif
