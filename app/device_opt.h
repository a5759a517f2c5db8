/*
 * device_opt.h — the --device option of run, chat and bench
 * (cpu | opencl | opencl:N) and what it sets in pt_model_params, and the
 * one line printed when an OpenCL load runs on the CPU instead.
 */
#ifndef PETREL_DEVICE_OPT_H
#define PETREL_DEVICE_OPT_H

#include "petrel.h"

typedef struct app_device {
    pt_backend backend;  /* PT_BACKEND_CPU unless --device opencl */
    int index;           /* opencl:N (petrel info --devices' numbering) */
    char cache[4096];    /* $XDG_CACHE_HOME/petrel/opencl (else ~/.cache/...), or "" */
} app_device;

void app_device_init(app_device *d);
/* Parse a --device value into d; returns 1, or -1 after printing an error. */
int app_device_parse(app_device *d, const char *v);
/* Set mp's backend, device and program cache from d. */
void app_device_params(const app_device *d, pt_model_params *mp);
/* After a load: when OpenCL was asked for and the model runs on the CPU,
 * print one line on stderr saying why. */
void app_device_report(const app_device *d, const pt_model *m);
/* "  --device DEV ..." help lines. */
extern const char app_device_usage[];

#endif
