/*
 * test_gfx_picture.c — the image files `petrel show` reads
 * (ui/graphics/picture_file.c): PNG decoded exactly and JPEG closely
 * (both written here by stb_image_write), and every way a file can be
 * wrong refused with a reason: empty, not a picture, each truncation of a
 * PNG and a JPEG, a header claiming a giant size, a directory, a missing
 * file. None may crash (the ASan build runs this too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include <stb_image_write.h>

#include "check.h"
#include "picture_file.h"

typedef struct mem {
    uint8_t *data;
    size_t len;
} mem;

static void put(void *ctx, void *data, int size) {
    mem *m = ctx;
    m->data = realloc(m->data, m->len + (size_t)size);
    memcpy(m->data + m->len, data, (size_t)size);
    m->len += (size_t)size;
}

static uint8_t *picture(int w, int h) {
    uint8_t *p = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++) {
        p[i * 3] = (uint8_t)(i % w * 255 / (w > 1 ? w - 1 : 1));
        p[i * 3 + 1] = (uint8_t)(i / w * 255 / (h > 1 ? h - 1 : 1));
        p[i * 3 + 2] = 90;
    }
    return p;
}

static void test_good(void) {
    uint8_t *px = picture(33, 17);
    mem png = {0}, jpg = {0};
    stbi_write_png_to_func(put, &png, 33, 17, 3, px, 33 * 3);
    stbi_write_jpg_to_func(put, &jpg, 33, 17, 3, px, 95);
    pt_picture p;
    char why[256] = "";
    CHECK(pt_picture_decode(png.data, png.len, &p, why, sizeof why) && p.w == 33 && p.h == 17 &&
              !memcmp(p.rgb, px, 33 * 17 * 3),
          "PNG decodes exactly (%s)", why);
    pt_picture_free(&p);
    CHECK(p.rgb == NULL, "free clears");
    bool ok = pt_picture_decode(jpg.data, jpg.len, &p, why, sizeof why);
    double err = 0;
    for (int i = 0; ok && i < 33 * 17 * 3; i++) err += abs((int)p.rgb[i] - px[i]);
    err /= 33 * 17 * 3;
    CHECK(ok && p.w == 33 && p.h == 17 && err < 4, "JPEG decodes (quality 95: mean error %.2f < 4) (%s)", err, why);
    pt_picture_free(&p);

    /* each truncation of both files: refused with a reason, or (JPEG and
     * PNG decoders may fill in a missing tail) decoded at the right size */
    int bad = 0;
    for (int f = 0; f < 2; f++) {
        const mem *m = f ? &jpg : &png;
        for (size_t n = 0; n < m->len; n++) {
            uint8_t *cut = malloc(n ? n : 1);
            memcpy(cut, m->data, n);
            why[0] = '\0';
            if (pt_picture_decode(cut, n, &p, why, sizeof why)) {
                if (p.w != 33 || p.h != 17) bad++;
                pt_picture_free(&p);
            } else if (!why[0] || strchr(why, '\n')) {
                bad++;
            }
            free(cut);
        }
    }
    CHECK(bad == 0, "%d truncations gave no reason or a wrong size", bad);

    /* the files on disk */
    char path[] = "/tmp/petrel-gfx-pic-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, png.data, png.len) == (ssize_t)png.len, "temp file");
    close(fd);
    CHECK(pt_picture_load(path, &p, why, sizeof why) && p.w == 33, "load from a file (%s)", why);
    pt_picture_free(&p);
    unlink(path);
    free(png.data);
    free(jpg.data);
    free(px);
}

