/*
 * catalog.h — the catalog as the commands see it, and the one place where
 * a model argument (-m NAME|PATH) becomes a file.
 *
 * Where the catalog comes from, in order (the first that exists is the
 * base; the user's file is read over it):
 *   1. $PETREL_CATALOG, when set (a file; tests and packagers);
 *   2. PREFIX/share/petrel/models.toml beside the executable (installed
 *      with petrel: a distribution may edit it);
 *   3. the copy of the repository's models.toml compiled into the binary
 *      (a petrel copied alone, without share/, still knows every name);
 * then $XDG_CONFIG_HOME/petrel/models.toml (else ~/.config/petrel/...),
 * when present: adds entries and overrides keys of existing ones.
 */
#ifndef PETREL_APP_CATALOG_H
#define PETREL_APP_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "petrel.h"

/* Load the catalog; NULL after printing a one-line error. */
pt_catalog *app_catalog_load(void);
/* The same without printing: NULL with the error in err. */
pt_catalog *app_catalog_open(pt_error *err);

/* What a model argument names, as a path into buf:
 *   NULL             the default model of that kind (the README's default
 *                    LLM in the data directory; the bundled demo image model)
 *   an existing file or folder, or anything with a "/": that path
 *   a catalog ID     its file in DATA_DIR/models (bundled: the assets');
 *                    not there yet: an error saying `petrel pull ID`
 *   a file name in DATA_DIR/models (with or without ".gguf")
 * Returns buf or the given path, or NULL after printing a one-line error.
 * A model found in DATA_DIR/models has its last use recorded (below). */
const char *app_resolve_model(const char *given, pt_model_kind kind, char *buf, size_t cap);

/* "Last used" of the files in DATA_DIR/models: an empty stamp file
 * DATA_DIR/models/.used/FILE whose mtime is the last time a command
 * resolved FILE (file access times are not kept on most phones and many
 * mounts: relatime/noatime). Best effort: failures are ignored. */
void app_mark_used(const char *models_dir, const char *file);
/* mtime of FILE's stamp, 0 when never recorded. */
long long app_last_used(const char *models_dir, const char *file);

/* Hugging Face's token: $HF_TOKEN, else the file huggingface-cli login
 * writes ($HF_TOKEN_PATH, else $HF_HOME/token, else
 * $XDG_CACHE_HOME/huggingface/token, else ~/.cache/huggingface/token).
 * Into buf; false when none. */
bool app_hf_token(char *buf, size_t cap);

#endif
