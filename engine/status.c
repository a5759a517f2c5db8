/* status.c — status names and error messages. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *pt_status_name(pt_status s) {
    switch (s) {
    case PT_OK: return "ok";
    case PT_ERR_ARG: return "bad argument";
    case PT_ERR_IO: return "i/o error";
    case PT_ERR_FORMAT: return "bad format";
    case PT_ERR_UNSUPPORTED: return "unsupported";
    case PT_ERR_NOMEM: return "out of memory";
    case PT_ERR_CONTEXT_FULL: return "context full";
    case PT_ERR_CANCELLED: return "cancelled";
    case PT_ERR_TEMPLATE: return "chat template error";
    case PT_ERR_NETWORK: return "network error";
    case PT_ERR_CHECKSUM: return "checksum mismatch";
    }
    return "unknown status";
}

pt_status pt_fail(pt_error *err, pt_status code, const char *fmt, ...) {
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

pt_status pt_params_overlay(void *dst, size_t dst_size, const void *given, const char *what,
                            pt_error *err) {
    if (!given) return PT_OK;
    size_t size;
    memcpy(&size, given, sizeof size); /* the leading size field */
    if (size < sizeof size || size > dst_size)
        return pt_fail(err, PT_ERR_ARG, "%s.size is %zu, this library knows %zu bytes (start from its defaults)",
                       what, size, dst_size);
    memcpy(dst, given, size);
    memcpy(dst, &dst_size, sizeof dst_size);
    return PT_OK;
}
