/*
 * paths.h — where petrel keeps user files. The data directory is
 * $XDG_DATA_HOME/petrel, else $HOME/.local/share/petrel (on Termux $HOME
 * is the app's home, so the same rule holds there).
 */
#ifndef PETREL_PATHS_H
#define PETREL_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Write the data directory into buf; returns false if it does not fit. */
bool pt_app_data_dir(char *buf, size_t cap);
/* Path of the default model (models/SmolLM2-135M-Instruct.Q4_1.gguf under
 * the data directory). */
bool pt_app_default_model(char *buf, size_t cap);

#endif
