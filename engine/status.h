/* status.h — filling a pt_error. Internal to the engine. */
#ifndef PETREL_STATUS_H
#define PETREL_STATUS_H

#include "petrel.h"

/* Record code and a printf-style one-line message in err (err may be NULL).
 * Returns code so callers can write `return pt_fail(err, PT_ERR_FORMAT, ...)`. */
pt_status pt_fail(pt_error *err, pt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A caller's versioned params struct (its first field is `size_t size`,
 * see pt_model_params in petrel.h) over the defaults already in dst, which
 * is dst_size bytes: only the caller's first `size` bytes are read (an
 * older caller knows fewer fields), a size larger than this library's
 * struct is refused (a newer caller's fields would be ignored), and
 * dst's size field is set to dst_size. `what` names the struct in the
 * message ("pt_model_params"). given NULL: dst stays the defaults. */
pt_status pt_params_overlay(void *dst, size_t dst_size, const void *given, const char *what,
                            pt_error *err);

#endif
