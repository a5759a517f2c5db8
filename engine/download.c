/*
 * download.c — pt_download (petrel.h): one file over HTTP(S) with libcurl
 * into DEST.part (resumable, download_part.h), checked (length, sha256 by
 * OpenSSL's EVP while writing) and only then renamed to DEST.
 *
 * One attempt is one curl transfer. Its responses go through on_header;
 * at the blank line that ends the final (non-redirect) response's headers,
 * begin() decides what the body is: the rest of the .part (206 from the
 * right offset of the same file), the whole file again (200: the .part is
 * emptied first), an end (416 on a complete .part), or an error. Only
 * then does on_body write anything. Attempts repeat, resuming, after
 * connection errors, stalls and 5xx, with doubling waits.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "download_part.h"
#include "petrel.h"
#include "status.h"

#ifndef CURL_WRITEFUNC_ERROR /* libcurl < 7.87: any short count is an error */
#define CURL_WRITEFUNC_ERROR 0
#endif

pt_download_params pt_download_default_params(void) {
    return (pt_download_params){
        .size = sizeof(pt_download_params),
        .max_retries = 5,
        .retry_wait_s = 1.0,
        .stall_seconds = 60,
        .connect_timeout_s = 30,
    };
}

/* How an attempt ended, when it was not a plain success. */
typedef enum stop_kind {
    STOP_NONE = 0,
    STOP_RETRY,     /* worth another attempt (resuming) */
    STOP_FATAL,     /* report err as is; .part kept */
    STOP_DISCARD,   /* report err; .part and sidecar removed */
} stop_kind;

