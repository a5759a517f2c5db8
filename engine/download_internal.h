/*
 * download_internal.h — the state of one pt_download shared by its two
 * halves: download.c (attempts, the body, progress, retries, the final
 * checks) and download_response.c (reading each response's headers and
 * deciding what its body is). Internal to the engine.
 */
#ifndef PETREL_DOWNLOAD_INTERNAL_H
#define PETREL_DOWNLOAD_INTERNAL_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "download_part.h"
#include "petrel.h"

/* How an attempt ended, when it was not a plain success. */
typedef enum pt_dl_stop_kind {
    PT_DL_STOP_NONE = 0,
    PT_DL_STOP_RETRY,     /* worth another attempt (resuming) */
    PT_DL_STOP_FATAL,     /* report err as is; .part kept */
    PT_DL_STOP_DISCARD,   /* report err; .part and sidecar removed */
} pt_dl_stop_kind;

/* One download: its .part, its digest, the response being read, the
 * attempt in progress and the progress reports. */
typedef struct pt_dl {
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
    pt_dl_stop_kind stop;
    int write_errno;
    uint64_t attempt_start; /* have when the attempt began */

    /* progress */
    int attempt;
    double t_last, t_sample, speed;
    uint64_t have_sample;
} pt_dl;

/* Record why the attempt ends (the first reason wins) and its message. */
void pt_dl_stop(pt_dl *d, pt_dl_stop_kind kind, pt_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool pt_dl_cancelled(const pt_dl *d);
/* Empty the .part and forget its sidecar: the next bytes start the file.
 * False (errno set) when the file cannot be reset. */
bool pt_dl_restart_part(pt_dl *d);
/* "host[:port]" of a URL, for messages. */
const char *pt_dl_host(const char *url, char *buf, size_t cap);
/* libcurl's CURLOPT_HEADERFUNCTION: collects the headers of each response
 * and, at the end of the final one's, decides (download_response.c). */
size_t pt_dl_on_header(char *buf, size_t size, size_t nitems, void *user);

#endif
