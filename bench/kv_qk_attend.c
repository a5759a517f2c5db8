/*
 * kv_qk_attend.c — one decode step's attention over the paged KV cache
 * (engine/kv_cache.h pt_kv_attend), float Q·K against int8 Q·K, on one
 * thread, timed in the thread's CPU time: on a machine shared with other
 * jobs the time slices they take are not counted, which makes this the
 * steadier figure beside bench/kv_qk's end-to-end decode.
 *
 *   kv_qk_attend DEPTH HEAD_DIM GROUP KV_TYPE ROUNDS CALLS
 *
 * One cache of KV_TYPE (q8 or q8f8) per mode, one layer and one KV head,
 * filled with the same DEPTH random positions; per round CALLS calls of
 * pt_kv_attend for one token at the last position with GROUP query heads
 * (SmolLM2-135M: HEAD_DIM 64, GROUP 3), float then int8 (alternating
 * which goes first). Prints "round R float_us F int8_us I" (per call) and
 * "best_float_us", "best_int8_us", "ratio" (best float / best int8: the
 * int8 path's speedup of the attention).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kv_cache.h"

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: kv_qk_attend DEPTH HEAD_DIM GROUP KV_TYPE ROUNDS CALLS\n");
        return 2;
    }
    const int depth = atoi(argv[1]), D = atoi(argv[2]), group = atoi(argv[3]), rounds = atoi(argv[5]),
              calls = atoi(argv[6]);
    const int type = pt_kv_type_from_name(argv[4]);
    if (depth < 1 || D < 1 || D > 512 || group < 1 || group > 16 || rounds < 1 || calls < 1 ||
        (type != PT_KV_Q8 && type != PT_KV_Q8F8)) {
        fprintf(stderr, "kv_qk_attend: bad arguments (HEAD_DIM 1..512, GROUP 1..16, KV_TYPE q8 or q8f8)\n");
        return 2;
    }
    pt_cpu cpu;
    pt_cpu_detect(&cpu);
    pt_kv_cache kv[2];
    float *k = malloc(sizeof(float) * D), *v = malloc(sizeof(float) * D);
    float *q = malloc(sizeof(float) * group * D), *out = malloc(sizeof(float) * group * D);
    float *scr[2];
    for (int m = 0; m < 2; m++) {
        pt_error err = {0};
        const pt_kv_opts o = {type, &cpu, 0, NULL, m ? PT_KV_QK_INT8 : PT_KV_QK_FLOAT};
        if (pt_kv_init(&kv[m], 1, depth, 1, D, &o, &err) != PT_OK ||
            pt_kv_begin_layer(&kv[m], 0, 0, depth, &err) != PT_OK) {
            fprintf(stderr, "kv_qk_attend: %s\n", err.msg);
            return 1;
        }
        scr[m] = malloc(sizeof(float) * pt_kv_attend_scratch_floats(&kv[m], group));
    }
    for (int p = 0; p < depth; p++) {
        for (int d = 0; d < D; d++) k[d] = frand() * (d % 7 == 0 ? 4.0f : 1.0f), v[d] = frand();
        pt_kv_store(&kv[0], 0, p, k, v);
        pt_kv_store(&kv[1], 0, p, k, v);
    }
    for (int i = 0; i < group * D; i++) q[i] = frand();
    printf("variant %s, depth %d, head_dim %d, %d query heads per KV head, %s\n",
           pt_cpu_variant_name(cpu.variant), depth, D, group, argv[4]);
    double best[2] = {INFINITY, INFINITY};
    volatile float sink = 0;
    for (int r = 0; r < rounds; r++) {
        double us[2];
        for (int s = 0; s < 2; s++) {
            const int m = (r + s) % 2;
            const double t0 = cpu_s();
            for (int c = 0; c < calls; c++) {
                pt_kv_attend(&kv[m], 0, 0, out, (int64_t)group * D, q, (int64_t)group * D, 1, group, depth - 1, 0,
                             1.0f / sqrtf((float)D), scr[m]);
                sink += out[0];
            }
            us[m] = 1e6 * (cpu_s() - t0) / calls;
            best[m] = us[m] < best[m] ? us[m] : best[m];
        }
        printf("round %d float_us %.1f int8_us %.1f\n", r, us[0], us[1]);
    }
    printf("best_float_us %.1f\nbest_int8_us %.1f\nratio %.3f\n", best[0], best[1], best[0] / best[1]);
    if (!(sink == sink)) fprintf(stderr, "kv_qk_attend: the outputs are NaN\n"); /* and sink is used */
    for (int m = 0; m < 2; m++) {
        pt_kv_release(&kv[m]);
        free(scr[m]);
    }
    free(k);
    free(v);
    free(q);
    free(out);
    return 0;
}
