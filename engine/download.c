/*
 * download.c — pt_download (petrel.h): one file over HTTP(S) with libcurl
 * into DEST.part (resumable, download_part.h), checked (length, sha256 by
 * OpenSSL's EVP while writing) and only then renamed to DEST.
 *
 * One attempt is one curl transfer. Its responses go through
 * pt_dl_on_header (download_response.c);
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "download_internal.h"
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

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* 64 hexadecimal digits, nothing else. */
static bool is_hex64(const char *s) {
    return strlen(s) == 64 && strspn(s, "0123456789abcdefABCDEF") == 64;
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

/* Hash what an earlier run left in the .part (have bytes). */
static pt_status hash_existing(pt_dl *d) {
    unsigned char buf[1 << 16];
    uint64_t left = d->have;
    if (lseek(d->fd, 0, SEEK_SET) != 0) return PT_ERR_IO;
    while (left) {
        if (pt_dl_cancelled(d)) return PT_ERR_CANCELLED;
        ssize_t r = read(d->fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return PT_ERR_IO;
        EVP_DigestUpdate(d->sha, buf, (size_t)r);
        left -= (uint64_t)r;
    }
    return lseek(d->fd, 0, SEEK_END) == (off_t)d->have ? PT_OK : PT_ERR_IO;
}

/* ---- curl callbacks ---------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
    pt_dl *d = user;
    size_t n = size * nmemb;
    if (!d->begun || d->complete) return n; /* a redirect's or an ignored body */
    if (pt_dl_cancelled(d)) {
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
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

static void report(pt_dl *d, bool force) {
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
    pt_dl *d = user;
    if (pt_dl_cancelled(d)) {
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
        return 1;
    }
    report(d, false);
    return 0;
}

/* ---- one attempt ------------------------------------------------------- */

static bool token_for(const pt_dl *d) {
    if (!d->p->hf_token || !*d->p->hf_token) return false;
    const char *base = d->p->hf_endpoint ? d->p->hf_endpoint : "https://huggingface.co";
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    return strncmp(d->url, base, n) == 0 && d->url[n] == '/';
}

static CURLcode attempt(pt_dl *d, CURL *c, char *errbuf) {
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
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, pt_dl_on_header);
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
static bool classify(pt_dl *d, CURL *c, CURLcode rc, const char *errbuf) {
    char host[128];
    pt_dl_host(d->url, host, sizeof host);
    if (d->stop) return false;
    if (d->write_errno) {
        int e = d->write_errno;
        if (e == ENOSPC || e == EDQUOT)
            /* transient: the .part holds exactly `have` good bytes; freeing
             * space and pulling again resumes from there */
            pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_IO,
                 "disk full writing %.200s after %.1f MiB: free some space and pull again to resume", d->part,
                 d->have / 1048576.0);
        else
            pt_dl_stop(d, PT_DL_STOP_DISCARD, PT_ERR_IO, "write error on %.200s: %s", d->part, strerror(e));
        return false;
    }
    if (rc == CURLE_OK) {
        if (d->complete) return true;
        if (!d->begun) {
            pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "no answer from %s", host);
            return false;
        }
        if (d->meta.total && d->have != d->meta.total) {
            pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "the connection to %s ended after %" PRIu64 " of %" PRIu64 " bytes",
                 host, d->have, d->meta.total);
            return false;
        }
        return true;
    }
    (void)c;
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK:
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_CANCELLED, "cancelled");
        break;
    case CURLE_OPERATION_TIMEDOUT:
        if (d->begun || d->status)
            pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "the download from %s stalled (under 1 KiB/s for %d s)", host,
                 d->p->stall_seconds);
        else
            pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "no connection to %s within %d s", host, d->p->connect_timeout_s);
        break;
    case CURLE_PARTIAL_FILE:
        pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "the connection to %s ended after %" PRIu64 " of %" PRIu64 " bytes",
             host, d->have, d->meta.total);
        break;
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_HTTP2: case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR:
        pt_dl_stop(d, PT_DL_STOP_RETRY, PT_ERR_NETWORK, "%s: %s", host, why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_CERTPROBLEM:
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "the certificate of %s could not be verified: %s", host, why);
        break;
    case CURLE_TOO_MANY_REDIRECTS:
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "too many redirects from %s", host);
        break;
    default:
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_NETWORK, "%s: %s", host, why);
        break;
    }
    return false;
}

