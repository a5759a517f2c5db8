/*
 * test_threadpool.c — engine/threadpool.c: every task runs exactly once per
 * step, results split across threads add up, the barrier orders phases,
 * pools of 1 and of more threads than cores, sleep / wake, destroy while
 * idle, and argument errors. Weighted runs: the partition of pt_pool_share
 * (exact tiling, proportional within one unit, the minimum share), the
 * learning of speeds from injected measurements, real runs where one
 * thread is 3x slower per unit (asserting only the order of the learnt
 * weights, never a time), pt_pool_claim handing out every unit of every
 * part exactly once over many random runs, and stealing: a thread that
 * does not start until the others are done finds its share taken by them
 * (an ownership check, not a timing one).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "threadpool.h"

/* ---- a matrix-vector product split by rows, checked against serial --- */

typedef struct {
    const double *a, *x;
    double *y;
    int rows, cols;
    _Atomic int bad_thread; /* a thread index out of range was seen */
    int n_threads;
} mv_ctx;

static void mv_task(void *arg, int task, int n_tasks, int thread) {
    mv_ctx *c = arg;
    if (thread < 0 || thread >= c->n_threads) atomic_store(&c->bad_thread, 1);
    const int r0 = (int)((int64_t)c->rows * task / n_tasks);
    const int r1 = (int)((int64_t)c->rows * (task + 1) / n_tasks);
    for (int r = r0; r < r1; r++) {
        double s = 0;
        for (int k = 0; k < c->cols; k++) s += c->a[(size_t)r * c->cols + k] * c->x[k];
        c->y[r] = s;
    }
}

static void test_split_results(int n_threads) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(n_threads, &pool, &err) == PT_OK, "pool of %d: %s", n_threads, err.msg);
    CHECK(pt_pool_threads(pool) == n_threads, "threads %d", pt_pool_threads(pool));
    const int rows = 301, cols = 97;
    double *a = malloc(sizeof(double) * rows * cols), *x = malloc(sizeof(double) * cols);
    double *y = malloc(sizeof(double) * rows), *ref = malloc(sizeof(double) * rows);
    uint32_t s = 12345;
    for (int i = 0; i < rows * cols; i++) { s = s * 1664525u + 1013904223u; a[i] = (double)(s >> 8) / (1 << 24) - 0.5; }
    for (int i = 0; i < cols; i++) { s = s * 1664525u + 1013904223u; x[i] = (double)(s >> 8) / (1 << 24) - 0.5; }
    for (int r = 0; r < rows; r++) {
        double t = 0;
        for (int k = 0; k < cols; k++) t += a[(size_t)r * cols + k] * x[k];
        ref[r] = t;
    }
    const int task_counts[] = {1, 2, 3, 7, 64, 301};
    for (size_t i = 0; i < sizeof task_counts / sizeof *task_counts; i++) {
        mv_ctx c = {a, x, y, rows, cols, 0, n_threads};
        for (int r = 0; r < rows; r++) y[r] = -1e300;
        pt_pool_run(pool, mv_task, &c, task_counts[i]);
        int mism = 0;
        for (int r = 0; r < rows; r++) mism += y[r] != ref[r]; /* same order: exact */
        CHECK(mism == 0, "%d threads, %d tasks: %d rows differ", n_threads, task_counts[i], mism);
        CHECK(atomic_load(&c.bad_thread) == 0, "thread index out of range");
    }
    free(a); free(x); free(y); free(ref);
    pt_pool_free(pool);
}

/* ---- many short steps: each task exactly once per step --------------- */

typedef struct {
    _Atomic int *hits; /* per task */
    _Atomic int64_t total;
} count_ctx;

static void count_task(void *arg, int task, int n_tasks, int thread) {
    (void)n_tasks; (void)thread;
    count_ctx *c = arg;
    atomic_fetch_add(&c->hits[task], 1);
    atomic_fetch_add(&c->total, 1);
}