typedef struct dl {
    const pt_download_params *p;
    const char *url;
    char part[4200], meta_path[4300];
    int fd;
    EVP_MD_CTX *sha;
    uint64_t have;          /* bytes in .part, all hashed into sha */
    pt_part_meta meta;      /* what the .part holds (valid when have > 0) */
    pt_error *err;

    /* the response being read (reset at each status line) */
    long status;
    char etag[256], last_modified[128], content_range[128];
    int64_t content_length; /* -1: none */
    /* over the whole redirect chain of one attempt: Hugging Face sends
     * the LFS sha256 on the resolve redirect, not on the CDN's answer */
    char linked_sha[65];

    /* the attempt */
    bool begun;             /* the final response was accepted: body goes to .part */
    bool complete;          /* 416 on a .part that already holds everything */
    stop_kind stop;
    int write_errno;
    uint64_t attempt_start; /* have when the attempt began */

    /* progress */
    int attempt;
    double t_last, t_sample, speed;
    uint64_t have_sample;
} dl;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stop(dl *d, stop_kind kind, pt_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void stop(dl *d, stop_kind kind, pt_status code, const char *fmt, ...) {
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

static bool cancelled(const dl *d) {
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

static void hex_digest(EVP_MD_CTX *sha, char out[65]) {
    EVP_MD_CTX *copy = EVP_MD_CTX_new();
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!copy || !EVP_MD_CTX_copy_ex(copy, sha) || !EVP_DigestFinal_ex(copy, md, &len) || len != 32) {
        out[0] = 0;
    } else {
        for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    EVP_MD_CTX_free(copy);
}

/* Empty the .part (and forget its sidecar): the next bytes start the file. */
static bool restart_part(dl *d) {
    d->have = d->attempt_start = d->have_sample = 0;
    memset(&d->meta, 0, sizeof d->meta);
    unlink(d->meta_path);
    return ftruncate(d->fd, 0) == 0 && lseek(d->fd, 0, SEEK_SET) == 0 &&
           EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL) == 1;
}

/* Hash what an earlier run left in the .part (have bytes). */
static pt_status hash_existing(dl *d) {
    unsigned char buf[1 << 16];
    uint64_t left = d->have;
    if (lseek(d->fd, 0, SEEK_SET) != 0) return PT_ERR_IO;
    while (left) {
        if (cancelled(d)) return PT_ERR_CANCELLED;
        ssize_t r = read(d->fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return PT_ERR_IO;
        EVP_DigestUpdate(d->sha, buf, (size_t)r);
        left -= (uint64_t)r;
    }
    return lseek(d->fd, 0, SEEK_END) == (off_t)d->have ? PT_OK : PT_ERR_IO;
}

/* ---- the final response ------------------------------------------------ */

static const char *host_of(const char *url, char *buf, size_t cap) {
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/?#");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), h);
    return buf;
}

/* Is there room for the rest of the file (plus keep_free)? */
static bool room_for(dl *d, uint64_t total) {
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
    stop(d, STOP_FATAL, PT_ERR_IO,
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
static void http_error(dl *d) {
    char host[128];
    host_of(d->url, host, sizeof host);
    long s = d->status;
    if (s == 401)
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "HTTP 401 (unauthorized) from %s: %s", host,
             d->p->hf_token ? "the access token was refused" : "this file needs an access token (HF_TOKEN)");
    else if (s == 403)
        stop(d, STOP_FATAL, PT_ERR_NETWORK,
             "HTTP 403 (forbidden) from %s: the model is gated or private (accept its license on the hub, "
             "and use a token that may read it)", host);
    else if (s == 404 || s == 410)
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "HTTP %ld (not found): %.200s: no such repo, revision or file", s,
             d->url);
    else if (s == 408 || s == 429 || s >= 500)
        stop(d, STOP_RETRY, PT_ERR_NETWORK, "HTTP %ld from %s", s, host);
    else
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "HTTP %ld from %s for %.200s", s, host, d->url);
}

/* The final response's headers are in: decide what its body is. */
static bool begin(dl *d) {
    uint64_t total = d->content_length >= 0 ? (uint64_t)d->content_length : 0;
    if (d->status == 416 && d->have > 0) {
        uint64_t start = 0, t = 0;
        bool has_start;
        if (parse_range(d->content_range, &start, &t, &has_start) && !has_start && t == d->have &&
            (!d->meta.total || d->meta.total == t)) {
            d->complete = true; /* asked for bytes past the end: all are here */
            return true;
        }
        if (!restart_part(d)) goto disk;
        stop(d, STOP_RETRY, PT_ERR_NETWORK, "the server refused to resume; starting over");
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
            if (!restart_part(d)) goto disk;
            stop(d, STOP_RETRY, PT_ERR_NETWORK, "the server sent a different part or file; starting over");
            return false;
        }
        total = t;
    } else if (d->have > 0) {
        /* 200: the whole file (the server does not resume, or If-Range
         * found the file changed) */
        if (!restart_part(d)) goto disk;
    }
    if (d->p->expected_size && total && total != d->p->expected_size) {
        stop(d, STOP_DISCARD, PT_ERR_CHECKSUM, "the server sends %" PRIu64 " bytes, %" PRIu64 " were expected: "
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
    stop(d, STOP_FATAL, PT_ERR_IO, "cannot write %.200s: %s", d->part, strerror(d->write_errno));
    return false;
}

/* ---- curl callbacks ---------------------------------------------------- */

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

static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
    dl *d = user;
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

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
    dl *d = user;
    size_t n = size * nmemb;
    if (!d->begun || d->complete) return n; /* a redirect's or an ignored body */
    if (cancelled(d)) {
        stop(d, STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
        return CURL_WRITEFUNC_ERROR;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(d->fd, data + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            d->write_errno = w < 0 ? errno : EIO;
            return CURL_WRITEFUNC_ERROR;
        }
        /* hash exactly what reached the file: .part and digest stay in step */
        EVP_DigestUpdate(d->sha, data + off, (size_t)w);
        d->have += (uint64_t)w;
        off += (size_t)w;
    }
    return n;
}

static void report(dl *d, bool force) {
    if (!d->p->progress) return;
    double t = now_s();
    if (!force && t - d->t_last < 0.1) return;
    d->t_last = t;
    /* speed: bytes over the last half second or more, smoothed */
    if (t - d->t_sample >= 0.5) {
        double inst = (double)(d->have - d->have_sample) / (t - d->t_sample);
        if (d->have < d->have_sample) inst = 0;
        d->speed = d->speed > 0 ? 0.7 * d->speed + 0.3 * inst : inst;
        d->t_sample = t;
        d->have_sample = d->have;
    }
    pt_download_progress pr = {
        .done = d->have,
        .total = d->meta.total,
        .resumed_from = d->attempt_start,
        .bytes_per_s = d->speed,
        .eta_s = d->speed > 0 && d->meta.total >= d->have ? (double)(d->meta.total - d->have) / d->speed : -1,
        .attempt = d->attempt,
    };
    d->p->progress(d->p->progress_user, &pr);
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    dl *d = user;
    if (cancelled(d)) {
        stop(d, STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
        return 1;
    }
    report(d, false);
    return 0;
}

/* ---- one attempt ------------------------------------------------------- */

static bool token_for(const dl *d) {
    if (!d->p->hf_token || !*d->p->hf_token) return false;
    const char *base = d->p->hf_endpoint ? d->p->hf_endpoint : "https://huggingface.co";
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    return strncmp(d->url, base, n) == 0 && d->url[n] == '/';
}

static CURLcode attempt(dl *d, CURL *c, char *errbuf) {
    struct curl_slist *hdrs = NULL;
    char line[600];
    if (d->have > 0 && d->meta.validator[0]) {
        snprintf(line, sizeof line, "If-Range: %s", d->meta.validator);
        hdrs = curl_slist_append(hdrs, line);
    }
    if (token_for(d)) {
        /* a custom Authorization header: curl drops it on a redirect to
         * another host (the hub's CDN), so the token goes to the hub only */
        snprintf(line, sizeof line, "Authorization: Bearer %.500s", d->p->hf_token);
        hdrs = curl_slist_append(hdrs, line);
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, d->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85 */
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, strncmp(d->url, "https:", 6) ? "http,https" : "https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS,
                     strncmp(d->url, "https:", 6) ? (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS) : (long)CURLPROTO_HTTPS);
#endif
    /* certificates are always checked; there is no option to turn that off */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "petrel/" PETREL_VERSION);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)d->p->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)d->p->stall_seconds);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, d);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, d);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, d);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    /* CURLOPT_RANGE rather than RESUME_FROM: curl then hands over a 200
     * (the whole file: the server ignores ranges, or If-Range found the
     * file changed) instead of failing, and begin() starts over */
    char range[32];
    snprintf(range, sizeof range, "%" PRIu64 "-", d->have);
    if (d->have > 0) curl_easy_setopt(c, CURLOPT_RANGE, range);
    errbuf[0] = 0;
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(hdrs);
    return rc;
}

