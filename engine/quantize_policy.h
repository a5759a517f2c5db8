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
    uint32_t output_type;     /* override for output.weight (and a tied token_embd), or NONE */
    uint32_t token_embd_type; /* override for token_embd.weight, or NONE */
    bool leave_output;        /* output.weight is not quantized */
    bool tied;                /* the model has no output.weight: token_embd serves as it */
    bool falcon;              /* general.architecture "falcon" (output gets Q8_0) */
    bool eight_experts;       /* {arch}.expert_count == 8: attn_k / attn_v get Q8_0 */
} pt_qpolicy;

/* The policy's facts about a model: tied, falcon, eight_experts. */
void pt_qpolicy_from_model(pt_qpolicy *p, const pt_gguf *g);

/* The type tensor t gets. *fallback is set when its row length forced a
 * fallback (llama-quantize warns then). */
uint32_t pt_qpolicy_type(const pt_qpolicy *p, const pt_gguf_tensor *t, bool *fallback);

/* ggml_n_dims: the dimensions up to the last one longer than 1 (at least
 * 1). What ggml's writer records as n_dims, and what llama-quantize calls
 * a 1-D tensor. */
int pt_qpolicy_n_dims(const pt_gguf_tensor *t);

/* llama-quantize's target names (case-insensitive) -> enum pt_type:
 * F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K. */
bool pt_qtype_parse(const char *name, uint32_t *type);

/* llama.cpp's LLAMA_FTYPE_MOSTLY_* (general.file_type) of a target. */
uint32_t pt_qtype_ftype(uint32_t type);

/* Tensors llama-quantize orders before one another: by the layer number
 * of "blk.N." (none: -1, first), then by name (bytewise). */
int pt_qpolicy_order(const pt_gguf_str *a, const pt_gguf_str *b);

#endif