static void test_many_short_runs(int n_threads, int steps, int spin_us) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(n_threads, &pool, &err) == PT_OK, "%s", err.msg);
    pt_pool_set_spin_us(pool, spin_us);
    enum { MAXT = 37 };
    _Atomic int hits[MAXT];
    count_ctx c = {hits, 0};
    int64_t expect = 0;
    int wrong = 0;
    for (int step = 0; step < steps; step++) {
        const int n = 1 + step % MAXT;
        for (int i = 0; i < MAXT; i++) atomic_store(&hits[i], 0);
        pt_pool_run(pool, count_task, &c, n);
        expect += n;
        for (int i = 0; i < MAXT; i++) wrong += atomic_load(&hits[i]) != (i < n);
    }
    CHECK(wrong == 0, "%d threads spin %d: %d task slots ran != once", n_threads, spin_us, wrong);
    CHECK(atomic_load(&c.total) == expect, "total %lld != %lld", (long long)atomic_load(&c.total),
          (long long)expect);
    pt_pool_run(pool, count_task, &c, 0); /* no tasks: nothing runs */
    CHECK(atomic_load(&c.total) == expect, "n_tasks 0 ran something");
    pt_pool_free(pool);
}

/* More tasks than one step of the job word holds: every index still runs
 * exactly once and sees the true n_tasks. */
typedef struct {
    unsigned char *hit;
    int n;
    _Atomic int bad_n;
} many_ctx;

static void many_task(void *arg, int task, int n_tasks, int thread) {
    (void)thread;
    many_ctx *c = arg;
    if (n_tasks != c->n) atomic_store(&c->bad_n, 1);
    c->hit[task]++; /* each index is run by exactly one thread */
}

static void test_too_many_tasks(void) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(2, &pool, &err) == PT_OK, "%s", err.msg);
    const int n = PT_POOL_MAX_TASKS + 1000;
    many_ctx c = {calloc((size_t)n, 1), n, 0};
    pt_pool_run(pool, many_task, &c, n);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += c.hit[i] != 1;
    CHECK(wrong == 0 && atomic_load(&c.bad_n) == 0, "%d of %d tasks ran != once", wrong, n);
    free(c.hit);
    pt_pool_free(pool);
}

/* ---- run_each and the barrier ---------------------------------------- */

typedef struct {
    int n, rounds;
    int *slot;         /* n: written in phase A, read by neighbours in B */
    int64_t *sums;     /* n: per thread */
    _Atomic int wrong; /* a thread saw a slot from the wrong round */
    _Atomic int misplaced; /* task != thread */
    pt_pool *pool;
} bar_ctx;

static void bar_task(void *arg, int task, int n_tasks, int thread) {
    bar_ctx *c = arg;
    if (task != thread || n_tasks != c->n) atomic_store(&c->misplaced, 1);
    for (int r = 0; r < c->rounds; r++) {
        c->slot[task] = r * 1000 + task; /* phase A */
        pt_pool_barrier(c->pool);
        const int other = (task + 1 + r) % c->n; /* phase B: read another's */
        if (c->slot[other] != r * 1000 + other) atomic_fetch_add(&c->wrong, 1);
        c->sums[task] += c->slot[other];
        pt_pool_barrier(c->pool); /* nobody rewrites before all have read */
    }
}

static void test_barrier(int n_threads, int rounds, int spin_us) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(n_threads, &pool, &err) == PT_OK, "%s", err.msg);
    pt_pool_set_spin_us(pool, spin_us);
    int slot[16] = {0};
    int64_t sums[16] = {0};
    bar_ctx c = {n_threads, rounds, slot, sums, 0, 0, pool};
    for (int rep = 0; rep < 3; rep++) pt_pool_run_each(pool, bar_task, &c);
    CHECK(atomic_load(&c.wrong) == 0, "%d threads: %d stale reads across the barrier", n_threads,
          atomic_load(&c.wrong));
    CHECK(atomic_load(&c.misplaced) == 0, "run_each ran task i off thread i");
    int64_t total = 0, expect = 0;
    for (int i = 0; i < n_threads; i++) total += sums[i];
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n_threads; i++) expect += r * 1000 + i;
    CHECK(total == 3 * expect, "barrier sums %lld != %lld", (long long)total, (long long)(3 * expect));
    pt_pool_free(pool);
}

/* ---- mixing both kinds of step back to back -------------------------- */

