/*
 * clip_encoder.h — the CLIP text encoder of SD 1.x / 2.x (transformers'
 * CLIPTextModel) on sd_nn.h's layers. Internal to the engine.
 *
 * Forward for each row of n_tok token ids (cond and uncond rows in one
 * batch):
 *   x = token_embedding[id] + position_embedding[t]          [n_tok][H]
 *   for each of the first L - (skip - 1) layers (pre-norm):
 *     x += out_proj(causal_mha(q_proj, k_proj, v_proj of layer_norm1(x)))
 *     x += fc2(act(fc1(layer_norm2(x))))       act: quick_gelu or gelu
 *   out = final_layer_norm(x)
 * so skip 1 gives last_hidden_state and skip 2 the final LayerNorm of the
 * penultimate layer's output (SD 2.x; "clip skip 2"). Attention is causal
 * (token t sees tokens 0..t), with no padding mask, as CLIPTextModel
 * runs it without an attention mask.
 */
#ifndef PETREL_CLIP_ENCODER_H
#define PETREL_CLIP_ENCODER_H

#include "sd_config.h"
#include "sd_nn.h"
#include "sd_weights.h"

#include <stdint.h>

typedef struct sd_clip sd_clip;

/* Load the "text_encoder." tensors of w for cfg (the config of w, or a
 * copy with another skip). Weights follow rt's policy. */
pt_status sd_clip_load(const sd_weights *w, const sd_clip_config *cfg, sd_runtime *rt,
                       sd_clip **out, pt_error *err);
/* out [n_rows][n_tok][hidden] from ids [n_rows][n_tok] (1 <= n_tok <=
 * max_pos; every id in [0, vocab)). Takes rt's pool for the run. */
pt_status sd_clip_encode(sd_clip *m, sd_runtime *rt, const int32_t *ids, int n_rows, int n_tok,
                         float *out, pt_error *err);
/* Frees the prepared weights (the runtime m was loaded with must still
 * exist). NULL is a no-op. */
void sd_clip_free(sd_clip *m);

#endif
