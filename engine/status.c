/* status.c — status names and error messages. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

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
