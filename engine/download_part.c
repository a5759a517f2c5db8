/* download_part.c — the .part sidecar (format in download_part.h). */
#include "download_part.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "KEY VALUE\n" at the start of *p into val (cap bytes); advances *p. */
static bool field(const char **p, const char *key, char *val, size_t cap) {
    size_t k = strlen(key);
    if (strncmp(*p, key, k) != 0 || (*p)[k] != ' ') return false;
    const char *v = *p + k + 1;
    const char *nl = strchr(v, '\n');
    if (!nl || (size_t)(nl - v) >= cap) return false;
    memcpy(val, v, (size_t)(nl - v));
    val[nl - v] = 0;
    *p = nl + 1;
    return true;
}

bool pt_part_meta_read(const char *meta_path, pt_part_meta *m) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(meta_path, "rb");
    if (!f) return false;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (n == sizeof buf - 1 || strlen(buf) != n) return false;
    const char *p = buf;
    static const char magic[] = "petrel-part 1\n";
    if (strncmp(p, magic, sizeof magic - 1) != 0) return false;
    p += sizeof magic - 1;
    char total[32];
    if (!field(&p, "url", m->url, sizeof m->url) || !field(&p, "validator", m->validator, sizeof m->validator) ||
        !field(&p, "sha256", m->sha256, sizeof m->sha256) || !field(&p, "total", total, sizeof total) || *p)
        return false;
    char *end;
    errno = 0;
    unsigned long long t = strtoull(total, &end, 10);
    if (errno || *end || !*total || !m->url[0]) return false;
    m->total = (uint64_t)t;
    return true;
}

bool pt_part_meta_write(const char *meta_path, const pt_part_meta *m) {
    if (strpbrk(m->url, "\r\n") || strpbrk(m->validator, "\r\n") || strpbrk(m->sha256, "\r\n")) {
        errno = EINVAL;
        return false;
    }
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp", meta_path);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return false;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    fprintf(f, "petrel-part 1\nurl %s\nvalidator %s\nsha256 %s\ntotal %" PRIu64 "\n", m->url, m->validator,
            m->sha256, m->total);
    bool ok = fflush(f) == 0 && !ferror(f);
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, meta_path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        errno = e;
    }
    return ok;
}