static void test_mixed(int n_threads) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(n_threads, &pool, &err) == PT_OK, "%s", err.msg);
    _Atomic int hits[8];
    count_ctx c = {hits, 0};
    int slot[16] = {0};
    int64_t sums[16] = {0};
    bar_ctx b = {n_threads, 2, slot, sums, 0, 0, pool};
    int wrong = 0;
    for (int step = 0; step < 600; step++) {
        if (step % 3 == 0) {
            pt_pool_run_each(pool, bar_task, &b);
        } else {
            for (int i = 0; i < 8; i++) atomic_store(&hits[i], 0);
            pt_pool_run(pool, count_task, &c, 8);
            for (int i = 0; i < 8; i++) wrong += atomic_load(&hits[i]) != 1;
        }
    }
    CHECK(wrong == 0 && atomic_load(&b.wrong) == 0 && atomic_load(&b.misplaced) == 0,
          "mixed steps: %d wrong counts, %d stale barrier reads", wrong, atomic_load(&b.wrong));
    pt_pool_free(pool);
}

/* ---- weighted shares: the partition ----------------------------------- */

/* Shares of n_units over every thread of the pool tile [0, n_units) in
 * thread order, each within one unit of n_units * weight; returns the
 * number of violations. */
static int check_tiling(pt_pool *pool, int64_t n_units) {
    const int n = pt_pool_threads(pool);
    double w[64];
    pt_pool_weights(pool, w);
    int bad = 0;
    int64_t next = 0;
    for (int i = 0; i < n; i++) {
        int64_t u0, u1, v0, v1;
        pt_pool_share(pool, i, n_units, &u0, &u1);
        pt_pool_share(pool, i, n_units, &v0, &v1); /* same answer twice */
        bad += u0 != next || u1 < u0 || u0 != v0 || u1 != v1;
        bad += fabs((double)(u1 - u0) - (double)n_units * w[i]) > 1.0 + 1e-12 * (double)n_units;
        next = u1;
    }
    bad += next != n_units;
    return bad;
}

static void test_share_partition(void) {
    pt_pool *pool;
    pt_error err;
    const int64_t counts[] = {0, 1, 2, 3, 5, 7, 24, 97, 1000, 1001, 49152, (INT64_C(1) << 40) + 3,
                              INT64_C(1) << 53};
    const int n_counts = (int)(sizeof counts / sizeof *counts);
    const double speeds[][5] = {
        {1, 1, 1, 1, 1}, {3, 1, 2, 5, 4}, {1, 2.5, 0.7, 1.3, 3}, {1e6, 1, 1, 1, 1}, {0.1, 9, 9, 9, 0.2},
    };
    for (int n = 1; n <= 5; n++) {
        CHECK(pt_pool_new(n, &pool, &err) == PT_OK, "%s", err.msg);
        for (size_t si = 0; si < sizeof speeds / sizeof *speeds; si++) {
            pt_pool_set_speed(pool, speeds[si]);
            double w[5], sum = 0, total = 0, floor_w = PT_POOL_MIN_SHARE / n;
            pt_pool_weights(pool, w);
            for (int i = 0; i < n; i++) sum += w[i], total += speeds[si][i];
            CHECK(fabs(sum - 1) < 1e-9, "%d threads: weights sum to %.12f", n, sum);
            bool clamped = false;
            for (int i = 0; i < n; i++) {
                CHECK(w[i] >= floor_w - 1e-9, "%d threads: weight %g under the floor %g", n, w[i], floor_w);
                clamped |= speeds[si][i] / total < floor_w;
            }
            for (int i = 0; i < n && !clamped; i++) /* no floor reached: weights are the speeds */
                CHECK(fabs(w[i] - speeds[si][i] / total) < 1e-9, "%d threads: weight %g != %g", n, w[i],
                      speeds[si][i] / total);
            for (int c = 0; c < n_counts; c++) {
                const int bad = check_tiling(pool, counts[c]);
                CHECK(bad == 0, "%d threads, speeds %zu, %lld units: %d tiling errors", n, si,
                      (long long)counts[c], bad);
            }
        }
        pt_pool_free(pool);
    }

    /* the floor by water-filling: two threads below it are raised to 1/16,
     * the other two share the remaining 7/8 as 1 : 10 */
    CHECK(pt_pool_new(4, &pool, &err) == PT_OK, "%s", err.msg);
    pt_pool_set_speed(pool, (const double[]){1, 0.01, 0.02, 10});
    double w[4];
    pt_pool_weights(pool, w);
    const double want[4] = {0.875 / 11, 1.0 / 16, 1.0 / 16, 0.875 * 10 / 11};
    for (int i = 0; i < 4; i++) CHECK(fabs(w[i] - want[i]) < 1e-9, "floor: w[%d] = %g, want %g", i, w[i], want[i]);
    int64_t u0, u1;
    pt_pool_share(pool, 1, 1000, &u0, &u1);
    CHECK(u1 - u0 >= 1000 / 16 - 1, "floor share %lld of 1000", (long long)(u1 - u0));
    /* more threads than units: shares of 0 or 1 units, still tiling */
    CHECK(check_tiling(pool, 3) == 0, "3 units over 4 threads");
    /* bad speeds reset to equal */
    pt_pool_set_speed(pool, (const double[]){1, 0, 1, 1});
    pt_pool_weights(pool, w);
    for (int i = 0; i < 4; i++) CHECK(fabs(w[i] - 0.25) < 1e-9, "reset: w[%d] = %g", i, w[i]);
    pt_pool_free(pool);
}

