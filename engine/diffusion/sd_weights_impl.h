/*
 * sd_weights_impl.h — what the loaders of sd_weights.h share: the
 * sd_weights struct, the table of canonical tensors, and helpers. Each
 * source has its own file: sd_weights_diffusers.c (folders),
 * sd_weights_ldm.c (single-file LDM checkpoints), sd_weights_gguf.c
 * (petrel's image GGUF); sd_config_parse.c reads diffusers' config.json
 * files; sd_weights.c opens, looks up and releases.
 */
#ifndef PETREL_SD_WEIGHTS_IMPL_H
#define PETREL_SD_WEIGHTS_IMPL_H

#include "gguf.h"
#include "safetensors.h"
#include "sd_weights.h"

#include <cjson/cJSON.h>

/* One canonical tensor: its name (heap) and a view into a mapping. */
typedef struct sd_entry {
    char *name;
    sd_tensor t;
} sd_entry;

#define SD_MAX_FILES 64 /* safetensors files held open (shards, components) */

struct sd_weights {
    sd_model_config cfg;
    /* Mappings the entries point into; closed by sd_weights_close. */
    st_file *files[SD_MAX_FILES];
    int n_files;
    pt_gguf *gguf;
    /* Canonical tensors; sorted by name (strcmp) once loading is done,
     * names unique. */
    sd_entry *e;
    size_t n, cap;
    /* Tokenizer files as text, NUL-terminated, heap (NULL when none). */
    char *vocab, *merges;
    size_t vocab_len, merges_len;
};

/* ---- sd_weights.c ---- */

/* Keep f open for the life of w (closes f and fails when the table is full). */
pt_status sd_w_keep(sd_weights *w, st_file *f, pt_error *err);
/* Add a tensor under a canonical name (copied). */
pt_status sd_w_add(sd_weights *w, const char *name, const sd_tensor *t, pt_error *err);
/* Add a safetensors tensor as is (torch layout); a non-float dtype is
 * PT_ERR_UNSUPPORTED naming file and tensor. */
pt_status sd_w_add_st(sd_weights *w, const char *name, const st_file *f, const st_tensor *t,
                      pt_error *err);
/* An sd_tensor view of a safetensors tensor (dtype already checked). */
void sd_tensor_from_st(const st_tensor *t, sd_tensor *out);
/* A whole text file into a heap NUL-terminated buffer (regular files only). */
pt_status sd_read_text(const char *path, char **out, size_t *len, pt_error *err);
/* path + "/" + name into buf; PT_ERR_ARG when it does not fit. */
pt_status sd_join(char *buf, size_t cap, const char *dir, const char *name, pt_error *err);
bool sd_is_dir(const char *path);
bool sd_is_file(const char *path);
/* Entry lookup (entries must be sorted). */
const sd_entry *sd_w_find(const sd_weights *w, const char *name);

/* ---- sd_config_parse.c ---- */

/* SD 1.x defaults for every field (the LDM inference and the GGUF reader
 * start from them). */
void sd_config_defaults(sd_model_config *c);
/* diffusers / transformers config.json objects into the structs; `file`
 * names the file in messages. Missing keys keep the value already there. */
pt_status sd_parse_clip_config(const cJSON *j, const char *file, sd_clip_config *c, pt_error *err);
pt_status sd_parse_unet_config(const cJSON *j, const char *file, sd_unet_config *c, pt_error *err);
pt_status sd_parse_vae_config(const cJSON *j, const char *file, sd_vae_config *c, pt_error *err);
pt_status sd_parse_taesd_config(const cJSON *j, const char *file, sd_taesd_config *c,
                                pt_error *err);
pt_status sd_parse_schedule_config(const cJSON *j, const char *file, sd_schedule_config *c,
                                   pt_error *err);
/* Read and parse a JSON file (caller frees with cJSON_Delete). */
pt_status sd_load_json(const char *path, cJSON **out, pt_error *err);
/* Token ids of the CLIP specials from vocab.json text: bos
 * "<|startoftext|>", eos "<|endoftext|>" (left unchanged when absent);
 * pad_token (a token string) likewise into pad; with pad_token NULL a
 * pad equal to the old eos follows the new eos (SD 1.x pads with eos). */
void sd_clip_ids_from_vocab(const char *vocab_json, const char *pad_token, sd_clip_config *c);
/* Checks that keep later code in range: positive sizes, levels within
 * SD_MAX_LEVELS, channels divisible by groups and heads. */
pt_status sd_config_validate(const sd_model_config *c, const char *src, pt_error *err);

/* ---- the loaders ---- */
pt_status sd_load_diffusers(sd_weights *w, const char *dir, pt_error *err);
pt_status sd_load_ldm(sd_weights *w, const char *path, pt_error *err);
pt_status sd_load_gguf(sd_weights *w, const char *path, pt_error *err);
/* TAESD from a diffusers AutoencoderTiny folder or a .safetensors file. */
pt_status sd_load_taesd(sd_weights *w, const char *path, pt_error *err);
/* vocab.json + merges.txt from a folder into w (replacing any). */
pt_status sd_load_tokenizer(sd_weights *w, const char *dir, pt_error *err);

#endif
