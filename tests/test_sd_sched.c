/*
 * test_sd_sched.c — the samplers (engine/diffusion/scheduler.c) against
 * diffusers 0.42.1 (tests/data/sd-tiny, made by tools/gen_sd_fixture.py):
 *
 * 1. ref.json sampler_tables: for euler, euler_a, dpmpp_2m, ddim, lcm,
 *    epsilon and v_prediction, 1..50 steps: timesteps exactly (they are
 *    integers or float32 values of numpy's linspace), sigmas and
 *    init_noise_sigma within SIGMA_ULPS float32 ulps (see below), and the
 *    step counts a class refuses refused here too.
 * 2. ref.safetensors sched.NAME.* / schedv.NAME.*: a 4-step trajectory
 *    from x0 with given model outputs and ancestral noise: the scaled
 *    UNet input (xin.K) and the latent after each step (x.K) within
 *    TRAJ_ULPS ulps of the value's magnitude.
 * 3. API: names, bad step counts, out-of-order steps, missing noise.
 *
 * Tolerances. The tables and updates are float32 arithmetic done in the
 * same order as torch; the remaining differences are in the libm calls
 * (torch's vectorized exp/log/sqrt vs glibc's) and in how torch's linspace
 * rounds its betas, both under one float32 ulp per operation; an ulp in
 * alphas_cumprod moves a sigma by a few ulps, and a 4-step trajectory
 * carries such differences of its scalars into every element. So the
 * checks allow a few ulps: SIGMA_ULPS 8 on tables, TRAJ_ULPS 64 relative
 * to the largest |x| of the step (x near 0 after cancellation has no
 * meaningful relative error). A wrong formula (a missing sqrt, a swapped
 * sigma, first- instead of second-order) is off by far more: percents.
 */
#include "check.h"
#include "scheduler.h"
#include "sd_fixture.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define SIGMA_ULPS 8.0
#define TRAJ_ULPS 64.0

static double ulps(float got, float want) {
    if (got == want) return 0;
    float scale = fabsf(want) > 1e-30f ? fabsf(want) : 1e-30f;
    return fabs((double)got - (double)want) / (double)(nextafterf(scale, INFINITY) - scale);
}

static sd_schedule_config sd_config(sd_prediction pred) {
    /* ref.json scheduler_config: SD's scheduler_config.json */
    sd_schedule_config c = {0};
    c.num_train_timesteps = 1000;
    c.beta_start = 0.00085;
    c.beta_end = 0.012;
    c.beta_schedule = SD_BETA_SCALED_LINEAR;
    c.prediction = pred;
    c.steps_offset = 1;
    c.clip_sample = 0;
    c.set_alpha_to_one = 0;
    return c;
}

static double worst_sigma, worst_traj;