/* ---- weighted shares: learning from injected speeds --------------------- */

static void test_learning(void) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(2, &pool, &err) == PT_OK, "%s", err.msg);
    double w[4];
    pt_pool_weights(pool, w);
    CHECK(w[0] == 0.5 && w[1] == 0.5, "a new pool starts equal: %g %g", w[0], w[1]);
    /* one measurement moves the speeds by PT_POOL_SPEED_ALPHA of the way */
    pt_pool_note_speed(pool, (const double[]){3e6, 1e6});
    pt_pool_weights(pool, w);
    CHECK(fabs(w[1] - (0.5 + PT_POOL_SPEED_ALPHA * (0.25 - 0.5))) < 1e-9, "one step: w[1] = %g", w[1]);
    /* measurements without a speed for every thread teach nothing */
    const double before = w[1];
    pt_pool_note_speed(pool, (const double[]){3e6, 0});
    pt_pool_note_speed(pool, (const double[]){NAN, 1});
    pt_pool_note_speed(pool, (const double[]){INFINITY, 1});
    pt_pool_weights(pool, w);
    CHECK(w[1] == before, "ignored measurements changed w[1]: %g -> %g", before, w[1]);
    /* thread 1 measured 3x slower, again and again: it ends with 1/4 */
    for (int i = 0; i < 100; i++) pt_pool_note_speed(pool, (const double[]){3e6, 1e6});
    pt_pool_weights(pool, w);
    CHECK(fabs(w[0] - 0.75) < 1e-6 && fabs(w[1] - 0.25) < 1e-6, "learnt %g %g, want 0.75 0.25", w[0], w[1]);
    int64_t a0, a1, b0, b1;
    pt_pool_share(pool, 0, 1000, &a0, &a1);
    pt_pool_share(pool, 1, 1000, &b0, &b1);
    CHECK(a0 == 0 && a1 == 750 && b0 == 750 && b1 == 1000, "1000 units: [%lld, %lld) [%lld, %lld)",
          (long long)a0, (long long)a1, (long long)b0, (long long)b1);
    /* the scale of a measurement does not matter, only the ratio */
    for (int i = 0; i < 100; i++) pt_pool_note_speed(pool, (const double[]){1e-3, 1e-3});
    pt_pool_weights(pool, w);
    CHECK(fabs(w[0] - 0.5) < 1e-6, "back to equal: %g", w[0]);
    /* a thread far slower stops at the floor */
    for (int i = 0; i < 100; i++) pt_pool_note_speed(pool, (const double[]){1000, 1});
    pt_pool_weights(pool, w);
    CHECK(fabs(w[1] - PT_POOL_MIN_SHARE / 2) < 1e-9, "floor after learning: %g", w[1]);
    pt_pool_free(pool);

    /* 4 threads, one 3x slower: 3/10 for each fast one, 1/10 for it */
    CHECK(pt_pool_new(4, &pool, &err) == PT_OK, "%s", err.msg);
    for (int i = 0; i < 100; i++) pt_pool_note_speed(pool, (const double[]){3, 3, 1, 3});
    pt_pool_weights(pool, w);
    CHECK(fabs(w[2] - 0.1) < 1e-6 && fabs(w[0] - 0.3) < 1e-6, "4 threads: %g %g", w[0], w[2]);
    CHECK(check_tiling(pool, 577) == 0, "4 learnt threads: tiling");
    pt_pool_free(pool);
}

