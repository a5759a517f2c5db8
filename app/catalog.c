/* catalog.c — loading the catalog and resolving model arguments (catalog.h). */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "paths.h"

/* generated from models.toml by CMakeLists.txt */
extern const unsigned char pt_app_catalog_text[];
extern const size_t pt_app_catalog_len;

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

pt_catalog *app_catalog_open(pt_error *err) {
    pt_catalog *c = NULL;
    if (pt_catalog_new(&c, err) != PT_OK) return NULL;
    const char *env = getenv("PETREL_CATALOG");
    char share[4096 + 16];
    pt_status st;
    if (env && *env) {
        st = pt_catalog_add_file(c, env, err);
    } else if (pt_app_share_dir(share, sizeof share - 16) && (strcat(share, "/models.toml"), is_file(share))) {
        st = pt_catalog_add_file(c, share, err);
    } else {
        st = pt_catalog_add_text(c, (const char *)pt_app_catalog_text, pt_app_catalog_len,
                                 "models.toml (built in)", err);
    }
    char user[4096];
    if (st == PT_OK && pt_app_config_file("models.toml", user, sizeof user) && is_file(user))
        st = pt_catalog_add_file(c, user, err);
    if (st != PT_OK) {
        pt_catalog_free(c);
        return NULL;
    }
    return c;
}

pt_catalog *app_catalog_load(void) {
    pt_error err = {0};
    pt_catalog *c = app_catalog_open(&err);
    if (!c) app_fail(&err);
    return c;
}

/* ---- last used --------------------------------------------------------- */

static bool stamp_path(const char *models_dir, const char *file, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s/.used/%s", models_dir, file);
    return n > 0 && (size_t)n < cap && !strchr(file, '/');
}

void app_mark_used(const char *models_dir, const char *file) {
    char path[8300], dir[4200];
    if (!stamp_path(models_dir, file, path, sizeof path)) return;
    snprintf(dir, sizeof dir, "%s/.used", models_dir);
    mkdir(dir, 0755);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    futimens(fd, NULL); /* mtime = now */
    close(fd);
}

long long app_last_used(const char *models_dir, const char *file) {
    char path[8300];
    struct stat st;
    if (!stamp_path(models_dir, file, path, sizeof path) || stat(path, &st) != 0) return 0;
    return (long long)st.st_mtime;
}

/* ---- model arguments --------------------------------------------------- */

/* DATA_DIR/models/name when that file exists. */
static bool in_models(const char *dir, const char *name, char *buf, size_t cap) {
    if (!*name || strchr(name, '/') || name[0] == '.') return false;
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    return n > 0 && (size_t)n < cap && is_file(buf);
}

static const char *by_catalog(const pt_catalog_entry *e, pt_model_kind kind, const char *dir, char *buf,
                              size_t cap) {
    char why[1024], shown[200];
    app_escaped(e->id, shown, sizeof shown);
    if (e->kind != kind) {
        app_error("model '%s' is %s", shown,
                  e->kind == PT_MODEL_KIND_IMAGE ? "an image model: petrel imagine -m uses it"
                                                 : "a language model, not an image model");
        return NULL;
    }
    if (!strcmp(e->source, "bundled")) {
        /* path is relative to the repository: "assets/REL" */
        const char *rel = !strncmp(e->path, "assets/", 7) ? e->path + 7 : e->path;
        if (pt_app_asset(rel, buf, cap, why, sizeof why)) return buf;
        app_error("model '%s' is bundled with petrel but its file is not in %s", shown, why);
        return NULL;
    }
    if (in_models(dir, e->local_name, buf, cap)) {
        app_mark_used(dir, e->local_name);
        return buf;
    }
    char part[4200];
    snprintf(part, sizeof part, "%s/%s.part", dir, e->local_name);
    if (is_file(part))
        app_error("model '%s' is only partly downloaded: run `petrel pull %s` to finish it", shown, shown);
    else
        app_error("model '%s' is not downloaded yet: run `petrel pull %s`", shown, shown);
    return NULL;
}

const char *app_resolve_model(const char *given, pt_model_kind kind, char *buf, size_t cap) {
    char why[1024];
    if (!given) {
        if (kind == PT_MODEL_KIND_IMAGE) {
            if (pt_app_default_image_model(buf, cap, why, sizeof why)) return buf;
            app_error("no model given (-m), and the default image model is not in %s "
                      "(set PETREL_ASSETS to the assets/ folder of a petrel checkout)", why);
            return NULL;
        }
        if (!pt_app_default_model(buf, cap, why, sizeof why)) {
            app_error("%s", why);
            return NULL;
        }
        char dir[4096];
        if (pt_app_models_dir(dir, sizeof dir, why, sizeof why) && is_file(buf))
            app_mark_used(dir, strrchr(buf, '/') + 1);
        return buf;
    }
    /* a path (files and folders: a diffusers folder, a TAESD folder) */
    if (strchr(given, '/') || access(given, F_OK) == 0) return given;
    char dir[4096];
    if (!pt_app_models_dir(dir, sizeof dir, why, sizeof why)) {
        app_error("%s", why);
        return NULL;
    }
    /* a catalog ID first (IDs are the names people type), then a file */
    pt_catalog *c = app_catalog_load();
    if (!c) return NULL;
    const pt_catalog_entry *e = pt_catalog_find(c, given);
    const char *out = NULL;
    if (e) {
        out = by_catalog(e, kind, dir, buf, cap);
    } else {
        char name[512];
        snprintf(name, sizeof name, "%s.gguf", given);
        if (in_models(dir, given, buf, cap)) out = buf;
        else if (in_models(dir, name, buf, cap)) out = buf;
        if (out) {
            app_mark_used(dir, strrchr(buf, '/') + 1);
        } else {
            char shown[200];
            app_error("'%s' is neither a file nor a model in the catalog or in %s "
                      "(petrel list shows the local ones, petrel pull fetches)",
                      app_escaped(given, shown, sizeof shown), dir);
        }
    }
    pt_catalog_free(c);
    return out;
}

/* ---- token ------------------------------------------------------------- */

static bool read_token(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    if (!ok) return false;
    buf[strcspn(buf, "\r\n")] = 0;
    return buf[0] != 0;
}

bool app_hf_token(char *buf, size_t cap) {
    const char *env = getenv("HF_TOKEN");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return true;
    }
    char path[4096];
    const char *p = getenv("HF_TOKEN_PATH");
    if (p && *p) return read_token(p, buf, cap);
    const char *hf_home = getenv("HF_HOME");
    const char *cache = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (hf_home && *hf_home) snprintf(path, sizeof path, "%s/token", hf_home);
    else if (cache && cache[0] == '/') snprintf(path, sizeof path, "%s/huggingface/token", cache);
    else if (home && *home) snprintf(path, sizeof path, "%s/.cache/huggingface/token", home);
    else return false;
    return read_token(path, buf, cap);
}
