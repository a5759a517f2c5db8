/*
 * test_threadpool.c — engine/threadpool.c: every task runs exactly once per
 * step, results split across threads add up, the barrier orders phases,
 * pools of 1 and of more threads than cores, sleep / wake, destroy while
 * idle, and argument errors.
 */
#include <stdatomic.h>
#include <stdint.h>
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

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
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