/* ---- weighted runs on real threads -------------------------------------- */

typedef struct {
    pt_pool *pool;
    int64_t n_units;
    unsigned char *hit;   /* [n_units]: each unit once per run */
    int slow_thread;      /* does 3x the work per unit; -1: none */
    _Atomic int misplaced;
    _Atomic uint32_t sink;
} spin_ctx;

static void spin_task(void *arg, int task, int n_tasks, int thread) {
    spin_ctx *c = arg;
    if (task != thread || n_tasks != pt_pool_threads(c->pool)) atomic_store(&c->misplaced, 1);
    const int reps = thread == c->slow_thread ? 3 : 1;
    uint32_t x = (uint32_t)thread + 1;
    int64_t u0, u1;
    while (pt_pool_claim(c->pool, thread, 0, &u0, &u1)) {
        for (int64_t u = u0; u < u1; u++) {
            c->hit[u]++; /* claims are disjoint: no other thread touches hit[u] */
            for (int r = 0; r < reps * 400; r++) x = x * 1664525u + 1013904223u;
        }
    }
    atomic_fetch_add(&c->sink, x); /* keeps the loop */
}

/* n_runs weighted runs; false if some run missed or repeated a unit */
static bool spin_runs(spin_ctx *c, int n_runs) {
    bool ok = true;
    for (int run = 0; run < n_runs; run++) {
        memset(c->hit, 0, (size_t)c->n_units);
        pt_pool_run_weighted(c->pool, spin_task, c, &c->n_units, 1);
        for (int64_t u = 0; u < c->n_units; u++) ok &= c->hit[u] == 1;
    }
    return ok;
}