static void test_tables(const cJSON *tables) {
    const char *preds[2] = {"epsilon", "v_prediction"};
    for (int k = 0; k < SD_SAMPLER_COUNT; k++) {
        const char *name = sd_sampler_name((sd_sampler)k);
        const cJSON *byname = cJSON_GetObjectItem(tables, name);
        CHECK(byname != NULL, "no table for %s", name);
        for (int p = 0; byname && p < 2; p++) {
            const cJSON *rows = cJSON_GetObjectItem(byname, preds[p]);
            const cJSON *row;
            int n_rows = 0;
            cJSON_ArrayForEach(row, rows) {
                int steps = atoi(row->string);
                sd_schedule_config c = sd_config(p ? SD_PRED_V : SD_PRED_EPSILON);
                sd_sched s;
                pt_error err = {0};
                pt_status st = sd_sched_init(&s, &c, (sd_sampler)k, steps, &err);
                n_rows++;
                if (cJSON_GetObjectItem(row, "error")) {
                    CHECK(st == PT_ERR_ARG, "%s %d steps: diffusers refuses, petrel did not", name, steps);
                    continue;
                }
                CHECK(st == PT_OK, "%s %d steps: %s", name, steps, err.msg);
                if (st != PT_OK) continue;
                const cJSON *ts = cJSON_GetObjectItem(row, "timesteps");
                CHECK(cJSON_GetArraySize(ts) == s.steps, "%s %d: %d timesteps", name, steps,
                      cJSON_GetArraySize(ts));
                for (int i = 0; i < s.steps && i < cJSON_GetArraySize(ts); i++) {
                    float want = (float)cJSON_GetArrayItem(ts, i)->valuedouble;
                    CHECK(sd_sched_timestep(&s, i) == want, "%s %s %d: timestep %d is %.9g, want %.9g",
                          name, preds[p], steps, i, sd_sched_timestep(&s, i), want);
                }
                const cJSON *sg = cJSON_GetObjectItem(row, "sigmas");
                CHECK((sg != NULL) == (s.sigmas != NULL), "%s: sigmas present", name);
                for (int i = 0; sg && s.sigmas && i <= s.steps && i < cJSON_GetArraySize(sg); i++) {
                    float want = (float)cJSON_GetArrayItem(sg, i)->valuedouble;
                    double u = ulps(s.sigmas[i], want);
                    if (u > worst_sigma) worst_sigma = u;
                    CHECK(u <= SIGMA_ULPS, "%s %s %d: sigma %d is %.9g, want %.9g (%.1f ulps)", name,
                          preds[p], steps, i, s.sigmas[i], want, u);
                }
                float ins = (float)cJSON_GetObjectItem(row, "init_noise_sigma")->valuedouble;
                CHECK(ulps(s.init_noise_sigma, ins) <= SIGMA_ULPS, "%s %d: init_noise_sigma %.9g, want %.9g",
                      name, steps, s.init_noise_sigma, ins);
                sd_sched_free(&s);
            }
            CHECK(n_rows >= 5, "%s %s: %d table rows", name, preds[p], n_rows);
        }
    }
}

static void check_close(const float *got, const float *want, int n, const char *what, int k) {
    float mx = 0;
    for (int i = 0; i < n; i++) mx = fabsf(want[i]) > mx ? fabsf(want[i]) : mx;
    double ulp = (double)(nextafterf(mx, INFINITY) - mx), worst = 0;
    int at = 0;
    for (int i = 0; i < n; i++) {
        double u = fabs((double)got[i] - (double)want[i]) / ulp;
        if (u > worst) worst = u, at = i;
    }
    if (worst > worst_traj) worst_traj = worst;
    CHECK(worst <= TRAJ_ULPS, "%s step %d: element %d is %.9g, want %.9g (%.1f ulps of max |x| %g)",
          what, k, at, got[at], want[at], worst, mx);
}

static void test_trajectories(sdfx *f) {
    const char *pre[2] = {"sched", "schedv"};
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < SD_SAMPLER_COUNT; k++) {
            const char *name = sd_sampler_name((sd_sampler)k);
            char key[128], what[64];
            snprintf(what, sizeof what, "%s.%s", pre[p], name);
            snprintf(key, sizeof key, "%s.x0", what);
            int64_t sh[4];
            const float *x0 = sdfx_get(f, key, sh, NULL);
            CHECK(x0 != NULL, "%s missing", key);
            if (!x0) continue;
            int n = (int)(sh[0] * sh[1] * sh[2] * sh[3]);
            float *x = malloc((size_t)n * sizeof *x), *xin = malloc((size_t)n * sizeof *xin);
            memcpy(x, x0, (size_t)n * sizeof *x);
            sd_schedule_config c = sd_config(p ? SD_PRED_V : SD_PRED_EPSILON);
            sd_sched s;
            pt_error err = {0};
            CHECK(sd_sched_init(&s, &c, (sd_sampler)k, 4, &err) == PT_OK, "%s: %s", what, err.msg);
            for (int i = 0; i < 4; i++) {
                snprintf(key, sizeof key, "%s.xin.%d", what, i);
                const float *want_in = sdfx_get(f, key, NULL, NULL);
                sd_sched_scale_input(&s, i, x, xin, (size_t)n);
                if (want_in) check_close(xin, want_in, n, key, i);
                snprintf(key, sizeof key, "%s.model_out.%d", what, i);
                const float *mo = sdfx_get(f, key, NULL, NULL);
                snprintf(key, sizeof key, "%s.noise.%d", what, i);
                const float *noise = sdfx_has(f, key) ? sdfx_get(f, key, NULL, NULL) : NULL;
                CHECK((noise != NULL) == sd_sched_needs_noise(&s, i), "%s step %d: noise drawn", what, i);
                CHECK(mo != NULL, "%s model_out %d", what, i);
                if (!mo) break;
                pt_status st = sd_sched_step(&s, i, mo, x, (size_t)n, noise, &err);
                CHECK(st == PT_OK, "%s step %d: %s", what, i, err.msg);
                snprintf(key, sizeof key, "%s.x.%d", what, i);
                const float *want = sdfx_get(f, key, NULL, NULL);
                if (want) check_close(x, want, n, what, i);
            }
            sd_sched_free(&s);
            free(x);
            free(xin);
        }
}

