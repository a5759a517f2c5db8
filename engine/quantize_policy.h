/*
 * quantize_policy.h — which type each tensor gets when a model is
 * quantized: llama-quantize's rules (llama.cpp src/llama-quant.cpp,
 * tensor_allows_quantization, llama_tensor_get_type and
 * tensor_type_fallback) for the target types petrel writes, without an
 * importance matrix. Internal to the engine.
 */
#ifndef PETREL_QUANTIZE_POLICY_H
#define PETREL_QUANTIZE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"

#define PT_QTYPE_NONE UINT32_MAX /* "no override" */

typedef struct pt_qpolicy {
    uint32_t target;          /* enum pt_type of the file type asked for */
    uint32_t ftype;           /* its LLAMA_FTYPE_* (Q4_K_S and Q4_K_M differ only here) */
    uint32_t output_type;     /* override for output.weight (and a tied token_embd), or NONE */
    uint32_t token_embd_type; /* override for token_embd.weight, or NONE */
    bool leave_output;        /* output.weight is not quantized */
    bool tied;                /* the model has no output.weight: token_embd serves as it */
    bool falcon;              /* general.architecture "falcon" (output gets Q8_0) */
    bool eight_experts;       /* {arch}.expert_count == 8: attn_k / attn_v get Q8_0 */
    bool llama_70b;           /* llama.cpp's LLM_TYPE_70B (80 layers, GQA): attn_v gets Q5_K */
    int n_layer;              /* {arch}.block_count */
    int n_attn_v;             /* attn_v-like tensors in the model */
    /* Counters of the K mixes, advanced by pt_qpolicy_type: so the tensors
     * must be asked in output order, each once (as llama-quantize does). */
    int i_attn_v, i_ffn_down;
} pt_qpolicy;

/* The policy's facts about a model: tied, falcon, eight_experts,
 * llama_70b, n_layer, n_attn_v; the counters reset. */
void pt_qpolicy_from_model(pt_qpolicy *p, const pt_gguf *g);

/* The type tensor t gets. *fallback is set when its row length forced a
 * fallback (llama-quantize warns then). Advances the counters. */
uint32_t pt_qpolicy_type(pt_qpolicy *p, const pt_gguf_tensor *t, bool *fallback);

/* ggml_n_dims: the dimensions up to the last one longer than 1 (at least
 * 1). What ggml's writer records as n_dims, and what llama-quantize calls
 * a 1-D tensor. */
int pt_qpolicy_n_dims(const pt_gguf_tensor *t);

/* llama-quantize's target names (case-insensitive) -> enum pt_type and
 * llama.cpp's LLAMA_FTYPE_MOSTLY_* (general.file_type): F32, F16, BF16,
 * Q8_0, Q6_K, Q5_K_M (= Q5_K), Q5_K_S, Q5_1, Q5_0, Q4_K_M (= Q4_K),
 * Q4_K_S, Q4_1, Q4_0. ftype may be NULL. */
bool pt_qtype_parse(const char *name, uint32_t *type, uint32_t *ftype);

/* Tensors llama-quantize orders before one another: by the layer number
 * of "blk.N." (none: -1, first), then by name (bytewise). */
int pt_qpolicy_order(const pt_gguf_str *a, const pt_gguf_str *b);

#endif
