/* args.c — strict number parsing and error printing for the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "catalog.h"
#include "paths.h"

bool arg_int(const char *s, long lo, long hi, int *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

bool arg_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = (uint64_t)v;
    return true;
}

bool arg_float(const char *s, double lo, double hi, float *out) {
    /* plain decimal only: strtod would also take hex floats ("0x10") */
    if (!s || !*s || s[strspn(s, "0123456789+-.eE")]) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi) return false;
    *out = (float)v;
    return true;
}

const char *app_escaped(const char *s, char *buf, size_t cap) {
    pt_escape_text(s ? s : "", s ? strlen(s) : 0, buf, cap);
    return buf;
}

void app_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("petrel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int app_fail(const pt_error *err) {
    app_error("%s", err->msg[0] ? err->msg : pt_status_name(err->code));
    return 1;
}

const char *arg_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        app_error("option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

const char *app_model_path(const char *given, char *buf, size_t cap) {
    return app_resolve_model(given, PT_MODEL_KIND_LLM, buf, cap);
}

pt_model_params app_model_params(pt_threadpool *pool) {
    pt_model_params mp = pt_model_default_params();
    mp.cpu = getenv("PETREL_CPU");
    mp.threadpool = pool;
    return mp;
}