static void test_weighted_runs(void) {
    pt_pool *pool;
    pt_error err;
    /* thread 1 takes 3x the time per unit: it must learn a smaller share
     * (only the order is asserted: the machine may be busy) */
    CHECK(pt_pool_new(2, &pool, &err) == PT_OK, "%s", err.msg);
    spin_ctx c = {pool, 2000, malloc(2000), 1, 0, 0};
    CHECK(spin_runs(&c, 30), "2 threads: a unit ran != once");
    double w[8];
    pt_pool_weights(pool, w);
    printf("learnt weights, thread 1 3x slower per unit: %.3f %.3f\n", w[0], w[1]);
    CHECK(w[1] < w[0], "slow thread 1 has weight %g >= thread 0's %g", w[1], w[0]);
    CHECK(atomic_load(&c.misplaced) == 0, "weighted task off its thread");
    pt_pool_free(pool);

    /* 1 thread runs inline; 3 and 4 oversubscribe a 2-core machine; mixed
     * with dynamic and run_each steps on the same pool */
    for (int n = 1; n <= 4; n++) {
        CHECK(pt_pool_new(n, &pool, &err) == PT_OK, "%s", err.msg);
        spin_ctx d = {pool, 37, c.hit, -1, 0, 0};
        _Atomic int hits[8];
        count_ctx cc = {hits, 0};
        bool ok = true;
        int wrong = 0;
        for (int round = 0; round < 50; round++) {
            ok &= spin_runs(&d, 1);
            for (int i = 0; i < 8; i++) atomic_store(&hits[i], 0);
            pt_pool_run(pool, count_task, &cc, 8);
            for (int i = 0; i < 8; i++) wrong += atomic_load(&hits[i]) != 1;
            d.n_units = round % 2 ? 37 : 2; /* sometimes fewer units than threads */
        }
        CHECK(ok && wrong == 0 && atomic_load(&d.misplaced) == 0,
              "%d threads: weighted runs mixed with dynamic ones went wrong", n);
        pt_pool_weights(pool, w);
        double sum = 0;
        for (int i = 0; i < n; i++) sum += w[i];
        CHECK(fabs(sum - 1) < 1e-9, "%d threads: weights sum to %g", n, sum);
        pt_pool_free(pool);
    }
    free(c.hit);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- claims and stealing ------------------------------------------------ */

enum { CL_MAX_UNITS = 300 };

typedef struct {
    pt_pool *pool;
    int n_parts;
    int64_t n_units[PT_POOL_MAX_PARTS];
    _Atomic int hits[PT_POOL_MAX_PARTS][CL_MAX_UNITS];
    _Atomic int owner[PT_POOL_MAX_PARTS][CL_MAX_UNITS]; /* thread that got the unit */
    _Atomic int bad;        /* an empty or out-of-range claim */
    _Atomic int64_t done;   /* units processed, all parts */
    int64_t total;          /* units of all parts */
    int delay_thread;       /* sleeps delay_us before claiming; -1: none */
    int delay_us;
    int wait_thread;        /* claims only once `done` reached total; -1: none */
    _Atomic int waited_units; /* units wait_thread got after waiting */
} claim_ctx;

static void claim_task(void *arg, int task, int n_tasks, int thread) {
    (void)task; (void)n_tasks;
    claim_ctx *c = arg;
    if (thread == c->delay_thread && c->delay_us > 0) { /* preempted before it starts */
        struct timespec ts = {0, (long)c->delay_us * 1000L};
        nanosleep(&ts, NULL);
    }
    if (thread == c->wait_thread) {
        /* the others must take this thread's whole share; the bound only
         * keeps a broken pool from hanging the test (it then fails below) */
        struct timespec ts = {0, 100000L};
        for (int i = 0; i < 100000 && atomic_load(&c->done) < c->total; i++) nanosleep(&ts, NULL);
    }
    for (int part = 0; part < c->n_parts; part++) {
        int64_t u0, u1;
        while (pt_pool_claim(c->pool, thread, part, &u0, &u1)) {
            if (u0 < 0 || u1 <= u0 || u1 > c->n_units[part]) {
                atomic_store(&c->bad, 1);
                break;
            }
            if (thread == c->wait_thread) atomic_fetch_add(&c->waited_units, (int)(u1 - u0));
            for (int64_t u = u0; u < u1; u++) {
                atomic_fetch_add(&c->hits[part][u], 1);
                atomic_store(&c->owner[part][u], thread);
            }
            atomic_fetch_add(&c->done, u1 - u0);
        }
    }
}

static void claim_reset(claim_ctx *c) {
    c->total = 0;
    for (int p = 0; p < PT_POOL_MAX_PARTS; p++) {
        for (int u = 0; u < CL_MAX_UNITS; u++) {
            atomic_store(&c->hits[p][u], 0);
            atomic_store(&c->owner[p][u], -1);
        }
        if (p < c->n_parts) c->total += c->n_units[p];
    }
    atomic_store(&c->done, 0);
    atomic_store(&c->bad, 0);
    atomic_store(&c->waited_units, 0);
}

/* units of claim_ctx's parts handed out != once */
static int claim_errors(claim_ctx *c) {
    int wrong = atomic_load(&c->bad);
    for (int p = 0; p < PT_POOL_MAX_PARTS; p++)
        for (int u = 0; u < CL_MAX_UNITS; u++)
            wrong += atomic_load(&c->hits[p][u]) != (p < c->n_parts && u < c->n_units[p]);
    return wrong + (atomic_load(&c->done) != c->total);
}

/* Many random runs: 1-5 threads, 0-4 parts, unit counts from 0 and 1 and
 * fewer than the threads up to CL_MAX_UNITS, random weights, and some
 * thread delayed at random to provoke steals. */
static void test_claim_exactly_once(void) {
    static claim_ctx c; /* large: not on the stack */
    uint32_t rng = 777;
    for (int n = 1; n <= 5; n++) {
        pt_pool *pool;
        pt_error err;
        CHECK(pt_pool_new(n, &pool, &err) == PT_OK, "%s", err.msg);
        c.pool = pool;
        int wrong_runs = 0;
        for (int run = 0; run < 300; run++) {
            rng = rng * 1664525u + 1013904223u;
            if (run % 10 == 0) { /* new random weights now and then */
                double speed[5];
                for (int i = 0; i < 5; i++) speed[i] = 0.05 + (double)((rng >> (3 * i)) & 31);
                pt_pool_set_speed(pool, speed);
            }
            c.n_parts = (int)(rng >> 24) % (PT_POOL_MAX_PARTS + 1);
            for (int p = 0; p < PT_POOL_MAX_PARTS; p++) {
                rng = rng * 1664525u + 1013904223u;
                const int64_t pick[] = {0, 1, n - 1, n + 1, (int64_t)(rng >> 8) % CL_MAX_UNITS};
                c.n_units[p] = pick[(rng >> 28) % 5];
            }
            c.delay_thread = run % 3 == 0 ? (int)(rng % (uint32_t)n) : -1;
            c.delay_us = 200 + (int)(rng >> 16) % 800;
            c.wait_thread = -1;
            claim_reset(&c);
            pt_pool_run_weighted(pool, claim_task, &c, c.n_units, c.n_parts);
            wrong_runs += claim_errors(&c) != 0;
        }
        CHECK(wrong_runs == 0, "%d threads: %d of 300 runs handed a unit out != once", n, wrong_runs);
        pt_pool_free(pool);
    }
}

/* One thread (the driver, thread 0, or a worker) does not claim until
 * the others have processed every unit: they must have stolen its whole
 * share, and it gets nothing. The run then teaches nothing (a thread got
 * no units), so the weights stay. */
static void test_steal_from_waiting_thread(void) {
    static claim_ctx c;
    for (int n = 2; n <= 4; n++) {
        for (int wait = 0; wait < n; wait += n - 1) { /* thread 0 and the last */
            pt_pool *pool;
            pt_error err;
            CHECK(pt_pool_new(n, &pool, &err) == PT_OK, "%s", err.msg);
            pt_pool_set_speed(pool, (const double[]){1, 2, 3, 4}); /* uneven shares */
            c.pool = pool;
            c.n_parts = 3;
            c.n_units[0] = 97;
            c.n_units[1] = 5;
            c.n_units[2] = 250;
            c.delay_thread = -1;
            c.wait_thread = wait;
            claim_reset(&c);
            double w0[4], w1[4];
            pt_pool_weights(pool, w0);
            int64_t s0[3], s1[3]; /* the waiting thread's shares */
            for (int p = 0; p < 3; p++) pt_pool_share(pool, wait, c.n_units[p], &s0[p], &s1[p]);
            pt_pool_run_weighted(pool, claim_task, &c, c.n_units, c.n_parts);
            CHECK(claim_errors(&c) == 0, "%d threads, thread %d waits: a unit ran != once", n, wait);
            CHECK(atomic_load(&c.waited_units) == 0, "%d threads: waiting thread %d got %d units", n,
                  wait, atomic_load(&c.waited_units));
            int stolen = 0, share = 0;
            for (int p = 0; p < 3; p++)
                for (int64_t u = s0[p]; u < s1[p]; u++) {
                    const int o = atomic_load(&c.owner[p][u]);
                    stolen += o >= 0 && o != wait;
                    share++;
                }
            CHECK(share > 0 && stolen == share, "%d threads: %d of thread %d's %d units taken by others",
                  n, stolen, wait, share);
            pt_pool_weights(pool, w1);
            for (int i = 0; i < n; i++)
                CHECK(w0[i] == w1[i], "%d threads: a run with an idle thread changed w[%d]", n, i);
            pt_pool_free(pool);
        }
    }
}

/* Ranges of one part of UINT32_MAX units (the cursor's limit), claimed
 * without touching the units: they must tile the part exactly. */
typedef struct {
    pt_pool *pool;
    int64_t ranges[2][64][2]; /* [thread][claim]: [u0, u1), up to 64 claims per thread */
    int n_ranges[2];
} big_ctx;

static void big_task(void *arg, int task, int n_tasks, int thread) {
    (void)task; (void)n_tasks;
    big_ctx *c = arg;
    int64_t u0, u1;
    while (pt_pool_claim(c->pool, thread, 0, &u0, &u1)) {
        if (c->n_ranges[thread] < 64) {
            c->ranges[thread][c->n_ranges[thread]][0] = u0;
            c->ranges[thread][c->n_ranges[thread]][1] = u1;
        }
        c->n_ranges[thread]++;
    }
}

static int cmp_range(const void *a, const void *b) {
    const int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

static void test_claim_full_range(void) {
    pt_pool *pool;
    pt_error err;
    CHECK(pt_pool_new(2, &pool, &err) == PT_OK, "%s", err.msg);
    pt_pool_set_speed(pool, (const double[]){1, 3});
    static big_ctx c;
    c.pool = pool;
    const int64_t n_units = UINT32_MAX;
    pt_pool_run_weighted(pool, big_task, &c, &n_units, 1);
    int64_t all[128][2];
    int k = 0;
    for (int t = 0; t < 2; t++) {
        CHECK(c.n_ranges[t] <= 64, "thread %d: %d claims", t, c.n_ranges[t]);
        for (int i = 0; i < c.n_ranges[t] && i < 64; i++, k++) {
            all[k][0] = c.ranges[t][i][0];
            all[k][1] = c.ranges[t][i][1];
        }
    }
    qsort(all, (size_t)k, sizeof all[0], cmp_range);
    int64_t next = 0;
    for (int i = 0; i < k; i++) {
        CHECK(all[i][0] == next && all[i][1] > all[i][0], "range %d: [%lld, %lld) after %lld", i,
              (long long)all[i][0], (long long)all[i][1], (long long)next);
        next = all[i][1];
    }
    CHECK(next == n_units, "claims end at %lld, not %lld", (long long)next, (long long)n_units);
    pt_pool_free(pool);
}

int main(void) {
    pt_pool *pool;
    pt_error err = {0};

    /* argument errors */
    CHECK(pt_pool_new(0, &pool, &err) == PT_ERR_ARG && pool == NULL, "0 threads accepted");
    CHECK(strstr(err.msg, "thread count") != NULL, "message: %s", err.msg);
    CHECK(pt_pool_new(PT_POOL_MAX_THREADS + 1, &pool, &err) == PT_ERR_ARG, "too many accepted");
    pt_pool_free(NULL);

    for (int n = 1; n <= 4; n++) test_split_results(n);
    test_split_results(9); /* more threads than cores */

    test_many_short_runs(1, 2000, 200);
    test_many_short_runs(2, 20000, 200);
    test_many_short_runs(3, 2000, 200); /* 3 and 4 threads oversubscribe 2-core CI machines */
    test_many_short_runs(2, 300, 0); /* workers sleep between every step */
    test_too_many_tasks();

    test_barrier(1, 100, 200);
    test_barrier(2, 1000, 200);
    test_barrier(4, 200, 200);
    test_barrier(3, 200, 0); /* barrier waits sleep at once */
    test_mixed(3);

    test_share_partition();
    test_learning();
    test_weighted_runs();
    test_claim_exactly_once();
    test_steal_from_waiting_thread();
    test_claim_full_range();

    /* wake after a long idle: workers are asleep on the condvar by now */
    CHECK(pt_pool_new(3, &pool, &err) == PT_OK, "%s", err.msg);
    pt_pool_set_spin_us(pool, 50);
    _Atomic int hits[5];
    count_ctx c = {hits, 0};
    for (int round = 0; round < 3; round++) {
        sleep_ms(20);
        for (int i = 0; i < 5; i++) atomic_store(&hits[i], 0);
        pt_pool_run(pool, count_task, &c, 5);
        int wrong = 0;
        for (int i = 0; i < 5; i++) wrong += atomic_load(&hits[i]) != 1;
        CHECK(wrong == 0, "after idle: %d slots wrong", wrong);
    }
    sleep_ms(20);
    pt_pool_free(pool); /* destroy while every worker sleeps */

    /* create and destroy at once, repeatedly: workers may not even have
     * started waiting yet */
    for (int i = 0; i < 200; i++) {
        CHECK(pt_pool_new(1 + i % 4, &pool, &err) == PT_OK, "%s", err.msg);
        if (i % 2) pt_pool_run(pool, count_task, &c, 3);
        pt_pool_free(pool);
    }
    return check_done("threadpool");
}
