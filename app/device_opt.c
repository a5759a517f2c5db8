/* device_opt.c — the --device option (device_opt.h). */
#include "device_opt.h"

#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char app_device_usage[] =
    "      --device DEV         where the model runs: cpu (default), opencl or opencl:N\n"
    "                           (N: petrel info --devices); without a usable OpenCL\n"
    "                           device the model runs on the CPU, saying why\n";

void app_device_init(app_device *d) {
    memset(d, 0, sizeof *d);
    d->backend = PT_BACKEND_CPU;
}

int app_device_parse(app_device *d, const char *v) {
    if (!v) return -1;
    if (!strcmp(v, "cpu")) {
        d->backend = PT_BACKEND_CPU;
        return 1;
    }
    int index = 0;
    if (!strcmp(v, "opencl") || (!strncmp(v, "opencl:", 7) && arg_int(v + 7, 0, 63, &index))) {
        d->backend = PT_BACKEND_OPENCL;
        d->index = index;
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            snprintf(d->cache, sizeof d->cache, "%s/petrel/opencl", xdg);
        else if (home && *home)
            snprintf(d->cache, sizeof d->cache, "%s/.cache/petrel/opencl", home);
        return 1;
    }
    app_error("--device wants cpu, opencl or opencl:N (N from 0 to 63), not '%s'", v);
    return -1;
}

void app_device_params(const app_device *d, pt_model_params *mp) {
    mp->backend = d->backend;
    mp->device = d->index;
    mp->device_cache = d->cache[0] ? d->cache : NULL;
}

void app_device_report(const app_device *d, const pt_model *m) {
    if (d->backend != PT_BACKEND_OPENCL || !m) return;
    pt_model_info info;
    pt_model_get_info(m, &info);
    if (info.device_note && info.device_note[0])
        fprintf(stderr, "petrel: OpenCL unavailable (%s): running on the CPU\n", info.device_note);
}
