/* base64.c — base64 (RFC 4648, no line breaks) through glib's encoder
 * into a buffer of ours, so running out of memory is an error, not
 * glib's abort. */
#include <glib.h>
#include <stdlib.h>

#include "gfx_internal.h"

char *pt_gfx_base64(const void *data, size_t n, size_t *out_len) {
    if (n > (SIZE_MAX - 16) / 4 * 3) return NULL;
    /* g_base64_encode_step's bound without line breaks: (n / 3 + 1) * 4,
     * plus up to 4 from g_base64_encode_close, plus the NUL */
    char *out = malloc((n / 3 + 1) * 4 + 5);
    if (!out) return NULL;
    gint state = 0, save = 0;
    gsize len = g_base64_encode_step(data, n, FALSE, out, &state, &save);
    len += g_base64_encode_close(FALSE, out + len, &state, &save);
    out[len] = '\0';
    *out_len = len;
    return out;
}
