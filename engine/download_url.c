/*
 * download_url.c — what a pull source names: hf:// and ms:// resolved
 * against their endpoints, http(s):// URLs as given (petrel.h).
 */
#include <stdio.h>
#include <string.h>

#include "petrel.h"
#include "status.h"

#define HF_DEFAULT "https://huggingface.co"
#define MS_DEFAULT "https://www.modelscope.cn"

/* Append s percent-encoded (RFC 3986 unreserved characters kept, and "/"
 * when keep_slash) to out at *n; false when it does not fit. */
static bool put_encoded(char *out, size_t cap, size_t *n, const char *s, size_t len, bool keep_slash) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                     c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
        if (*n + (plain ? 1 : 3) >= cap) return false;
        if (plain) {
            out[(*n)++] = (char)c;
        } else {
            out[(*n)++] = '%';
            out[(*n)++] = hex[c >> 4];
            out[(*n)++] = hex[c & 15];
        }
    }
    out[*n] = 0;
    return true;
}

static bool put(char *out, size_t cap, size_t *n, const char *s, size_t len) {
    if (*n + len >= cap) return false;
    memcpy(out + *n, s, len);
    *n += len;
    out[*n] = 0;
    return true;
}

static bool has_control(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

/* Every "/"-separated part of s[0..len) is non-empty and not "." or "..". */
static bool clean_parts(const char *s, size_t len) {
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '/') continue;
        size_t k = i - start;
        if (k == 0 || (k == 1 && s[start] == '.') || (k == 2 && s[start] == '.' && s[start + 1] == '.'))
            return false;
        start = i + 1;
    }
    return true;
}

/* "ORG/REPO[@REV]/PATH" -> BASE/ORG/REPO/resolve/REV/PATH (with infix
 * "models/" for ModelScope). */
static pt_status hub(const char *scheme, const char *rest, const char *base, const char *infix,
                     const char *default_rev, char *url, size_t cap, pt_error *err) {
    const char *s1 = strchr(rest, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (!s1 || !s2 || !s2[1])
        return pt_fail(err, PT_ERR_ARG, "%s://%.100s: want %s://ORG/REPO/FILE", scheme, rest, scheme);
    const char *at = memchr(s1 + 1, '@', (size_t)(s2 - s1 - 1));
    const char *repo_end = at ? at : s2;
    const char *rev = at ? at + 1 : default_rev;
    size_t rev_len = at ? (size_t)(s2 - at - 1) : strlen(default_rev);
    const char *path = s2 + 1;
    if (!clean_parts(rest, (size_t)(repo_end - rest)) || rev_len == 0 || !clean_parts(path, strlen(path)))
        return pt_fail(err, PT_ERR_ARG, "%s://%.100s: an empty, '.' or '..' part in the repo, revision or file",
                       scheme, rest);
    size_t n = 0, blen = strlen(base);
    while (blen && base[blen - 1] == '/') blen--;
    url[0] = 0;
    bool ok = put(url, cap, &n, base, blen) && put(url, cap, &n, "/", 1) && put(url, cap, &n, infix, strlen(infix)) &&
              put_encoded(url, cap, &n, rest, (size_t)(repo_end - rest), true) &&
              put(url, cap, &n, "/resolve/", 9) && put_encoded(url, cap, &n, rev, rev_len, false) &&
              put(url, cap, &n, "/", 1) && put_encoded(url, cap, &n, path, strlen(path), true);
    if (!ok) return pt_fail(err, PT_ERR_ARG, "%s://%.100s: the URL is too long", scheme, rest);
    return PT_OK;
}

pt_status pt_download_resolve(const char *source, const pt_download_params *params, char *url,
                              size_t cap, pt_error *err) {
    if (!source || !*source || cap == 0) return pt_fail(err, PT_ERR_ARG, "no source to download");
    if (has_control(source))
        return pt_fail(err, PT_ERR_ARG, "a download source must not hold control characters");
    pt_download_params p = pt_download_default_params();
    if (pt_params_overlay(&p, sizeof p, params, "pt_download_params", err)) return PT_ERR_ARG;
    if (!strncmp(source, "hf://", 5))
        return hub("hf", source + 5, p.hf_endpoint ? p.hf_endpoint : HF_DEFAULT, "", "main", url, cap, err);
    if (!strncmp(source, "ms://", 5))
        return hub("ms", source + 5, p.ms_endpoint ? p.ms_endpoint : MS_DEFAULT, "models/", "master", url, cap,
                   err);
    if (!strncmp(source, "https://", 8) || !strncmp(source, "http://", 7)) {
        const char *host = strstr(source, "://") + 3;
        if (!*host || *host == '/') return pt_fail(err, PT_ERR_ARG, "%.200s: no host in the URL", source);
        if (strchr(source, ' '))
            return pt_fail(err, PT_ERR_ARG, "a URL must not hold spaces (write them as %%20)");
        if (strlen(source) >= cap) return pt_fail(err, PT_ERR_ARG, "the URL is too long");
        strcpy(url, source);
        return PT_OK;
    }
    char shown[120];
    pt_escape_text(source, strlen(source), shown, sizeof shown);
    return pt_fail(err, PT_ERR_ARG, "'%s' is not a source petrel can fetch (hf://ORG/REPO/FILE, ms://..., https://...)",
                   shown);
}
