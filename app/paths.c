/* paths.c — user data directory and default model location. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "paths.h"

#define PT_DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

bool pt_app_data_dir(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, cap, "%s/petrel", xdg);
    else
        n = snprintf(buf, cap, "%s/.local/share/petrel", home && *home ? home : ".");
    return n > 0 && (size_t)n < cap;
}

bool pt_app_default_model(char *buf, size_t cap) {
    char dir[4096];
    if (!pt_app_data_dir(dir, sizeof dir)) return false;
    int n = snprintf(buf, cap, "%s/models/%s", dir, PT_DEFAULT_MODEL_FILE);
    return n > 0 && (size_t)n < cap;
}
