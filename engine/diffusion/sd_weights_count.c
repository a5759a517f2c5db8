/* sd_weights_count.c — parameter counts of an image model's parts
 * (sd_weights_params, sd_weights.h), for pt_image_model_get_info. */
#include <string.h>

#include "sd_weights_impl.h"

int64_t sd_weights_params(const sd_weights *w, const char *prefix) {
    const size_t plen = strlen(prefix);
    int64_t sum = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (strncmp(w->e[i].name, prefix, plen) != 0) continue;
        const sd_tensor *t = &w->e[i].t;
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) n *= t->shape[d];
        sum += n;
    }
    return sum;
}
