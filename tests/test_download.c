/*
 * test_download.c — the downloader's pieces that need no server: source
 * resolution (hf:// with HF_ENDPOINT-style endpoints and revisions, ms://,
 * URLs, every refusal), the .part sidecar's round trip and its refusal of
 * anything malformed, and pt_download's argument checks. The transfers
 * themselves are tests/test_pull.sh's (a loopback server).
 */
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "download_part.h"
#include "petrel.h"

static void resolve(void) {
    pt_download_params p = pt_download_default_params();
    char url[512];
    pt_error err = {0};
    static const struct {
        const char *src, *hf, *ms, *want;
    } good[] = {
        {"hf://Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf", NULL, NULL,
         "https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf"},
        {"hf://org/repo/dir/sub/f.gguf", "https://hf-mirror.com/", NULL,
         "https://hf-mirror.com/org/repo/resolve/main/dir/sub/f.gguf"},
        {"hf://org/repo@v1.0/f.gguf", "http://127.0.0.1:8/hf", NULL, "http://127.0.0.1:8/hf/org/repo/resolve/v1.0/f.gguf"},
        {"hf://org/repo/a b+c.gguf", NULL, NULL, "https://huggingface.co/org/repo/resolve/main/a%20b%2Bc.gguf"},
        {"ms://qwen/Qwen2.5-0.5B-Instruct-GGUF/q.gguf", NULL, NULL,
         "https://www.modelscope.cn/models/qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/master/q.gguf"},
        {"ms://a/b@v2/q.gguf", NULL, "https://mirror.example", "https://mirror.example/models/a/b/resolve/v2/q.gguf"},
        {"https://example.org/x/y.gguf?download=true", NULL, NULL, "https://example.org/x/y.gguf?download=true"},
        {"http://127.0.0.1:1/f", NULL, NULL, "http://127.0.0.1:1/f"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        p.hf_endpoint = good[i].hf;
        p.ms_endpoint = good[i].ms;
        pt_status st = pt_download_resolve(good[i].src, &p, url, sizeof url, &err);
        CHECK(st == PT_OK && !strcmp(url, good[i].want), "%s -> %s (want %s; %s)", good[i].src, st ? "-" : url,
              good[i].want, err.msg);
    }
    p = pt_download_default_params();
    static const struct {
        const char *src, *words;
    } bad[] = {
        {"hf://org", "want hf://ORG/REPO/FILE"},
        {"hf://org/repo", "want hf://ORG/REPO/FILE"},
        {"hf://org/repo/", "want hf://ORG/REPO/FILE"},
        {"hf://org/../f", "'..' part"},
        {"hf://org/repo/a//b", "an empty"},
        {"hf://org/repo@/f", "an empty"},
        {"ms://x", "want ms://ORG/REPO/FILE"},
        {"ftp://h/f", "not a source petrel can fetch"},
        {"file:///etc/passwd", "not a source petrel can fetch"},
        {"/local/path.gguf", "not a source petrel can fetch"},
        {"https://", "no host"},
        {"https:///x", "no host"},
        {"https://h/a b", "must not hold spaces"},
        {"https://h/\x1b[2J", "control characters"},
        {"hf://o/r/\x1b[2J", "control characters"},
        {"", "no source"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pt_status st = pt_download_resolve(bad[i].src, &p, url, sizeof url, &err);
        CHECK(st == PT_ERR_ARG && strstr(err.msg, bad[i].words) && !strchr(err.msg, '\n'), "'%s': want '%s', got %d '%s'",
              bad[i].src, bad[i].words, st, err.msg);
    }
    char tiny[16];
    CHECK(pt_download_resolve("hf://org/repo/file.gguf", &p, tiny, sizeof tiny, &err) == PT_ERR_ARG &&
              strstr(err.msg, "too long"), "URL longer than the buffer: %s", err.msg);
    pt_download_params big = pt_download_default_params();
    big.size = sizeof big + 8;
    CHECK(pt_download_resolve("hf://a/b/c", &big, url, sizeof url, &err) == PT_ERR_ARG &&
              strstr(err.msg, "pt_download_params.size"), "newer params refused: %s", err.msg);
}

static void sidecar(void) {
    char dir[] = "/tmp/petrel-dl-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/m.gguf.part.meta", dir);
    pt_part_meta m = {.total = 12345};
    strcpy(m.url, "https://huggingface.co/a/b/resolve/main/m.gguf");
    strcpy(m.validator, "\"abc\"");
    strcpy(m.sha256, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    CHECK(pt_part_meta_write(path, &m), "write");
    pt_part_meta r;
    CHECK(pt_part_meta_read(path, &r) && !strcmp(r.url, m.url) && !strcmp(r.validator, m.validator) &&
              !strcmp(r.sha256, m.sha256) && r.total == 12345,
          "round trip");
    /* empty validator and sha256 are fine */
    pt_part_meta e = {.total = 0};
    strcpy(e.url, "http://h/f");
    CHECK(pt_part_meta_write(path, &e) && pt_part_meta_read(path, &r) && !r.validator[0] && !r.sha256[0],
          "empty fields");
    /* a newline in a value would forge a field: refused */
    strcpy(e.validator, "x\nsha256 evil");
    CHECK(!pt_part_meta_write(path, &e), "newline refused");
    /* a NUL inside: sized by its array, not strlen */
    static const char nul_case[] = "petrel-part 1\nurl u\0x\nvalidator \nsha256 \ntotal 1\n";
    static const char *const broken[] = {
        "",
        "petrel-part 2\nurl u\nvalidator \nsha256 \ntotal 1\n",
        "petrel-part 1\nurl u\nvalidator \nsha256 \ntotal x\n",
        "petrel-part 1\nurl u\nvalidator \nsha256 \ntotal 1\nextra\n",
        "petrel-part 1\nurl u\nvalidator \nsha256 \ntotal 1",
        "petrel-part 1\nurl \nvalidator \nsha256 \ntotal 1\n",
        "petrel-part 1\nvalidator \nurl u\nsha256 \ntotal 1\n",
        nul_case,
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        FILE *f = fopen(path, "wb");
        size_t len = broken[i] == nul_case ? sizeof nul_case - 1 : strlen(broken[i]);
        fwrite(broken[i], 1, len, f);
        fclose(f);
        CHECK(!pt_part_meta_read(path, &r), "malformed sidecar %zu refused", i);
    }
    unlink(path);
    CHECK(!pt_part_meta_read(path, &r), "missing sidecar");
    rmdir(dir);
}

static void arguments(void) {
    pt_error err = {0};
    pt_download_params p = pt_download_default_params();
    p.sha256 = "xyz";
    CHECK(pt_download("http://127.0.0.1:1/f", "/tmp/petrel-never", &p, NULL, &err) == PT_ERR_ARG &&
              strstr(err.msg, "sha256 must be 64 hex"), "bad sha256: %s", err.msg);
    p = pt_download_default_params();
    p.stall_seconds = 0;
    CHECK(pt_download("http://127.0.0.1:1/f", "/tmp/petrel-never", &p, NULL, &err) == PT_ERR_ARG, "bad stall");
    p = pt_download_default_params();
    CHECK(pt_download("http://127.0.0.1:1/f", "", &p, NULL, &err) == PT_ERR_ARG, "no destination");
    CHECK(pt_download("gopher://x/f", "/tmp/petrel-never", &p, NULL, &err) == PT_ERR_ARG, "bad scheme");
    CHECK(pt_download("http://127.0.0.1:1/f", "/nonexistent-dir/x", &p, NULL, &err) == PT_ERR_IO &&
              strstr(err.msg, "cannot open /nonexistent-dir/x.part"), "unwritable folder: %s", err.msg);
    /* nothing listens on port 1: a connection error, after the retries */
    p.max_retries = 1;
    p.retry_wait_s = 0;
    char dir[] = "/tmp/petrel-dl-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char dest[256];
    snprintf(dest, sizeof dest, "%s/f", dir);
    pt_download_result res;
    pt_status st = pt_download("http://127.0.0.1:1/f", dest, &p, &res, &err);
    CHECK(st == PT_ERR_NETWORK && strstr(err.msg, "127.0.0.1:1") && strstr(err.msg, "(2 attempts)") && res.attempts == 2,
          "connection refused, retried once: %d %s", st, err.msg);
    struct stat sb;
    CHECK(stat(dest, &sb) != 0, "nothing under the final name");
    char part[300];
    snprintf(part, sizeof part, "%s.part", dest);
    unlink(part);
    rmdir(dir);
    /* a cancel flag already set: cancelled before anything is asked */
    atomic_bool cancel = true;
    p.cancel = &cancel;
    CHECK(mkdtemp(strcpy(dir, "/tmp/petrel-dl-XXXXXX")) != NULL, "mkdtemp");
    snprintf(dest, sizeof dest, "%s/f", dir);
    st = pt_download("http://127.0.0.1:1/f", dest, &p, &res, &err);
    CHECK(st == PT_ERR_CANCELLED, "cancel set: %d %s", st, err.msg);
    snprintf(part, sizeof part, "%s.part", dest);
    unlink(part);
    rmdir(dir);
}

int main(void) {
    resolve();
    sidecar();
    arguments();
    return check_done("download");
}
