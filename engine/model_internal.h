/*
 * model_internal.h — what a pt_model and a pt_context hold. Internal to the
 * engine: the public header keeps both opaque.
 */
#ifndef PETREL_MODEL_INTERNAL_H
#define PETREL_MODEL_INTERNAL_H

#include "chat_template.h"
#include "gguf.h"
#include "llm.h"
#include "lora.h"
#include "matmul.h"
#include "petrel.h"
#include "tokenizer.h"

struct pt_model {
    pt_gguf *gguf;            /* the mapping every weight points into */
    pt_llm *llm;              /* hyperparameters + weight views */
    pt_tokenizer *tok;
    pt_chat_template tmpl;
    char *name;               /* general.name, "" when absent (heap) */
    const char *ftype;        /* dominant matrix type name (static string) */
    int64_t n_params;         /* elements over all tensors */
    uint64_t weight_bytes;    /* bytes of tensor data */
    bool metadata_only;       /* loaded without weights: no context may run it */
    char device_note[320];    /* why an OpenCL load runs on the CPU, or "" */
};

struct pt_context {
    pt_model *model;
    pt_llm_state *state;
    int n_ctx, n_batch;
    float *logits;            /* [n_vocab]: after the last decoded token */
    bool have_logits;         /* false until the first pt_decode */
    pt_lora_run lora;         /* the active adapters (pt_context_set_loras), given to
                                 the run state; lora.u is owned here */
    size_t lora_u_floats;     /* capacity of lora.u */
    size_t lora_qu_cap;       /* bytes of lora.qu */
    size_t lora_tmp_cap;      /* floats of lora.tmp */
    bool lora_f32;            /* pt_context_params.lora_f32 */
    uint64_t lora_bytes;      /* factor bytes of the active adapters (float and int8) */
    pt_token *toks;           /* [n_ctx]: toks[0..n_past) are the tokens in the KV cache */
    pt_context_counters counters; /* pt_context_get_counters */
};

/* Name of the tensor type holding most bytes among the matrices (2-D
 * tensors): what users call the file's quantization ("Q4_1"). */
const char *pt_model_dominant_type(const pt_gguf *g);

#endif