/* Sort an attempt's end into done (true) or d->stop. */
static bool classify(dl *d, CURL *c, CURLcode rc, const char *errbuf) {
    char host[128];
    host_of(d->url, host, sizeof host);
    if (d->stop) return false;
    if (d->write_errno) {
        int e = d->write_errno;
        if (e == ENOSPC || e == EDQUOT)
            /* transient: the .part holds exactly `have` good bytes; freeing
             * space and pulling again resumes from there */
            stop(d, STOP_FATAL, PT_ERR_IO,
                 "disk full writing %.200s after %.1f MiB: free some space and pull again to resume", d->part,
                 d->have / 1048576.0);
        else
            stop(d, STOP_DISCARD, PT_ERR_IO, "write error on %.200s: %s", d->part, strerror(e));
        return false;
    }
    if (rc == CURLE_OK) {
        if (d->complete) return true;
        if (!d->begun) {
            stop(d, STOP_RETRY, PT_ERR_NETWORK, "no answer from %s", host);
            return false;
        }
        if (d->meta.total && d->have != d->meta.total) {
            stop(d, STOP_RETRY, PT_ERR_NETWORK, "the connection to %s ended after %" PRIu64 " of %" PRIu64 " bytes",
                 host, d->have, d->meta.total);
            return false;
        }
        return true;
    }
    (void)c;
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK:
        stop(d, STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
        break;
    case CURLE_OPERATION_TIMEDOUT:
        if (d->begun || d->status)
            stop(d, STOP_RETRY, PT_ERR_NETWORK, "the download from %s stalled (under 1 KiB/s for %d s)", host,
                 d->p->stall_seconds);
        else
            stop(d, STOP_RETRY, PT_ERR_NETWORK, "no connection to %s within %d s", host, d->p->connect_timeout_s);
        break;
    case CURLE_PARTIAL_FILE:
        stop(d, STOP_RETRY, PT_ERR_NETWORK, "the connection to %s ended after %" PRIu64 " of %" PRIu64 " bytes",
             host, d->have, d->meta.total);
        break;
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_HTTP2: case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR:
        stop(d, STOP_RETRY, PT_ERR_NETWORK, "%s: %s", host, why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_CERTPROBLEM:
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "the certificate of %s could not be verified: %s", host, why);
        break;
    case CURLE_TOO_MANY_REDIRECTS:
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "too many redirects from %s", host);
        break;
    default:
        stop(d, STOP_FATAL, PT_ERR_NETWORK, "%s: %s", host, why);
        break;
    }
    return false;
}

