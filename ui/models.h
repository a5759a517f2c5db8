/*
 * models.h — the local models the picker offers: every *.gguf file in
 * DATA_DIR/models (symlinks followed; this is also where the fetcher puts
 * the models.toml catalog's downloads), plus the model currently open when
 * it lives elsewhere (petrel -m PATH). Metadata (architecture, quant,
 * parameters) is filled in later from the worker's probes.
 */
#ifndef PETREL_UI_MODELS_H
#define PETREL_UI_MODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "worker.h"

typedef struct pt_model_entry {
    char path[4096];
    char name[256];       /* file name without the folder */
    uint64_t bytes;
    bool probed;          /* card/error below are valid */
    bool probe_sent;
    bool bad;             /* probing failed: error holds why */
    char error[160];
    pt_model_card card;
} pt_model_entry;

typedef struct pt_model_list {
    pt_model_entry *items;
    int n, cap;
} pt_model_list;

/* Rescan, keeping the probe results of files still present. extra (may
 * be NULL) is added when not already listed. */
void pt_models_scan(pt_model_list *l, const char *data_dir, const char *extra);
void pt_models_free(pt_model_list *l);
pt_model_entry *pt_models_find(pt_model_list *l, const char *path);
/* Resolve a /model argument: an index (1-based), a file name with or
 * without ".gguf", a unique prefix of one, or a path. */
const char *pt_models_resolve(pt_model_list *l, const char *arg, char *buf, size_t cap);

#endif
