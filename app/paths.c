/* paths.c — user data directory and default model locations. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"

#define PT_DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

/* "$base/suffix" into buf; false (and why) when it does not fit. */
static bool join_dir(const char *var, const char *base, const char *suffix, char *buf, size_t cap,
                     char *why, size_t why_cap) {
    int n = snprintf(buf, cap, "%s%s", base, suffix);
    if (n > 0 && (size_t)n < cap) return true;
    snprintf(why, why_cap, "%s is too long (%zu bytes; the data directory must fit in %zu): shorten it",
             var, strlen(base), cap - 1);
    return false;
}

bool pt_app_data_dir(char *buf, size_t cap, char *why, size_t why_cap) {
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    /* The XDG base directory spec: a relative path in XDG_DATA_HOME is
     * invalid and must be ignored (it would put files under the current
     * directory); an empty one is the same as unset. */
    if (xdg && xdg[0] == '/') return join_dir("XDG_DATA_HOME", xdg, "/petrel", buf, cap, why, why_cap);
    if (!home || !*home) {
        snprintf(why, why_cap, "cannot work out the data directory: HOME is not set%s "
                 "(set HOME, or XDG_DATA_HOME to an absolute path)",
                 xdg && *xdg ? " and XDG_DATA_HOME is not an absolute path" : "");
        return false;
    }
    if (home[0] != '/') {
        snprintf(why, why_cap, "cannot work out the data directory: HOME ('%.200s') is not an absolute path%s",
                 home, xdg && *xdg ? ", nor is XDG_DATA_HOME" : "");
        return false;
    }
    return join_dir("HOME", home, "/.local/share/petrel", buf, cap, why, why_cap);
}

bool pt_app_default_model(char *buf, size_t cap, char *why, size_t why_cap) {
    char dir[4096];
    if (!pt_app_data_dir(dir, sizeof dir, why, why_cap)) return false;
    int n = snprintf(buf, cap, "%s/models/%s", dir, PT_DEFAULT_MODEL_FILE);
    if (n > 0 && (size_t)n < cap) return true;
    snprintf(why, why_cap, "the default model's path under %.200s... is too long", dir);
    return false;
}

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* "$dir/rel" into buf if it fits and exists; the place is appended to the
 * list in why either way. */
static bool try_assets(const char *dir, const char *rel, char *buf, size_t cap, char *why, size_t why_cap) {
    int n = snprintf(buf, cap, "%s/%s", dir, rel);
    if (n > 0 && (size_t)n < cap && is_file(buf)) return true;
    size_t used = strlen(why);
    if (used + 1 < why_cap)
        snprintf(why + used, why_cap - used, "%s%.300s/%.200s", used ? ", " : "", dir, rel);
    return false;
}

bool pt_app_share_dir(char *buf, size_t cap) {
    /* PREFIX/bin/petrel -> PREFIX/share/petrel */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = 0;
    slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = 0;
    int w = snprintf(buf, cap, "%s/share/petrel", exe);
    return w > 0 && (size_t)w < cap;
}

bool pt_app_asset(const char *rel, char *buf, size_t cap, char *why, size_t why_cap) {
    if (why_cap) why[0] = 0;
    const char *env = getenv("PETREL_ASSETS");
    if (env && *env) return try_assets(env, rel, buf, cap, why, why_cap);
    char dir[4096 + 32];
    if (pt_app_share_dir(dir, sizeof dir - 8)) {
        strcat(dir, "/assets");
        if (try_assets(dir, rel, buf, cap, why, why_cap)) return true;
    }
#ifdef PETREL_ASSET_DIR
    if (try_assets(PETREL_ASSET_DIR, rel, buf, cap, why, why_cap)) return true;
#endif
    return false;
}

bool pt_app_default_image_model(char *buf, size_t cap, char *why, size_t why_cap) {
    return pt_app_asset(PT_DEFAULT_IMAGE_ASSET, buf, cap, why, why_cap);
}

bool pt_app_models_dir(char *buf, size_t cap, char *why, size_t why_cap) {
    char dir[4096];
    if (!pt_app_data_dir(dir, sizeof dir, why, why_cap)) return false;
    int n = snprintf(buf, cap, "%s/models", dir);
    if (n > 0 && (size_t)n < cap) return true;
    snprintf(why, why_cap, "the models folder under %.200s... is too long", dir);
    return false;
}

bool pt_app_config_file(const char *name, char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(buf, cap, "%s/petrel/%s", xdg, name);
    else if (home && home[0] == '/') n = snprintf(buf, cap, "%s/.config/petrel/%s", home, name);
    else return false;
    return n > 0 && (size_t)n < cap;
}
