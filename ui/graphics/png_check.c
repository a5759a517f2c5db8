/*
 * png_check.c — a PNG's compressed pixel data measured before stb_image
 * decodes it. stb's inflater grows its output buffer as a stream asks,
 * and a malformed stream of a few hundred bytes made it ask for 2 GB
 * (fuzz_gfx_picture). So the IDAT stream is first inflated by zlib into
 * a scratch buffer that is thrown away, counting bytes: a stream zlib
 * refuses, or one that holds more bytes than the header's size can use,
 * is refused here and never reaches stb.
 *
 * File layout (PNG spec): the 8-byte signature, then chunks of
 * length (4, big-endian), type (4), data (length), CRC (4). IHDR comes
 * first: width, height (4 each), bit depth, colour type, compression,
 * filter, interlace (1 each). The pixel data is the concatenation of
 * every IDAT chunk's data, one zlib stream (raw deflate in Apple's CgBI
 * variant, which stb also reads); inflated, it is one filter byte then
 * ceil(width * bits per pixel / 8) bytes per row, per Adam7 pass when
 * interlaced.
 */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "picture_file.h"

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Bytes of the inflated pixel data of a w x h picture at bpp bits per
 * pixel: rows of a filter byte and their packed pixels, per pass. */
static uint64_t raw_bytes(uint64_t w, uint64_t h, uint64_t bpp, bool adam7) {
    static const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                   {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
    if (!adam7) return h * (1 + (w * bpp + 7) / 8);
    uint64_t n = 0;
    for (int p = 0; p < 7; p++) {
        const uint64_t x0 = (uint64_t)pass[p][0], y0 = (uint64_t)pass[p][1];
        const uint64_t dx = (uint64_t)pass[p][2], dy = (uint64_t)pass[p][3];
        const uint64_t cols = w > x0 ? (w - x0 + dx - 1) / dx : 0, rows = h > y0 ? (h - y0 + dy - 1) / dy : 0;
        if (cols && rows) n += rows * (1 + (cols * bpp + 7) / 8);
    }
    return n;
}

bool pt_png_check(const uint8_t *b, size_t n) {
    if (n < 8 || memcmp(b, "\x89PNG\r\n\x1a\n", 8) != 0) return true; /* not a PNG: not ours to judge */
    uint64_t limit = 0;
    bool have_ihdr = false, cgbi = false, ok = true, ended = false;
    z_stream z;
    memset(&z, 0, sizeof z);
    uint8_t sink[1 << 14];
    uint64_t out = 0;
    for (size_t at = 8; at + 12 <= n && ok && !ended;) {
        const uint32_t len = be32(b + at);
        const uint8_t *type = b + at + 4, *data = b + at + 8;
        if (len > n - at - 12) break; /* truncated: stb says so */
        if (!memcmp(type, "CgBI", 4)) cgbi = true;
        if (!memcmp(type, "IHDR", 4) && len >= 13 && !have_ihdr) {
            static const int channels[7] = {1, 0, 3, 1, 2, 0, 4}; /* by colour type */
            const int ct = data[9];
            const uint64_t bpp = ct <= 6 ? (uint64_t)channels[ct] * data[8] : 0;
            limit = raw_bytes(be32(data), be32(data + 4), bpp ? bpp : 64, data[12] == 1);
            have_ihdr = true;
            if ((cgbi ? inflateInit2(&z, -15) : inflateInit(&z)) != Z_OK) return false;
        } else if (!memcmp(type, "IDAT", 4) && have_ihdr) {
            z.next_in = (Bytef *)(uintptr_t)data;
            z.avail_in = len;
            while (z.avail_in > 0 && ok) {
                z.next_out = sink;
                z.avail_out = sizeof sink;
                const int r = inflate(&z, Z_NO_FLUSH);
                out += sizeof sink - z.avail_out;
                if (out > limit || r == Z_DATA_ERROR || r == Z_MEM_ERROR || r == Z_NEED_DICT) ok = false;
                if (r == Z_STREAM_END) { ended = true; break; }
                if (r == Z_BUF_ERROR && z.avail_out == sizeof sink) break; /* needs the next chunk */
            }
        }
        at += 12 + (size_t)len;
    }
    if (have_ihdr) inflateEnd(&z);
    return ok;
}