/* Sleep s seconds in short steps, waking early on cancel. */
static bool wait_or_cancel(const pt_dl *d, double s) {
    double end = now_s() + s;
    while (now_s() < end) {
        if (pt_dl_cancelled(d)) return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !pt_dl_cancelled(d);
}

/* ---- the whole download ------------------------------------------------ */

static pt_status finish(pt_dl *d, const char *dest, pt_download_result *res) {
    char got[65];
    hex_digest(d->sha, got);
    memcpy(res->sha256, got, sizeof got);
    res->bytes = d->have;
    if (d->p->expected_size && d->have != d->p->expected_size) {
        pt_dl_stop(d, PT_DL_STOP_DISCARD, PT_ERR_CHECKSUM,
             "downloaded %" PRIu64 " bytes, %" PRIu64 " were expected; nothing was installed", d->have,
             d->p->expected_size);
        return d->err ? d->err->code : PT_ERR_CHECKSUM;
    }
    const char *want = d->p->sha256 && *d->p->sha256 ? d->p->sha256 : d->meta.sha256[0] ? d->meta.sha256 : NULL;
    res->check = !want ? PT_DOWNLOAD_UNVERIFIED
               : want == d->p->sha256 ? PT_DOWNLOAD_SHA256_GIVEN : PT_DOWNLOAD_SHA256_SERVER;
    if (want && strcasecmp(want, got) != 0) {
        pt_dl_stop(d, PT_DL_STOP_DISCARD, PT_ERR_CHECKSUM,
             "sha256 mismatch: the download's is %.16s..., %s says %.16s...: corrupt in transit or a different "
             "file; nothing was installed", got, res->check == PT_DOWNLOAD_SHA256_GIVEN ? "the catalog" : "the server",
             want);
        return PT_ERR_CHECKSUM;
    }
    if (fsync(d->fd) != 0 || rename(d->part, dest) != 0) {
        pt_dl_stop(d, PT_DL_STOP_FATAL, PT_ERR_IO, "cannot install %.200s: %s", dest, strerror(errno));
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

static pt_status run(pt_dl *d, const char *dest, pt_download_result *res) {
    /* an earlier .part is resumed only with its sidecar for this URL */
    struct stat st;
    if (fstat(d->fd, &st) != 0) return pt_fail(d->err, PT_ERR_IO, "cannot read %.200s: %s", d->part, strerror(errno));
    if (pt_part_meta_read(d->meta_path, &d->meta) && !strcmp(d->meta.url, d->url) && st.st_size > 0 &&
        (!d->meta.total || (uint64_t)st.st_size <= d->meta.total)) {
        d->have = (uint64_t)st.st_size;
        pt_status s = hash_existing(d);
        if (s == PT_ERR_CANCELLED) return pt_fail(d->err, s, "cancelled");
        if (s) return pt_fail(d->err, PT_ERR_IO, "cannot read %.200s: %s", d->part, strerror(errno));
    } else if (!pt_dl_restart_part(d)) {
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
        d->stop = PT_DL_STOP_NONE;
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
        if (d->stop == PT_DL_STOP_RETRY) {
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
    if (out != PT_OK && (d->stop == PT_DL_STOP_DISCARD || d->have == 0)) {
        /* nothing worth resuming (or nothing at all, as after a 404):
         * no empty .part is left behind */
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
        if (!is_hex64(p.sha256))
            return pt_fail(err, PT_ERR_ARG, "pt_download: sha256 must be 64 hex digits");
    }
    if (p.max_retries < 0 || p.stall_seconds < 1 || p.connect_timeout_s < 1 || !(p.retry_wait_s >= 0))
        return pt_fail(err, PT_ERR_ARG, "pt_download: retries, timeouts or wait out of range");
    char url[2048];
    pt_status st = pt_download_resolve(source, &p, url, sizeof url, err);
    if (st) return st;

    pt_dl d = {.p = &p, .url = url, .fd = -1, .err = err};
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
