/*
 * lora.h — LoRA adapters: reading them (PEFT folders and llama.cpp GGUF
 * adapter files), binding them to a loaded model, and what a pt_lora
 * holds. Internal to the engine (the public side is pt_lora_* in
 * petrel.h; the product is matmul.h's pt_lora_pair / pt_lora_run).
 *
 * An adapter of a matrix W [rows x cols] is a pair A [rank x cols],
 * B [rows x rank] and a scale: W x becomes W x + scale * B (A x).
 *
 * PEFT (peft's save_pretrained): a folder holding
 *   adapter_config.json        r, lora_alpha, use_rslora, target_modules,
 *                              fan_in_fan_out, base_model_name_or_path, ...
 *   adapter_model.safetensors  per adapted module
 *     base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in]
 *     base_model.model.model.layers.N.self_attn.q_proj.lora_B.weight [out, r]
 *     (mlp.gate_proj / up_proj / down_proj, self_attn.k/v/o_proj alike;
 *     base_model.model.lm_head.lora_A.weight for the output matrix)
 *   scale = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora, r
 *   the pair's own rank (rank_pattern is then honoured by the shapes).
 *   fan_in_fan_out only says how the base weight is stored (GPT-2's
 *   Conv1D); lora_A / lora_B are nn.Linear layouts either way, so the
 *   product is the same. Rows of B for q_proj / k_proj of a llama model
 *   are permuted at binding as llama.cpp's converter permutes the base's
 *   rows (the GGUF base uses interleaved rope pairs; see lora_bind.c).
 *
 * GGUF (llama.cpp's convert_lora_to_gguf.py): general.type = "adapter",
 *   general.architecture = the base's, adapter.type = "lora",
 *   adapter.lora.alpha (f32; absent or 0: scale 1), and per adapted
 *   matrix NAME (the base's tensor name, "blk.N.attn_q.weight")
 *     NAME.lora_a  ne = [cols, rank]   (A, row-major [rank x cols])
 *     NAME.lora_b  ne = [rank, rows]   (B, row-major [rows x rank])
 *   F32, F16, BF16 or Q8_0. scale = alpha / rank (llama.cpp's rule; its
 *   converter ignores use_rslora, so an rsLoRA adapter converted by it
 *   carries the wrong alpha).
 *
 * The factors are kept as float32 heap copies (small: rank x (rows + cols)
 * floats per matrix) and, once bound to a model whose CPU variant has
 * int8 kernels, as the int8 path's Q8_0 copies too (matmul.h; 0.27 of
 * the float bytes at rank 16); the base model's weights are never
 * copied.
 */
#ifndef PETREL_LORA_H
#define PETREL_LORA_H

#include "petrel.h"

#include <stdbool.h>
#include <stdint.h>

struct pt_llm;
struct pt_lora_pair; /* matmul.h */

/* A pair as read, before binding: the base tensor it adapts by name. */
typedef struct pt_lora_raw {
    char target[64];  /* GGUF name of the base matrix: "blk.3.attn_q.weight", "output.weight" */
    int layer;        /* N of blk.N, or -1 */
    bool hf_qk;       /* PEFT q_proj / k_proj (HF row order: permuted at binding for llama) */
    int64_t rows, cols;
    int rank;
    float *a;         /* [rank][cols], inside pt_lora.mem */
    float *b;         /* [rows][rank], inside pt_lora.mem */
    float scale;
} pt_lora_raw;

struct pt_lora {
    char format[8];           /* "peft" or "gguf" */
    char arch[32];            /* GGUF general.architecture, "" for PEFT */
    char base[256];           /* base model hint: base_model_name_or_path / general.base_model.0.name */
    char targets[256];        /* adapted modules, comma-separated */
    float alpha;
    int rank;                 /* largest rank of its pairs (the config's r for PEFT) */
    bool rslora;
    int n_pairs;
    pt_lora_raw *raw;         /* [n_pairs] */
    float *mem;               /* every A and B */
    uint64_t bytes;           /* heap bytes of A and B (float32) */
    uint64_t bytes_q8;        /* heap bytes of their int8 copies once bound (matmul.h), 0 without */
    const struct pt_llm *llm; /* bound model, or NULL (read for its info only) */
    struct pt_lora_pair *pairs; /* [n_pairs] bound, sorted by target address */
};

/* Read an adapter: a PEFT folder (or its adapter_model.safetensors or
 * adapter_config.json), or a GGUF adapter file. Unbound. */
pt_status pt_lora_read(const char *path, pt_lora **out, pt_error *err);
/* The same from memory (tests, fuzzing): the config JSON and the
 * safetensors bytes of a PEFT adapter; a GGUF adapter file. label names
 * the input in messages. */
pt_status pt_lora_read_peft_memory(const char *config, size_t config_len, const void *st, uint64_t st_len,
                                   const char *label, pt_lora **out, pt_error *err);
pt_status pt_lora_read_gguf_memory(const void *data, uint64_t len, const char *label, pt_lora **out,
                                   pt_error *err);
/* Put B's rows of a PEFT q_proj / k_proj pair in the GGUF base's order:
 * permuted (lora_bind.c) when the base is a llama (llama.cpp's converter
 * permutes those rows of a llama base, n_head heads for Q, n_head_kv for
 * K), unchanged otherwise; clears hf_qk, so a second call does nothing. */
pt_status pt_lora_raw_gguf_rows(pt_lora_raw *r, bool llama, int n_head, int n_head_kv, pt_error *err);
/* Bind to a model: find each pair's matrix, check its shape, order B's
 * rows as the model's (llama Q/K), sort. A pair naming a matrix the model
 * does not have or of another shape is an error saying the adapter is for
 * another base model. */
pt_status pt_lora_bind(pt_lora *l, const struct pt_llm *m, pt_error *err);
/* Free bound pairs and their int8 factors. */
void pt_lora_pairs_free(struct pt_lora_pair *pairs, int n);
/* pt_lora_bind to a loaded model's decoder. */
pt_status pt_lora_bind_model(pt_lora *l, const pt_model *model, pt_error *err);
/* Check a read adapter against the base model's GGUF at path (`flag`
 * names it in messages: "--base", "-m"): not an adapter itself, the same
 * architecture, every adapted matrix there with the adapter's shape; B's
 * rows of PEFT Q/K pairs put in the GGUF's order (pt_lora_raw_gguf_rows).
 * arch receives the base's general.architecture. */
pt_status pt_lora_check_base(pt_lora *l, const char *path, const char *flag, char *arch, size_t arch_cap,
                             pt_error *err);
/* `petrel convert` of a PEFT adapter folder (lora_convert.c): the GGUF
 * form llama.cpp's convert_lora_to_gguf.py writes, checked against the
 * base model's GGUF p->base (its architecture, head counts, shapes). */
pt_status pt_lora_convert(const char *in, const char *out, const pt_convert_params *p, pt_convert_result *res,
                          pt_error *err);

#endif