/* Sleep s seconds in short steps, waking early on cancel. */
static bool wait_or_cancel(const dl *d, double s) {
    double end = now_s() + s;
    while (now_s() < end) {
        if (cancelled(d)) return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !cancelled(d);
}

/* ---- the whole download ------------------------------------------------ */

static pt_status finish(dl *d, const char *dest, pt_download_result *res) {
    char got[65];
    hex_digest(d->sha, got);
    memcpy(res->sha256, got, sizeof got);
    res->bytes = d->have;
    if (d->p->expected_size && d->have != d->p->expected_size) {
        stop(d, STOP_DISCARD, PT_ERR_CHECKSUM,
             "downloaded %" PRIu64 " bytes, %" PRIu64 " were expected; nothing was installed", d->have,
             d->p->expected_size);
        return d->err ? d->err->code : PT_ERR_CHECKSUM;
    }
    const char *want = d->p->sha256 && *d->p->sha256 ? d->p->sha256 : d->meta.sha256[0] ? d->meta.sha256 : NULL;
    res->check = !want ? PT_DOWNLOAD_UNVERIFIED
               : want == d->p->sha256 ? PT_DOWNLOAD_SHA256_GIVEN : PT_DOWNLOAD_SHA256_SERVER;
    if (want && strcasecmp(want, got) != 0) {
        stop(d, STOP_DISCARD, PT_ERR_CHECKSUM,
             "sha256 mismatch: the download's is %.16s..., %s says %.16s...: corrupt in transit or a different "
             "file; nothing was installed", got, res->check == PT_DOWNLOAD_SHA256_GIVEN ? "the catalog" : "the server",
             want);
        return PT_ERR_CHECKSUM;
    }
    if (fsync(d->fd) != 0 || rename(d->part, dest) != 0) {
        stop(d, STOP_FATAL, PT_ERR_IO, "cannot install %.200s: %s", dest, strerror(errno));
        return PT_ERR_IO;
    }
    unlink(d->meta_path);
    /* the rename is durable once the folder is synced (best effort) */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", dest);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        int dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return PT_OK;
}

static pt_status run(dl *d, const char *dest, pt_download_result *res) {
    /* an earlier .part is resumed only with its sidecar for this URL */
    struct stat st;
    if (fstat(d->fd, &st) != 0) return pt_fail(d->err, PT_ERR_IO, "cannot read %.200s: %s", d->part, strerror(errno));
    if (pt_part_meta_read(d->meta_path, &d->meta) && !strcmp(d->meta.url, d->url) && st.st_size > 0 &&
        (!d->meta.total || (uint64_t)st.st_size <= d->meta.total)) {
        d->have = (uint64_t)st.st_size;
        pt_status s = hash_existing(d);
        if (s == PT_ERR_CANCELLED) return pt_fail(d->err, s, "cancelled");
        if (s) return pt_fail(d->err, PT_ERR_IO, "cannot read %.200s: %s", d->part, strerror(errno));
    } else if (!restart_part(d)) {
        return pt_fail(d->err, PT_ERR_IO, "cannot write %.200s: %s", d->part, strerror(errno));
    }
    res->resumed_from = d->have;

    CURL *c = curl_easy_init();
    if (!c) return pt_fail(d->err, PT_ERR_NOMEM, "cannot start libcurl");
    char errbuf[CURL_ERROR_SIZE];
    int failures = 0;
    pt_status out = PT_OK;
    for (d->attempt = 1;; d->attempt++) {
        d->begun = d->complete = false;
        d->stop = STOP_NONE;
        d->write_errno = 0;
        d->status = 0;
        d->linked_sha[0] = 0;
        d->attempt_start = d->have;
        d->t_sample = now_s();
        d->have_sample = d->have;
        CURLcode rc = attempt(d, c, errbuf);
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (code) res->http_status = code;
        res->attempts = d->attempt;
        if (classify(d, c, rc, errbuf)) break;
        if (d->stop == STOP_RETRY) {
            if (d->have > d->attempt_start) failures = 0; /* it moved: a fresh allowance */
            if (++failures <= d->p->max_retries) {
                double w = d->p->retry_wait_s;
                for (int i = 1; i < failures && w < 60; i++) w *= 2;
                if (w > 60) w = 60;
                if (wait_or_cancel(d, w)) continue;
                pt_fail(d->err, PT_ERR_CANCELLED, "cancelled");
                out = PT_ERR_CANCELLED;
                break;
            }
            if (d->p->max_retries > 0 && d->err) {
                size_t len = strlen(d->err->msg);
                snprintf(d->err->msg + len, sizeof d->err->msg - len, " (%d attempts)", d->attempt);
            }
        }
        out = d->err ? d->err->code : PT_ERR_NETWORK;
        if (out == PT_OK) out = PT_ERR_NETWORK;
        break;
    }
    curl_easy_cleanup(c);
    if (out == PT_OK) {
        report(d, true);
        out = finish(d, dest, res);
    }
    if (out != PT_OK && d->stop == STOP_DISCARD) {
        unlink(d->part);
        unlink(d->meta_path);
    } else if (out != PT_OK) {
        /* kept for a resume: exactly the bytes counted */
        if (ftruncate(d->fd, (off_t)d->have) != 0) { /* nothing more to do */ }
    }
    return out;
}

pt_status pt_download(const char *source, const char *dest, const pt_download_params *params,
                      pt_download_result *result, pt_error *err) {
    pt_download_result scratch;
    pt_download_result *res = result ? result : &scratch;
    memset(res, 0, sizeof *res);
    pt_download_params p = pt_download_default_params();
    if (pt_params_overlay(&p, sizeof p, params, "pt_download_params", err)) return PT_ERR_ARG;
    if (!dest || !*dest) return pt_fail(err, PT_ERR_ARG, "pt_download: no destination");
    if (p.sha256 && *p.sha256) {
        char tmp[65];
        if (strlen(p.sha256) != 64 || !etag_sha256(p.sha256, tmp))
            return pt_fail(err, PT_ERR_ARG, "pt_download: sha256 must be 64 hex digits");
    }
    if (p.max_retries < 0 || p.stall_seconds < 1 || p.connect_timeout_s < 1 || !(p.retry_wait_s >= 0))
        return pt_fail(err, PT_ERR_ARG, "pt_download: retries, timeouts or wait out of range");
    char url[2048];
    pt_status st = pt_download_resolve(source, &p, url, sizeof url, err);
    if (st) return st;

    dl d = {.p = &p, .url = url, .fd = -1, .err = err};
    if ((size_t)snprintf(d.part, sizeof d.part, "%s.part", dest) >= sizeof d.part ||
        (size_t)snprintf(d.meta_path, sizeof d.meta_path, "%s.part.meta", dest) >= sizeof d.meta_path)
        return pt_fail(err, PT_ERR_ARG, "the destination path is too long");
    d.fd = open(d.part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d.fd < 0) return pt_fail(err, PT_ERR_IO, "cannot open %.200s: %s", d.part, strerror(errno));
    if (flock(d.fd, LOCK_EX | LOCK_NB) != 0) {
        close(d.fd);
        return pt_fail(err, PT_ERR_IO, "another download of %.200s is running", dest);
    }
    if (!(d.sha = EVP_MD_CTX_new()) || EVP_DigestInit_ex(d.sha, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(d.sha);
        close(d.fd);
        return pt_fail(err, PT_ERR_NOMEM, "cannot start SHA-256");
    }
    /* libcurl >= 7.84 makes this thread-safe and reference counted */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        st = pt_fail(err, PT_ERR_NOMEM, "cannot start libcurl");
    } else {
        st = run(&d, dest, res);
        curl_global_cleanup();
    }
    EVP_MD_CTX_free(d.sha);
    close(d.fd);
    return st;
}
