/*
 * download_response.c — each response of an attempt, header by header: the
 * status, ETag, Last-Modified, Content-Range and Content-Length of the
 * response being read, X-Linked-Etag from any hop (Hugging Face sends its
 * LFS sha256 on the resolve redirect), and at the blank line ending the
 * final (non-redirect) response's headers, begin(): what the body is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "download_internal.h"

void pt_dl_stop(pt_dl *d, pt_dl_stop_kind kind, pt_status code, const char *fmt, ...) {
    if (d->stop) return; /* the first reason wins */
    d->stop = kind;
    if (d->err) {
        d->err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err->msg, sizeof d->err->msg, fmt, ap);
        va_end(ap);
    }
}

bool pt_dl_cancelled(const pt_dl *d) {
    return d->p->cancel && atomic_load(d->p->cancel);
}

/* A sha256 in hex (64 digits, any case) inside an ETag value such as
 * "\"abc...\"" or W/"..."; lower-cased into out, else false. */
static bool etag_sha256(const char *v, char out[65]) {
    if (!strncmp(v, "W/", 2)) v += 2;
    if (*v == '"') v++;
    size_t n = strspn(v, "0123456789abcdefABCDEF");
    if (n != 64 || (v[64] && v[64] != '"')) return false;
    for (int i = 0; i < 64; i++) out[i] = (char)(v[i] >= 'A' && v[i] <= 'F' ? v[i] - 'A' + 'a' : v[i]);
    out[64] = 0;
    return true;
}

bool pt_dl_restart_part(pt_dl *d) {
    d->have = d->attempt_start = d->have_sample = 0;
    memset(&d->meta, 0, sizeof d->meta);
    unlink(d->meta_path);
    return ftruncate(d->fd, 0) == 0 && lseek(d->fd, 0, SEEK_SET) == 0 &&
           EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL) == 1;
}

/* ---- the final response ------------------------------------------------ */

const char *pt_dl_host(const char *url, char *buf, size_t cap) {
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/?#");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), h);
    return buf;
}

/* Is there room for the rest of the file (plus keep_free)? */
static bool room_for(pt_dl *d, uint64_t total) {
    if (!total || total <= d->have) return true;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", d->part);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    struct statvfs vfs;
    if (statvfs(slash && !dir[0] ? "/" : dir, &vfs) != 0) return true; /* unknown: try */
    uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    uint64_t need = total - d->have;
    if (avail >= need && avail - need >= d->p->keep_free) return true;
    pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_IO,
         "not enough free space in %.150s: the download needs %.1f MiB more, %.1f MiB are free%s", dir,
         need / 1048576.0, avail / 1048576.0, d->p->keep_free ? " (after the space to keep free)" : "");
    return false;
}

/* "bytes START-END/TOTAL" (or "bytes * /TOTAL"); false when malformed. */
static bool parse_range(const char *v, uint64_t *start, uint64_t *total, bool *has_start) {
    if (strncasecmp(v, "bytes ", 6) != 0) return false;
    v += 6;
    *has_start = *v != '*';
    unsigned long long a = 0, b = 0, t = 0;
    if (*has_start) {
        if (sscanf(v, "%llu-%llu/%llu", &a, &b, &t) == 3) {
            *start = a;
            *total = t;
            return true;
        }
        if (sscanf(v, "%llu-%llu/*", &a, &b) == 2) {
            *start = a;
            *total = 0;
            return true;
        }
        return false;
    }
    if (sscanf(v, "*/%llu", &t) != 1) return false;
    *total = t;
    return true;
}

/* HTTP errors: one line saying what it means for a model download. */
static void http_error(pt_dl *d) {
    char host[128];
    pt_dl_host(d->url, host, sizeof host);
    long s = d->status;
    if (s == 401)
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "HTTP 401 (unauthorized) from %s: %s", host,
             d->p->hf_token ? "the access token was refused" : "this file needs an access token (HF_TOKEN)");
    else if (s == 403)
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK,
             "HTTP 403 (forbidden) from %s: the model is gated or private (accept its license on the hub, "
             "and use a token that may read it)", host);
    else if (s == 404 || s == 410)
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "HTTP %ld (not found): %.200s: no such repo, revision or file", s,
             d->url);
    else if (s == 408 || s == 429 || s >= 500)
        pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "HTTP %ld from %s", s, host);
    else
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "HTTP %ld from %s for %.200s", s, host, d->url);
}

