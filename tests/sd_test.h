/*
 * sd_test.h — what the image graph tests share: a runtime to run a graph
 * on, and the error statistics of an output against its reference.
 */
#ifndef PETREL_SD_TEST_H
#define PETREL_SD_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sd_nn.h"

/* A runtime on cpu variant `cpu` (NULL: the best) with a private pool of
 * `threads`; exits the test when it cannot be made. */
static inline sd_runtime *sdt_runtime(const char *cpu, int threads, sd_weight_policy policy) {
    sd_runtime_params p = {.cpu = cpu, .threadpool = NULL, .n_threads = threads, .policy = policy};
    sd_runtime *rt = NULL;
    pt_error err = {0};
    if (sd_rt_new(&p, &rt, &err) != PT_OK) {
        fprintf(stderr, "sd_rt_new: %s\n", err.msg);
        exit(1);
    }
    return rt;
}

/* got against ref over n values: the largest error and |ref|, the RMS
 * error relative to ref's RMS, and the PSNR against the largest |ref|
 * (printed with `what`). */
typedef struct sdt_err {
    double max_err, max_ref, rel_rms, psnr;
} sdt_err;

static inline sdt_err sdt_compare(const char *what, const float *got, const float *ref, int64_t n) {
    double amax = 0, emax = 0, se = 0, sr = 0;
    for (int64_t i = 0; i < n; i++) {
        const double e = (double)got[i] - ref[i];
        amax = fmax(amax, fabs(ref[i]));
        emax = fmax(emax, fabs(e));
        se += e * e;
        sr += (double)ref[i] * ref[i];
    }
    const sdt_err r = {emax, amax, sqrt(se / sr), 10 * log10(amax * amax / (se / (double)n))};
    printf("%s: max err %.3g (max |ref| %.3g), rel rms %.3g, psnr %.1f dB\n", what, r.max_err,
           r.max_ref, r.rel_rms, r.psnr);
    return r;
}

#endif
