/*
 * ui.h — the full-screen terminal app (ncursesw). The app's main() calls
 * pt_ui_run when petrel is started without a subcommand. The UI uses only
 * the engine's public header, petrel.h.
 */
#ifndef PETREL_UI_H
#define PETREL_UI_H

#include <stdbool.h>

typedef struct pt_ui_options {
    const char *model_path;   /* GGUF to open; NULL = the default model */
    const char *data_dir;     /* user data directory (models/, chats/) */
    int n_threads;            /* 0 = all cores */
    int n_ctx;                /* 0 = default */
    bool demo;                /* start in demo mode */
    int n_predict;            /* max tokens per reply; 0 = default (256), /max changes it */
    const char *color;        /* "auto" or NULL, "256", "16", "8", "mono"; NO_COLOR
                                 in the environment means mono unless this is set */
    bool no_mouse;            /* leave the mouse to the terminal (no wheel scrolling) */
    const char *graphics;     /* picture protocol: auto (or NULL: PETREL_GRAPHICS, else
                                 auto), sixel, kitty, iterm2, symbols, none */
    const char *image_model;  /* the studio's image model; NULL: none found */
    const char *image_model_why; /* why none was found (one line) */
} pt_ui_options;

/* Run the app until the user quits. Returns the process exit status; the
 * terminal is restored on every path. */
int pt_ui_run(const pt_ui_options *opts);

#endif
