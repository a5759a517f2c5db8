/*
 * paths.h — where petrel keeps user files. The data directory is
 * $XDG_DATA_HOME/petrel, else $HOME/.local/share/petrel (on Termux $HOME
 * is the app's home, so the same rule holds there). A relative
 * XDG_DATA_HOME is ignored (XDG base directory spec); a missing or
 * relative HOME is an error, never the current directory.
 */
#ifndef PETREL_PATHS_H
#define PETREL_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Write the data directory into buf; on failure returns false with a
 * one-line reason in why (what is wrong and how to fix it). */
bool pt_app_data_dir(char *buf, size_t cap, char *why, size_t why_cap);
/* Path of the default model (models/SmolLM2-135M-Instruct.Q4_1.gguf under
 * the data directory); false with a reason as above. */
bool pt_app_default_model(char *buf, size_t cap, char *why, size_t why_cap);

/* The default image model, the bundled demo model (assets/demo-sd/ in
 * the source tree), looked for in turn:
 *   1. $PETREL_ASSETS/demo-sd/... when PETREL_ASSETS is set (and only
 *      there: the override also lets tests hide the others);
 *   2. ../share/petrel/assets/ next to the executable (an installed petrel:
 *      PREFIX/bin/petrel, PREFIX/share/petrel/assets);
 *   3. the source tree's assets/ (PETREL_ASSET_DIR, compiled in: a petrel
 *      run from its build tree).
 * The first that exists goes into buf; false with the places looked in
 * (or why the path does not fit) in why. */
bool pt_app_default_image_model(char *buf, size_t cap, char *why, size_t why_cap);
/* A bundled file (rel: its path under assets/, e.g. "demo-sd/x.gguf"),
 * looked for in the same places in the same order. */
bool pt_app_asset(const char *rel, char *buf, size_t cap, char *why, size_t why_cap);
/* PREFIX/share/petrel for the running executable (PREFIX/bin/petrel);
 * false when /proc/self/exe cannot be read or the path does not fit. */
bool pt_app_share_dir(char *buf, size_t cap);
/* DATA_DIR/models: where pulled models go; false with a reason. */
bool pt_app_models_dir(char *buf, size_t cap, char *why, size_t why_cap);
/* $XDG_CONFIG_HOME/petrel/NAME (an absolute XDG_CONFIG_HOME only), else
 * $HOME/.config/petrel/NAME; false when neither is usable. */
bool pt_app_config_file(const char *name, char *buf, size_t cap);

/* The bundled demo image model under an assets directory. */
#define PT_DEFAULT_IMAGE_ASSET "demo-sd/demo-sd-q8_0.gguf"

#endif
