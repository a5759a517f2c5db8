/* status.h — filling a pt_error. Internal to the engine. */
#ifndef PETREL_STATUS_H
#define PETREL_STATUS_H

#include "petrel.h"

/* Record code and a printf-style one-line message in err (err may be NULL).
 * Returns code so callers can write `return pt_fail(err, PT_ERR_FORMAT, ...)`. */
pt_status pt_fail(pt_error *err, pt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