static void test_api(void) {
    sd_sampler k;
    for (int i = 0; i < SD_SAMPLER_COUNT; i++)
        CHECK(sd_sampler_from_name(sd_sampler_name((sd_sampler)i), &k) && (int)k == i, "name %d", i);
    CHECK(!sd_sampler_from_name("heun", &k) && !sd_sampler_from_name(NULL, &k), "unknown name");
    CHECK(sd_sampler_name(SD_SAMPLER_COUNT) == NULL, "name of count");
    sd_schedule_config c = sd_config(SD_PRED_EPSILON);
    sd_sched s;
    pt_error err = {0};
    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_EULER, 0, &err) == PT_ERR_ARG && strstr(err.msg, "1..1000"), "0 steps");
    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_EULER, 1001, &err) == PT_ERR_ARG, "1001 steps");
    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_LCM, 51, &err) == PT_ERR_ARG, "lcm 51 steps");
    CHECK(sd_sched_init(&s, &c, (sd_sampler)9, 4, &err) == PT_ERR_ARG, "bad sampler");
    sd_schedule_config bad = c;
    bad.num_train_timesteps = 0;
    CHECK(sd_sched_init(&s, &bad, SD_SAMPLER_EULER, 4, &err) == PT_ERR_ARG, "bad config");
    bad = c;
    bad.beta_end = NAN;
    CHECK(sd_sched_init(&s, &bad, SD_SAMPLER_EULER, 4, &err) == PT_ERR_ARG, "NaN beta");

    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_EULER_A, 3, &err) == PT_OK, "euler_a");
    float x[5] = {1, 2, 3, 4, 5}, m[5] = {0}, nz[5] = {0};
    CHECK(sd_sched_step(&s, 1, m, x, 5, nz, &err) == PT_ERR_ARG, "out of order");
    CHECK(sd_sched_step(&s, 0, m, x, 5, NULL, &err) == PT_ERR_ARG && strstr(err.msg, "noise"), "no noise");
    CHECK(sd_sched_step(&s, 0, m, x, 5, nz, &err) == PT_OK, "step 0");
    sd_sched_free(&s);

    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_DPMPP_2M, 3, &err) == PT_OK, "dpm");
    CHECK(sd_sched_step(&s, 0, m, x, 5, NULL, &err) == PT_OK, "dpm step 0");
    CHECK(sd_sched_step(&s, 1, m, x, 4, NULL, &err) == PT_ERR_ARG, "dpm size change");
    sd_sched_free(&s);
    /* ddim leading with 1000 steps reaches timestep 1000: diffusers fails
     * there (index out of range); so does init here. */
    CHECK(sd_sched_init(&s, &c, SD_SAMPLER_DDIM, 1000, &err) == PT_ERR_ARG, "ddim 1000");
}

int main(void) {
    test_api();
    sdfx *f = sdfx_open(NULL);
    const cJSON *j = sdfx_json(f);
    const cJSON *tables = j ? cJSON_GetObjectItem(j, "sampler_tables") : NULL;
    CHECK(tables != NULL, "ref.json has no sampler_tables");
    if (tables) test_tables(tables);
    test_trajectories(f);
    sdfx_close(f);
    printf("sd_sched: worst table sigma %.1f ulps, worst trajectory %.1f ulps\n", worst_sigma, worst_traj);
    return check_done("sd_sched");
}