/* A PNG whose IHDR claims w x h (CRC right), with a tiny IDAT. */
static mem png_claiming(uint32_t w, uint32_t h) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[25] = {0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    for (int i = 0; i < 4; i++) {
        ihdr[8 + i] = (uint8_t)(w >> (24 - 8 * i));
        ihdr[12 + i] = (uint8_t)(h >> (24 - 8 * i));
    }
    ihdr[16] = 8; /* bit depth */
    ihdr[17] = 2; /* RGB */
    uint32_t crc = (uint32_t)crc32(0, ihdr + 4, 17);
    for (int i = 0; i < 4; i++) ihdr[21 + i] = (uint8_t)(crc >> (24 - 8 * i));
    static const uint8_t rest[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    mem m = {malloc(sizeof sig + sizeof ihdr + sizeof rest), 0};
    memcpy(m.data, sig, 8);
    memcpy(m.data + 8, ihdr, sizeof ihdr);
    memcpy(m.data + 8 + sizeof ihdr, rest, sizeof rest);
    m.len = 8 + sizeof ihdr + sizeof rest;
    return m;
}

static void test_bad(void) {
    pt_picture p;
    char why[256];
    CHECK(!pt_picture_decode("", 0, &p, why, sizeof why) && strstr(why, "empty"), "empty: %s", why);
    CHECK(!pt_picture_decode("hello, world", 12, &p, why, sizeof why) && strstr(why, "not a picture"),
          "text: %s", why);
    /* stb refuses this one itself (over 2^30 bytes) */
    mem giant = png_claiming(100000, 100000);
    CHECK(!pt_picture_decode(giant.data, giant.len, &p, why, sizeof why) && strstr(why, "too large") && !p.rgb,
          "giant PNG refused before decoding: %s", why);
    free(giant.data);
    /* and this one is ours: a side over PT_PICTURE_MAX_SIDE */
    giant = png_claiming(PT_PICTURE_MAX_SIDE + 1, 10);
    CHECK(!pt_picture_decode(giant.data, giant.len, &p, why, sizeof why) && strstr(why, "too large") && !p.rgb,
          "PNG wider than %d refused: %s", PT_PICTURE_MAX_SIDE, why);
    free(giant.data);
    /* both sides allowed, the whole too large (found by fuzz_gfx_picture:
     * a GIF of 16384 x 16384 went past the fuzzer's 2 GB) */
    giant = png_claiming(PT_PICTURE_MAX_SIDE, PT_PICTURE_MAX_PIXELS / PT_PICTURE_MAX_SIDE + 1);
    CHECK(!pt_picture_decode(giant.data, giant.len, &p, why, sizeof why) && strstr(why, "Mpixel") && !p.rgb,
          "PNG of over %u pixels refused: %s", PT_PICTURE_MAX_PIXELS, why);
    free(giant.data);
    /* a 3x9 PNG whose IDAT stream made stb's inflater ask for 2 GB (found
     * by fuzz_gfx_picture): zlib measures the stream first */
    static const uint8_t bomb_head[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                        0, 0, 0, 3, 0, 0, 0, 9, 8, 6, 0, 0, 0};
    {
        /* IHDR of 3x9 RGBA8 (CRC not checked by stb), then an IDAT whose
         * deflate stream holds 1 MiB of zeros: far more than 9 rows of
         * 1 + 12 bytes */
        static uint8_t zeros[1 << 20];
        uLongf zn = compressBound(sizeof zeros);
        uint8_t *png = malloc(sizeof bomb_head + 4 + 12 + zn + 12);
        uint8_t *z = png + sizeof bomb_head + 4 + 8;
        CHECK(png && compress(z, &zn, zeros, sizeof zeros) == Z_OK, "deflate 1 MiB");
        memcpy(png, bomb_head, sizeof bomb_head);
        uint8_t *c = png + sizeof bomb_head + 4; /* after IHDR's CRC */
        c[0] = (uint8_t)(zn >> 24), c[1] = (uint8_t)(zn >> 16), c[2] = (uint8_t)(zn >> 8), c[3] = (uint8_t)zn;
        memcpy(c + 4, "IDAT", 4);
        const size_t len = sizeof bomb_head + 4 + 8 + zn + 4;
        CHECK(!pt_png_check(png, len), "an IDAT stream longer than the picture is refused");
        CHECK(!pt_picture_decode(png, len, &p, why, sizeof why) && strstr(why, "corrupt PNG") && !p.rgb,
              "over-long PNG data: %s", why);
        free(png);
    }
    mem fine = png_claiming(64, 64); /* a right header, no pixel data */
    CHECK(!pt_picture_decode(fine.data, fine.len, &p, why, sizeof why) && strstr(why, "corrupt"),
          "PNG without IDAT: %s", why);
    free(fine.data);
    /* a critical chunk of an unknown type with ESC and newline in its
     * name: stb quotes the type in its reason (found by fuzz_gfx_picture) */
    mem odd = png_claiming(12, 7);
    uint8_t chunk[12] = {0, 0, 0, 0, 0x1b, '\n', 'X', 'Y'};
    uint32_t crc = (uint32_t)crc32(0, chunk + 4, 4);
    for (int i = 0; i < 4; i++) chunk[8 + i] = (uint8_t)(crc >> (24 - 8 * i));
    odd.data = realloc(odd.data, odd.len + sizeof chunk);
    memmove(odd.data + 33 + sizeof chunk, odd.data + 33, odd.len - 33); /* after IHDR */
    memcpy(odd.data + 33, chunk, sizeof chunk);
    odd.len += sizeof chunk;
    bool clean = true;
    CHECK(!pt_picture_decode(odd.data, odd.len, &p, why, sizeof why), "unknown critical chunk refused");
    for (const char *c = why; *c; c++) clean = clean && (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f;
    CHECK(clean && why[0], "the reason is printable: %s", why);
    free(odd.data);
    CHECK(!pt_picture_load("/nonexistent/x.png", &p, why, sizeof why) && strstr(why, "No such file"),
          "missing: %s", why);
    CHECK(!pt_picture_load("/tmp", &p, why, sizeof why) && why[0], "directory: %s", why);
}

int main(void) {
    test_good();
    test_bad();
    return check_done("gfx_picture");
}
