/*
 * download_part.h — the partial file of a download and its sidecar.
 * Internal to the engine (engine/download.c).
 *
 * On disk, beside the final name DEST:
 *
 *   DEST.part       the bytes received so far, in order, from offset 0:
 *                   always a prefix of the file the sidecar names. Held
 *                   under flock(LOCK_EX) while a download runs, so two
 *                   petrels never write it at once.
 *   DEST.part.meta  the sidecar, a small text file written (to
 *                   DEST.part.meta.tmp, then renamed) before the first byte
 *                   of a response goes into DEST.part:
 *
 *                     petrel-part 1
 *                     url URL                  the URL as requested (before redirects)
 *                     validator VALUE          the response's strong ETag, else its
 *                                              Last-Modified, else empty
 *                     sha256 HEX               the content sha256 the server announced
 *                                              (X-Linked-Etag / ETag), else empty
 *                     total BYTES              the whole file's length, 0 when unknown
 *
 * A .part is resumed only when its sidecar reads, has the same URL, and the
 * server's next response agrees (If-Range with the validator: a changed
 * file comes back whole with 200, and then the .part starts over; a 206 is
 * checked once more against the sidecar's validator and sha256). A .part
 * without a readable sidecar is never resumed: it is emptied. So a resume
 * never joins bytes of two different files. (A server that sends neither
 * ETag nor Last-Modified is resumed on the URL alone; the sha256 checked
 * at the end, when one is known, still refuses a file changed meanwhile.)
 * DEST itself is only ever written by the final rename, after the checks.
 */
#ifndef PETREL_DOWNLOAD_PART_H
#define PETREL_DOWNLOAD_PART_H

#include <stdbool.h>
#include <stdint.h>

#include "petrel.h"

typedef struct pt_part_meta {
    char url[2048];
    char validator[256];
    char sha256[65];
    uint64_t total;
} pt_part_meta;

/* Read DEST.part.meta; false when missing, unreadable or malformed. */
bool pt_part_meta_read(const char *meta_path, pt_part_meta *m);
/* Write it atomically (tmp + rename); false with errno set on failure.
 * Values holding a newline are refused (EINVAL). */
bool pt_part_meta_write(const char *meta_path, const pt_part_meta *m);

#endif