/* The final response's headers are in: decide what its body is. */
static bool begin(pt_dl *d) {
    uint64_t total = d->content_length >= 0 ? (uint64_t)d->content_length : 0;
    if (d->status == 416 && d->have > 0) {
        uint64_t start = 0, t = 0;
        bool has_start;
        if (parse_range(d->content_range, &start, &t, &has_start) && !has_start && t == d->have &&
            (!d->meta.total || d->meta.total == t)) {
            d->complete = true; /* asked for bytes past the end: all are here */
            return true;
        }
        if (!pt_dl_restart_part(d)) goto disk;
        pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "the server refused to resume; starting over");
        return false;
    }
    if (d->status != 200 && d->status != 206) {
        http_error(d);
        return false;
    }
    char sha[65] = "";
    if (d->linked_sha[0]) memcpy(sha, d->linked_sha, sizeof sha);
    else etag_sha256(d->etag, sha);
    char validator[256] = "";
    if (d->etag[0] && strncmp(d->etag, "W/", 2) != 0) snprintf(validator, sizeof validator, "%s", d->etag);
    else snprintf(validator, sizeof validator, "%s", d->last_modified);

    if (d->status == 206) {
        uint64_t start = 0, t = 0;
        bool has_start = false;
        if (!parse_range(d->content_range, &start, &t, &has_start) || !has_start || start != d->have ||
            (d->meta.validator[0] && strcmp(validator, d->meta.validator) != 0) ||
            (d->meta.sha256[0] && sha[0] && strcmp(sha, d->meta.sha256) != 0) ||
            (d->meta.total && t && t != d->meta.total)) {
            /* not the rest of the file the .part began: never join them */
            if (!pt_dl_restart_part(d)) goto disk;
            pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "the server sent a different part or file; starting over");
            return false;
        }
        total = t;
    } else if (d->have > 0) {
        /* 200: the whole file (the server does not resume, or If-Range
         * found the file changed) */
        if (!pt_dl_restart_part(d)) goto disk;
    }
    if (d->p->expected_size && total && total != d->p->expected_size) {
        pt_dl_stop(d, PT_DL_STOP_DISCARD, PT_ERR_CHECKSUM, "the server sends %" PRIu64 " bytes, %" PRIu64 " were expected: "
             "not the file the catalog names; nothing was installed", total, d->p->expected_size);
        return false;
    }
    if (!room_for(d, total)) return false;
    snprintf(d->meta.url, sizeof d->meta.url, "%s", d->url);
    snprintf(d->meta.validator, sizeof d->meta.validator, "%s", validator);
    memcpy(d->meta.sha256, sha, sizeof sha);
    d->meta.total = total;
    if (!pt_part_meta_write(d->meta_path, &d->meta)) {
        d->write_errno = errno;
        goto disk;
    }
    d->begun = true;
    return true;
disk:
    if (!d->write_errno) d->write_errno = errno ? errno : EIO;
    pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_IO, "cannot write %.200s: %s", d->part, strerror(d->write_errno));
    return false;
}

/* ---- headers ----------------------------------------------------------- */

/* "Name: value\r\n" -> value (trimmed) into out when the name matches. */
static bool header_value(const char *line, size_t n, const char *name, char *out, size_t cap) {
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return false;
    const char *v = line + k + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t len = (size_t)(end - v);
    if (len >= cap) len = cap - 1;
    memcpy(out, v, len);
    out[len] = 0;
    return true;
}

size_t pt_dl_on_header(char *buf, size_t size, size_t nitems, void *user) {
    pt_dl *d = user;
    size_t n = size * nitems;
    if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
        const char *sp = memchr(buf, ' ', n);
        d->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        d->etag[0] = d->last_modified[0] = d->content_range[0] = 0;
        d->content_length = -1;
        return n;
    }
    char v[256];
    if (header_value(buf, n, "ETag", d->etag, sizeof d->etag)) return n;
    if (header_value(buf, n, "Last-Modified", d->last_modified, sizeof d->last_modified)) return n;
    if (header_value(buf, n, "Content-Range", d->content_range, sizeof d->content_range)) return n;
    if (header_value(buf, n, "Content-Length", v, sizeof v)) {
        char *end;
        long long len = strtoll(v, &end, 10);
        d->content_length = *v && !*end && len >= 0 ? len : -1;
        return n;
    }
    if (header_value(buf, n, "X-Linked-Etag", v, sizeof v)) {
        etag_sha256(v, d->linked_sha);
        return n;
    }
    bool blank = (n == 2 && buf[0] == '\r' && buf[1] == '\n') || (n == 1 && buf[0] == '\n');
    if (!blank) return n;
    /* end of one response's headers */
    if (d->status < 200 || (d->status >= 300 && d->status < 400 && d->status != 304)) return n;
    if (d->begun || d->complete) return n;
    return begin(d) ? n : 0;
}

