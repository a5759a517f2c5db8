/*
 * convert_internal.h — shared pieces of `petrel convert` (engine/convert_*.c).
 * Internal to the engine.
 *
 * cv_kv: a growing list of GGUF metadata entries (pt_gguf_kv, in the
 * order they are added, as gguf-py's GGUFWriter keeps them) that owns
 * every string and array it holds; setting a key that is already there
 * replaces its value in place.
 *
 * cv_json_*: cJSON helpers that read a file (bounded) and fetch typed
 * members without trusting the document's shape.
 */
#ifndef PETREL_CONVERT_INTERNAL_H
#define PETREL_CONVERT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "petrel.h"
#include "safetensors.h"

typedef struct cJSON cJSON;

typedef struct cv_kv {
    pt_gguf_kv *kv;
    uint64_t n, cap;
    void **owned;      /* every allocation behind kv, freed by cv_kv_free */
    size_t n_owned, cap_owned;
    bool oom;          /* an allocation failed: the list is incomplete */
} cv_kv;

void cv_kv_free(cv_kv *l);
void cv_kv_str(cv_kv *l, const char *key, const char *s, size_t n);
void cv_kv_cstr(cv_kv *l, const char *key, const char *s);
void cv_kv_u32(cv_kv *l, const char *key, uint32_t v);
void cv_kv_i32(cv_kv *l, const char *key, int32_t v);
void cv_kv_f32(cv_kv *l, const char *key, float v);
void cv_kv_bool(cv_kv *l, const char *key, bool v);
/* A scalar array: n elements of elem_type, copied from raw (little-endian). */
void cv_kv_arr(cv_kv *l, const char *key, pt_gguf_type elem_type, const void *raw, uint64_t n);
/* A string array of n empty strings; fill element i with cv_kv_arr_set. */
pt_gguf_value *cv_kv_str_arr(cv_kv *l, const char *key, uint64_t n);
void cv_kv_arr_set(cv_kv *l, pt_gguf_value *item, const char *s, size_t n);
/* The value under key, or NULL. */
pt_gguf_value *cv_kv_get(cv_kv *l, const char *key);
/* Remove key if present (later entries move up). */
void cv_kv_del(cv_kv *l, const char *key);

/* ---- JSON ---------------------------------------------------------------- */

#define CV_MAX_JSON ((size_t)256 << 20) /* tokenizer.json of big vocabularies: ~20 MB */
#define CV_MAX_VOCAB (1 << 24)          /* vocab_size accepted (the largest real ones: ~260k) */

/* Read and parse dir/name (name may be NULL: dir is the file). *out NULL
 * and PT_OK when missing and !required. */
pt_status cv_json_load(const char *dir, const char *name, bool required, cJSON **out, pt_error *err);
/* Parse a buffer (fuzzing, tests); label names it in messages. */
pt_status cv_json_parse(const char *data, size_t n, const char *label, cJSON **out, pt_error *err);

/* Typed members: false when absent or of another type. */
bool cv_json_int(const cJSON *o, const char *key, int64_t *out);
bool cv_json_num(const cJSON *o, const char *key, double *out);
bool cv_json_bool(const cJSON *o, const char *key, bool *out);
const char *cv_json_str(const cJSON *o, const char *key);
const cJSON *cv_json_obj(const cJSON *o, const char *key);
const cJSON *cv_json_arr(const cJSON *o, const char *key);

/* ---- tokenizer ----------------------------------------------------------- */

/* The tokenizer.* keys llama.cpp's converter writes for a model folder
 * (convert_tokenizer.c): SentencePiece from tokenizer.model when
 * prefer_spm and it exists ("llama"), else the byte-level BPE of
 * tokenizer.json ("gpt2"). n_vocab: config's vocab_size (the token list is
 * padded to it). config: the parsed config.json (special ids fallback).
 * *n_tokens: the length of the token list written. */
pt_status cv_tokenizer(cv_kv *kv, const char *dir, const cJSON *config, int64_t n_vocab, bool prefer_spm,
                       int64_t *n_tokens, pt_error *err);

