/*
 * sd_weights.h — the tensors and hyperparameters of an image model, from
 * whichever file holds them, under one naming. Internal to the engine.
 *
 * Sources (sd_weights_open picks by what `path` is):
 *   - a diffusers folder: model_index.json, unet/, vae/, text_encoder/,
 *     tokenizer/ (vocab.json, merges.txt), scheduler/; each component's
 *     config.json and *.safetensors (sharded with an index or not);
 *   - a single-file LDM checkpoint (.safetensors with the key names of the
 *     original Stable Diffusion repo: model.diffusion_model.*,
 *     first_stage_model.*, cond_stage_model.transformer.* (SD 1.x) or
 *     cond_stage_model.model.* (SD 2.x OpenCLIP)), whose names are
 *     mapped to the canonical ones below and whose config is inferred
 *     from tensor shapes;
 *   - petrel's image GGUF (general.architecture "sd"): canonical names,
 *     config in "sd.*" metadata keys, tokenizer vocab and merges inside,
 *     linear and conv weights optionally Q8_0 / Q4_0 (see sd_tensor.layout).
 *   An optional TAESD decoder comes from a second path (a diffusers
 *   AutoencoderTiny folder or its .safetensors), or from the same GGUF
 *   (a second path given replaces the GGUF's).
 *
 * Canonical names are diffusers' state-dict keys with a component prefix:
 *   "text_encoder." + transformers CLIPTextModel keys
 *        (text_model.encoder.layers.0.self_attn.q_proj.weight, ...)
 *   "unet."         + UNet2DConditionModel keys (down_blocks.0.resnets.0.conv1.weight, ...)
 *   "vae."          + AutoencoderKL keys (decoder.up_blocks.0.resnets.0.norm1.weight, ...)
 *   "taesd."        + AutoencoderTiny keys (decoder.layers.0.weight, ...)
 * (SD 2.x OpenCLIP weights are mapped to the CLIPTextModel names too: the
 * fused in_proj of each layer is exposed as its q/k/v thirds.)
 *
 * All tensor data stays in the file mappings (zero copy); a returned
 * sd_tensor points into them and is valid until sd_weights_close.
 */
#ifndef PETREL_SD_WEIGHTS_H
#define PETREL_SD_WEIGHTS_H
#include "petrel.h"
#include "sd_config.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sd_layout {
    /* As PyTorch stores it: shape[0] outermost; a conv weight is
     * [c_out][c_in][kh][kw], a linear weight [out][in]. */
    SD_LAYOUT_TORCH = 0,
    /* petrel's GGUF layout of a conv weight: a 2-D matrix of c_out rows of
     * k_pad columns, each row in (ky, kx, c_in) order (c_in fastest) and
     * zero-padded from kh*kw*c_in up to k_pad (a multiple of 32), so Q8_0 /
     * Q4_0 blocks never straddle rows and the product reads im2col columns
     * of HWC activations directly. shape[] still gives the logical torch
     * shape [c_out, c_in, kh, kw]; k_pad gives the stored row length. */
    SD_LAYOUT_CONV_OHWI_PAD = 1,
} sd_layout;

typedef struct sd_tensor {
    uint32_t type;       /* enum pt_type: F32, F16, BF16 (files); Q8_0, Q4_0 (GGUF) */
    int n_dims;          /* 1..4 */
    int64_t shape[4];    /* PyTorch order, shape[0] outermost; unused dims 1 */
    sd_layout layout;
    int64_t k_pad;       /* SD_LAYOUT_CONV_OHWI_PAD: stored row length; else 0 */
    const void *data;    /* in a mapping, nbytes long */
    uint64_t nbytes;
} sd_tensor;

typedef struct sd_weights sd_weights;

/* Open a model (see above). taesd_path and tokenizer_path may be NULL
 * (tokenizer: a folder with vocab.json and merges.txt, for single files
 * that carry none). Errors are one line in err, e.g. "model.safetensors:
 * header length 9e18 exceeds the file (2.1 GB)". */
pt_status sd_weights_open(const char *path, const char *taesd_path, const char *tokenizer_path,
                          sd_weights **out, pt_error *err);
void sd_weights_close(sd_weights *w);

const sd_model_config *sd_weights_config(const sd_weights *w);

/* The tensor of canonical name `name`; false when absent. */
bool sd_weights_get(const sd_weights *w, const char *name, sd_tensor *out);
/* Like sd_weights_get, but a missing tensor or one whose shape differs
 * from want[0..n_dims) (want NULL: any) is a PT_ERR_FORMAT with a message
 * naming the tensor, its shape and the expected one. */
pt_status sd_weights_need(const sd_weights *w, const char *name, int n_dims, const int64_t *want,
                          sd_tensor *out, pt_error *err);

/* The CLIP tokenizer's files as text (vocab.json, merges.txt), owned by w;
 * NULL when the model has none and no tokenizer_path was given. */
const char *sd_weights_vocab_json(const sd_weights *w, size_t *len);
const char *sd_weights_merges(const sd_weights *w, size_t *len);

/* Give the pages of every tensor whose name starts with prefix back to
 * the kernel (madvise DONTNEED): after the text encoder has run, or after
 * the weights were copied out by packing. They fault back in if read. */
void sd_weights_release(const sd_weights *w, const char *prefix);

/* Bytes of tensor data under prefix ("" = all), as stored. */
uint64_t sd_weights_bytes(const sd_weights *w, const char *prefix);
/* Elements (parameters) of the tensors under prefix ("" = all), from
 * their logical shapes (sd_weights_count.c). */
int64_t sd_weights_params(const sd_weights *w, const char *prefix);

#endif
