/* png_out.c — see png_out.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb_image_write.h>
#include <zlib.h>

#include "png_out.h"

/* ---- encoding ---------------------------------------------------------- */

/* A growing buffer for stbi_write_png_to_func. */
typedef struct membuf {
    unsigned char *p;
    size_t len, cap;
    bool failed;
} membuf;

static void membuf_put(void *ctx, void *data, int size) {
    membuf *b = ctx;
    if (b->failed || size <= 0) return;
    if (b->len + (size_t)size > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)size) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, (size_t)size);
    b->len += (size_t)size;
}

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The PNG signature (8 bytes) and the IHDR chunk (4 length + 4 type + 13
 * data + 4 CRC) that stb writes first: the text chunk goes right after. */
enum { PNG_IHDR_END = 8 + 4 + 4 + 13 + 4 };

bool png_encode(const pt_image *img, const char *keyword, const char *text, unsigned char **out,
                size_t *len) {
    *out = NULL;
    *len = 0;
    const size_t klen = strlen(keyword), tlen = strlen(text);
    if (!img->pixels || img->width <= 0 || img->height <= 0 || klen < 1 || klen > 79 ||
        tlen > (1u << 30) || img->stride > (size_t)INT32_MAX)
        return false;
    membuf b = {0};
    if (!stbi_write_png_to_func(membuf_put, &b, img->width, img->height, 3, img->pixels,
                                (int)img->stride) ||
        b.failed || b.len < PNG_IHDR_END || memcmp(b.p + 12, "IHDR", 4) != 0) {
        free(b.p);
        return false;
    }
    bool ascii = true;
    for (size_t i = 0; i < tlen; i++) ascii = ascii && (unsigned char)text[i] < 0x80;
    /* tEXt: keyword NUL text (Latin-1). iTXt: keyword NUL, compression
     * flag 0, method 0, language "" NUL, translated keyword "" NUL, text
     * (UTF-8). */
    const size_t head = ascii ? klen + 1 : klen + 5;
    const size_t data_len = head + tlen, chunk = 12 + data_len;
    unsigned char *png = malloc(b.len + chunk);
    if (!png) {
        free(b.p);
        return false;
    }
    memcpy(png, b.p, PNG_IHDR_END);
    unsigned char *c = png + PNG_IHDR_END;
    put_be32(c, (uint32_t)data_len);
    memcpy(c + 4, ascii ? "tEXt" : "iTXt", 4);
    memcpy(c + 8, keyword, klen);
    memset(c + 8 + klen, 0, head - klen);
    memcpy(c + 8 + head, text, tlen);
    /* the CRC covers the chunk type and data */
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, c + 4, (uInt)(4 + data_len));
    put_be32(c + 8 + data_len, (uint32_t)crc);
    memcpy(png + PNG_IHDR_END + chunk, b.p + PNG_IHDR_END, b.len - PNG_IHDR_END);
    free(b.p);
    *out = png;
    *len = b.len + chunk;
    return true;
}

/* ---- writing ----------------------------------------------------------- */

static bool write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* A device, FIFO or other non-regular file that exists: write in place. */
static bool write_special(const char *path, const void *data, size_t len, char *why, size_t cap) {
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, cap, "cannot open %s for writing: %s", path, strerror(errno));
        return false;
    }
    bool ok = write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) snprintf(why, cap, "cannot write %s: %s", path, strerror(e));
    return ok;
}

bool write_file_atomic(const char *path, const void *data, size_t len, const atomic_bool *cancel,
                       bool *cancelled, char *why, size_t why_cap) {
    *cancelled = false;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, why_cap, "cannot write %s: it is a directory", path);
            return false;
        }
        if (!S_ISREG(st.st_mode)) return write_special(path, data, len, why, why_cap);
    }
    /* the temporary file: ".NAME.XXXXXX" beside path */
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    if (!*base) {
        snprintf(why, why_cap, "cannot write %s: it names a directory", path);
        return false;
    }
    const size_t tmp_cap = strlen(path) + 16;
    char *tmp = malloc(tmp_cap);
    if (!tmp) {
        snprintf(why, why_cap, "out of memory writing %s", path);
        return false;
    }
    snprintf(tmp, tmp_cap, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(why, why_cap, "cannot create a file beside %s: %s", path, strerror(errno));
        free(tmp);
        return false;
    }
    /* mkstemp makes it 0600: give it the mode a new file would get */
    mode_t mask = umask(0);
    umask(mask);
    bool ok = fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, data, len) && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && cancel && atomic_load(cancel)) {
        *cancelled = true;
        ok = false;
        e = 0;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        if (!*cancelled) snprintf(why, why_cap, "cannot write %s: %s", path, strerror(e));
    } else {
        /* make the rename itself durable: fsync the directory (best effort) */
        char *dir = strndup(path, dir_len ? dir_len : 1);
        if (dir) {
            if (!dir_len) dir[0] = '.';
            int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            free(dir);
        }
    }
    free(tmp);
    return ok;
}