/* One SentencePiece model proto (tokenizer.model) read (convert_spm.c).
 * pieces[i] is NUL-terminated (a piece holds no NUL), types are
 * SentencePiece's enum (1 normal, 2 unknown, 3 control, 4 user defined,
 * 5 unused, 6 byte). */
typedef struct cv_spm {
    int64_t n;
    char **pieces;
    float *scores;
    int32_t *types;
} cv_spm;
pt_status cv_spm_parse(const uint8_t *data, size_t n, const char *label, cv_spm *out, pt_error *err);
void cv_spm_free(cv_spm *s);

/* gguf-py's SpecialVocab (convert_special.c): tokenizer.ggml.merges (when
 * merges), the special ids (below n_vocab when > 0) and add_* flags. */
pt_status cv_special_vocab(cv_kv *kv, const cJSON *tj, const cJSON *tcfg, const cJSON *config, const char *dir,
                           int64_t n_vocab, bool merges, pt_error *err);
/* tokenizer.chat_template: tokenizer_config.json's, else chat_template.jinja,
 * else chat_template.json's. */
pt_status cv_chat_template(cv_kv *kv, const cJSON *tcfg, const char *dir, pt_error *err);
/* o is an object whose "type" member is the string type. */
bool cv_json_is_type(const cJSON *o, const char *type);

/* tokenizer.ggml.pre for a tokenizer.json (see convert_tokenizer.c). */
const char *cv_pre_name(const cJSON *tokenizer_json);

/* ---- Hugging Face LLM folders (convert_hf.c, convert_hparams.c) -------- */

typedef enum cv_family { CV_LLAMA, CV_QWEN2, CV_QWEN3, CV_GEMMA3 } cv_family;

/* One conversion in progress. */
typedef struct cv_hf {
    const char *dir;
    cv_family fam;
    const char *arch;
    cJSON *config;
    st_file **shards;
    int n_shards;
    struct cv_item *items;
    int n_items;
    int64_t n_params;
    cv_kv kv;
    /* hyperparameters the tensors need */
    int64_t n_head, n_head_kv, n_vocab_tok, n_embd, n_ff, head_dim, n_vocab;
    float *rope_freqs;  /* llama3 rope: rope_freqs.weight (n_rope_freqs), else NULL */
    int64_t n_rope_freqs;
} cv_hf;

/* The {arch}.* keys (and general.file_type, general.quantization_version)
 * from c->config into c->kv; sets the hyperparameters in c. */
pt_status cv_hf_hparams(cv_hf *c, uint32_t ftype, pt_error *err);
/* id_to_title of gguf-py's metadata.py (convert_name.c): words split at
 * '-' and spaces, each all-lowercase word title-cased unless it is a
 * version or starts with a digit, joined by spaces. */
void cv_general_name(const char *id, char *out, size_t cap);
/* The general.* naming keys gguf-py derives from a model id ("org/name" or
 * a folder name), for a model of total parameters (convert_name.c). */
typedef struct cv_name {
    bool has_name, has_organization, has_basename, has_finetune, has_version, has_size_label;
    char name[256], organization[128], basename[256], finetune[256], version[128], size_label[128];
} cv_name;
void cv_name_parts(const char *model_id, int64_t total, cv_name *out);
/* general.size_label of n parameters ("116K", "1.5B"), gguf-py's
 * model_weight_count_rounded_notation. */
void cv_size_label(int64_t n, char *out, size_t cap);
/* Convert the folder dir to out with matrices of type (ftype its
 * LLAMA_FTYPE). */
pt_status cv_convert_hf(const char *dir, const char *out, const pt_convert_params *p, uint32_t type,
                        uint32_t ftype, pt_convert_result *res, pt_error *err);
/* The widest float type of the folder's safetensors (F32 / F16 / BF16). */
pt_status cv_hf_source_type(const char *dir, uint32_t *type, pt_error *err);

/* pt_convert_file for a Stable Diffusion checkpoint (convert_sd.c). */
pt_status pt_convert_sd(const char *in, const char *out, const pt_convert_params *p, pt_convert_result *res,
                        pt_error *err);

#endif
