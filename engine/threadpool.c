/*
 * threadpool.c — see threadpool.h.
 *
 * The job word. Everything a worker needs to claim a task lives in one
 * 64-bit atomic, so a claim is a single compare-and-swap that either takes
 * a task of the current step or fails:
 *
 *   bits  0..19  next      the next unclaimed task (dynamic runs)
 *   bits 20..39  n_tasks
 *   bit  40      each      1 for pt_pool_run_each (task i on thread i)
 *   bits 41..63  gen       step number, +1 per run (wraps; only compared
 *                          for change)
 *
 * Invariants that make reading fn / ctx race-free:
 *   - The driver writes fn, ctx and zeroes `done` before it publishes the
 *     new job word (release); it rewrites them only after `done` reached
 *     n_tasks of the previous step.
 *   - A worker reads fn / ctx only after it holds a task of the current
 *     step (a successful CAS, or for run_each the step number it woke for,
 *     which cannot advance before its own task is done). So while it reads,
 *     the step is unfinished and fn / ctx are the step's.
 *   - `done` counts finished tasks of the current step only: only a thread
 *     holding a claimed task increments it.
 * A worker that wakes late and finds every task claimed simply waits for
 * the next step number; nobody waits for it.
 *
 * Sleeping. A worker that saw no new step for spin_us takes the mutex,
 * announces itself in `sleepers`, re-checks the job word and waits on the
 * condition variable. The driver stores the job word and then reads
 * `sleepers` (both seq_cst): either the worker sees the new step or the
 * driver sees the sleeper and broadcasts under the mutex, which it can
 * only take once the worker is inside pthread_cond_wait. The barrier uses
 * the same scheme with its own counter and condition variable.
 *
 * Weighted runs. The weights live in `cum` (their prefix sums), the
 * learnt speeds in `speed`, and each thread's cursors and measurement of
 * the current run in its own `slots` entry. Who touches what, and when:
 *   - `speed` and `cum` are written only by the driving thread between
 *     runs (pt_pool_set_speed / note_speed, or after wait_done of a
 *     weighted run); tasks read `cum` during a run. The driver's writes
 *     precede the publishing store of the job word, which workers load
 *     with acquire before they run a task, so one snapshot of `cum` serves
 *     the whole run;
 *   - slots[i].units and busy_ns are written only by thread i during a
 *     run (pt_pool_claim, timed_task), and by the driver before it
 *     publishes the run (reset); the driver reads them after wait_done,
 *     whose acquire loads of `done` pair with each task's release
 *     increment after its last write. slots[i].chunk is written by the
 *     driver before the publication and only read during the run;
 *   - slots[i].cursor[p] packs thread i's unclaimed range [front, back) of
 *     part p as front | back << 32. The driver stores it before the
 *     publication (so a thief that arrives before thread i has even
 *     started finds it set); during the run every change is a CAS that
 *     either raises front (the owner claims from the front) or lowers back
 *     (a thief claims from the back), each only while front < back. The
 *     range only shrinks, and a successful CAS takes [old front, new
 *     front) or [new back, old back) out of the range it read, so no unit
 *     is handed out twice, and a unit leaves the range only by a claim.
 *     The CASes and loads are relaxed: a cursor orders nothing but itself
 *     (each unit's work reads what the driver wrote before the run, and
 *     writes only its own outputs, which reach the driver through `done`),
 *     and coherence of the single atomic is all the exactness needs. The
 *     initial store is seen because it happens before the publication.
 * So no location is written by two threads without such an order (what
 * ThreadSanitizer checks).
 */
#include "threadpool.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "status.h"

#define JOB_N_SHIFT 20
#define JOB_EACH_BIT (UINT64_C(1) << 40)
#define JOB_GEN_SHIFT 41
#define JOB_FIELD_MASK ((UINT64_C(1) << 20) - 1)

static inline uint32_t job_next(uint64_t j) { return (uint32_t)(j & JOB_FIELD_MASK); }
static inline uint32_t job_n(uint64_t j) { return (uint32_t)((j >> JOB_N_SHIFT) & JOB_FIELD_MASK); }
static inline uint32_t job_gen(uint64_t j) { return (uint32_t)(j >> JOB_GEN_SHIFT); }
static inline bool job_each(uint64_t j) { return (j & JOB_EACH_BIT) != 0; }

/* One thread's cursors and measurement of the current weighted run; a
 * cache line of its own, as each thread writes its entry while the others
 * run (thieves touch the cursors only once their own share is done). */
typedef struct pt_slot {
    _Alignas(64) _Atomic uint64_t cursor[PT_POOL_MAX_PARTS]; /* front | back << 32 */
    int64_t chunk[PT_POOL_MAX_PARTS]; /* units the owner claims at a time */
    int64_t units;                    /* handed out by pt_pool_claim */
    int64_t busy_ns;                  /* CPU time of the task, 0 if unknown */
} pt_slot;

typedef struct pt_worker {
    pt_pool *pool;
    int index; /* thread number, 1..n_threads-1 */
    pthread_t thread;
} pt_worker;

struct pt_pool {
    int n_threads;
    int n_started;      /* workers actually created (for cleanup) */
    _Atomic int spin_us; /* read by spinning workers: atomic, relaxed */

    /* the current step; fn / ctx are plain fields, see the invariants */
    _Atomic uint64_t job;
    pt_pool_fn fn;
    void *ctx;
    int task_base, task_total; /* a step runs tasks base.. of task_total */
    _Atomic int done;   /* finished tasks of the current step */
    _Atomic bool quit;

    /* barrier of pt_pool_run_each */
    _Atomic int bar_count;
    _Atomic uint32_t bar_gen;

    pthread_mutex_t lock;
    pthread_cond_t wake;     /* a new step (or quit) was published */
    pthread_cond_t bar_wake; /* the barrier opened */
    _Atomic int sleepers;     /* workers blocked on `wake` */
    _Atomic int bar_sleepers; /* threads blocked on `bar_wake` */

    pt_worker *workers; /* n_threads - 1 */

    /* weighted runs: see the comment at the top */
    pt_pool_fn wfn;     /* the caller's task, run by timed_task */
    void *wctx;
    double *speed;      /* [n_threads] learnt relative speeds, sum 1 */
    double *cum;        /* [n_threads + 1] cum[i] = w_0 + .. + w_{i-1}, cum[n] = 1 */
    pt_slot *slots;     /* [n_threads] */
};

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Spin until pred(pool, arg) holds or spin_us passed; true if it holds.
 * The clock is read once every 64 relax steps to keep the loop cheap. */
static bool spin_until(const pt_pool *p, bool (*pred)(const pt_pool *, uint32_t), uint32_t arg) {
    if (pred(p, arg)) return true;
    const int spin_us = atomic_load_explicit(&p->spin_us, memory_order_relaxed);
    if (spin_us <= 0) return false;
    const int64_t deadline = now_us() + spin_us;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            pt_cpu_relax();
            if (pred(p, arg)) return true;
        }
        if (now_us() >= deadline) return pred(p, arg);
    }
}

static bool new_step(const pt_pool *p, uint32_t seen_gen) {
    return job_gen(atomic_load_explicit(&p->job, memory_order_acquire)) != seen_gen ||
           atomic_load_explicit(&p->quit, memory_order_acquire);
}

static bool barrier_open(const pt_pool *p, uint32_t gen) {
    return atomic_load_explicit(&p->bar_gen, memory_order_acquire) != gen;
}

/* Claim and run tasks of step `gen` until none is left. */
static void run_claimed(pt_pool *p, uint32_t gen, int thread) {
    uint64_t j = atomic_load_explicit(&p->job, memory_order_acquire);
    for (;;) {
        if (job_gen(j) != gen || job_next(j) >= job_n(j)) return;
        if (!atomic_compare_exchange_weak_explicit(&p->job, &j, j + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* j now holds the current word */
        /* task job_next(j) of step gen is ours; the step cannot finish (and
         * fn / ctx cannot change) before we count it done */
        p->fn(p->ctx, p->task_base + (int)job_next(j), p->task_total, thread);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        j = atomic_load_explicit(&p->job, memory_order_acquire);
    }
}

static void *worker_main(void *arg) {
    pt_worker *w = arg;
    pt_pool *p = w->pool;
    /* the job word starts at step 0; a step published before this thread
     * got here must still be seen as new (run_each waits for it) */
    uint32_t seen = 0;
    for (;;) {
        if (!spin_until(p, new_step, seen)) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1); /* seq_cst: pairs with publish() */
            while (!new_step(p, seen)) pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load_explicit(&p->quit, memory_order_acquire)) return NULL;
        const uint64_t j = atomic_load_explicit(&p->job, memory_order_acquire);
        seen = job_gen(j);
        if (job_each(j)) {
            /* step `seen` waits for this very task, so it is still current */
            p->fn(p->ctx, w->index, p->n_threads, w->index);
            atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
        } else {
            run_claimed(p, seen, w->index);
        }
    }
}

/* Store the new job word and wake sleeping workers. */
static void publish(pt_pool *p, uint64_t job) {
    atomic_store(&p->job, job); /* seq_cst: pairs with the sleepers count */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
}

/* Wait until `done` reaches n. Workers are normally running; on a busy
 * machine one may be preempted mid-task, so after a while yield the core
 * instead of burning it. */
static void wait_done(pt_pool *p, int n) {
    for (int64_t spins = 1; atomic_load_explicit(&p->done, memory_order_acquire) < n; spins++)
        pt_spin_backoff(spins, 20000);
}

static uint64_t next_job_word(const pt_pool *p, uint32_t n_tasks, bool each) {
    const uint32_t gen = job_gen(atomic_load_explicit(&p->job, memory_order_relaxed)) + 1;
    return ((uint64_t)gen << JOB_GEN_SHIFT) | (each ? JOB_EACH_BIT : 0) |
           ((uint64_t)n_tasks << JOB_N_SHIFT);
}

void pt_pool_run(pt_pool *p, pt_pool_fn fn, void *ctx, int n_tasks) {
    if (n_tasks <= 0) return;
    if (p->n_threads == 1 || n_tasks == 1) { /* nothing to share */
        for (int i = 0; i < n_tasks; i++) fn(ctx, i, n_tasks, 0);
        return;
    }
    /* the job word counts at most PT_POOL_MAX_TASKS: more take several steps */
    for (int base = 0; base < n_tasks; base += PT_POOL_MAX_TASKS) {
        const int k = n_tasks - base < PT_POOL_MAX_TASKS ? n_tasks - base : PT_POOL_MAX_TASKS;
        p->fn = fn;
        p->ctx = ctx;
        p->task_base = base;
        p->task_total = n_tasks;
        atomic_store_explicit(&p->done, 0, memory_order_relaxed);
        const uint64_t job = next_job_word(p, (uint32_t)k, false);
        publish(p, job);
        run_claimed(p, job_gen(job), 0);
        wait_done(p, k);
    }
}

void pt_pool_run_each(pt_pool *p, pt_pool_fn fn, void *ctx) {
    const int n = p->n_threads;
    if (n == 1) {
        fn(ctx, 0, 1, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->task_base = 0;
    p->task_total = n;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    publish(p, next_job_word(p, (uint32_t)n, true));
    fn(ctx, 0, n, 0);
    atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    wait_done(p, n);
}

void pt_pool_barrier(pt_pool *p) {
    const int n = p->n_threads;
    if (n == 1) return;
    const uint32_t gen = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == n - 1) {
        /* last to arrive: reset the count before opening, so a thread that
         * sees the new generation and enters the next barrier counts from 0 */
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        atomic_store(&p->bar_gen, gen + 1); /* seq_cst, pairs with bar_sleepers */
        if (atomic_load(&p->bar_sleepers) > 0) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_broadcast(&p->bar_wake);
            pthread_mutex_unlock(&p->lock);
        }
        return;
    }
    if (spin_until(p, barrier_open, gen)) return;
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->bar_sleepers, 1);
    while (!barrier_open(p, gen)) pthread_cond_wait(&p->bar_wake, &p->lock);
    atomic_fetch_sub(&p->bar_sleepers, 1);
    pthread_mutex_unlock(&p->lock);
}

/* The weights from the speeds: each at least PT_POOL_MIN_SHARE / n, the
 * others proportional to their speeds in what is left. Raising some to the
 * floor scales the rest down, which may take another below it, so repeat
 * until no new one falls under (at most n rounds). The fastest thread has
 * speed >= 1/n > floor, so some thread always stays above the floor. */
static void update_weights(pt_pool *p) {
    const int n = p->n_threads;
    const double floor_w = PT_POOL_MIN_SHARE / n;
    bool low[PT_POOL_MAX_THREADS] = {false};
    double w[PT_POOL_MAX_THREADS];
    int n_low = 0;
    for (bool changed = true; changed;) {
        changed = false;
        double free_speed = 0;
        for (int i = 0; i < n; i++)
            if (!low[i]) free_speed += p->speed[i];
        const double scale = (1.0 - n_low * floor_w) / free_speed;
        for (int i = 0; i < n; i++) {
            if (low[i]) continue;
            w[i] = p->speed[i] * scale;
            if (w[i] < floor_w) {
                low[i] = true;
                w[i] = floor_w;
                n_low++;
                changed = true;
            }
        }
    }
    /* prefix sums of non-negative terms never decrease; the last is set to
     * exactly 1 (not the rounded sum) so the shares end at n_units */
    p->cum[0] = 0;
    for (int i = 1; i < n; i++) p->cum[i] = fmin(p->cum[i - 1] + w[i - 1], 1.0);
    p->cum[n] = 1.0;
}

static bool all_positive(const double *v, int n) {
    for (int i = 0; i < n; i++)
        if (!(v[i] > 0) || !isfinite(v[i])) return false;
    return true;
}

void pt_pool_set_speed(pt_pool *p, const double *speed) {
    const int n = p->n_threads;
    const bool ok = speed && all_positive(speed, n);
    double total = 0;
    for (int i = 0; ok && i < n; i++) total += speed[i];
    for (int i = 0; i < n; i++) p->speed[i] = ok ? speed[i] / total : 1.0 / n;
    update_weights(p);
}

void pt_pool_note_speed(pt_pool *p, const double *units_per_s) {
    const int n = p->n_threads;
    if (!all_positive(units_per_s, n)) return;
    double total = 0;
    for (int i = 0; i < n; i++) total += units_per_s[i];
    /* relative speeds of this measurement, so runs of costlier or cheaper
     * units weigh alike; the average of values summing to 1 sums to 1 */
    for (int i = 0; i < n; i++)
        p->speed[i] += PT_POOL_SPEED_ALPHA * (units_per_s[i] / total - p->speed[i]);
    update_weights(p);
}

void pt_pool_weights(const pt_pool *p, double *w) {
    for (int i = 0; i < p->n_threads; i++) w[i] = p->cum[i + 1] - p->cum[i];
}

/* Share boundaries are round(n_units * cum[i]): rounding is monotone and
 * exact at cum = 0 and 1 (n_units <= 2^53 is a double exactly), so the
 * shares tile [0, n_units), each within one unit of n_units * w_i; every
 * thread gets the same boundaries from the same cum. */
void pt_pool_share(const pt_pool *p, int thread, int64_t n_units, int64_t *u0, int64_t *u1) {
    *u0 = llround((double)n_units * p->cum[thread]);
    *u1 = llround((double)n_units * p->cum[thread + 1]);
}

static inline uint64_t cursor_pack(uint64_t front, uint64_t back) { return front | back << 32; }
static inline int64_t cursor_front(uint64_t c) { return (int64_t)(c & UINT32_MAX); }
static inline int64_t cursor_back(uint64_t c) { return (int64_t)(c >> 32); }
static inline int64_t cursor_left(uint64_t c) { return cursor_back(c) - cursor_front(c); }

/* Take up to `want` units from the front of thread `owner`'s range of
 * `part`; false when the range is empty. Relaxed: see the top comment. */
static bool take_front(pt_pool *p, int owner, int part, int64_t want, int64_t *u0, int64_t *u1) {
    _Atomic uint64_t *cur = &p->slots[owner].cursor[part];
    uint64_t c = atomic_load_explicit(cur, memory_order_relaxed);
    for (;;) {
        const int64_t left = cursor_left(c);
        if (left <= 0) return false;
        const int64_t f = cursor_front(c), k = want < left ? want : left;
        const uint64_t next = cursor_pack((uint64_t)(f + k), (uint64_t)cursor_back(c));
        if (atomic_compare_exchange_weak_explicit(cur, &c, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *u0 = f;
            *u1 = f + k;
            return true;
        }
    }
}

/* Steal half (at least one unit) of what is left of the fullest other
 * share of `part`, from its back, so its owner keeps working from the
 * front undisturbed; false once every share of the part is empty. Ranges
 * only shrink, so a scan that finds every one empty is final; a failed CAS
 * means someone else claimed units meanwhile, and the scan starts over. */
static bool steal(pt_pool *p, int thread, int part, int64_t *u0, int64_t *u1) {
    for (;;) {
        int victim = -1;
        uint64_t vc = 0;
        for (int i = 0; i < p->n_threads; i++) {
            if (i == thread) continue;
            const uint64_t c = atomic_load_explicit(&p->slots[i].cursor[part], memory_order_relaxed);
            if (cursor_left(c) > (victim < 0 ? 0 : cursor_left(vc))) {
                victim = i;
                vc = c;
            }
        }
        if (victim < 0) return false;
        const int64_t half = cursor_left(vc) / 2, k = half > 0 ? half : 1, b = cursor_back(vc);
        const uint64_t next = cursor_pack((uint64_t)cursor_front(vc), (uint64_t)(b - k));
        if (atomic_compare_exchange_strong_explicit(&p->slots[victim].cursor[part], &vc, next,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            *u0 = b - k;
            *u1 = b;
            return true;
        }
    }
}

bool pt_pool_claim(pt_pool *p, int thread, int part, int64_t *u0, int64_t *u1) {
    pt_slot *own = &p->slots[thread];
    if (!take_front(p, thread, part, own->chunk[part], u0, u1) && !steal(p, thread, part, u0, u1))
        return false;
    own->units += *u1 - *u0; /* only this thread writes its count */
    return true;
}

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The task of a weighted run: the caller's, timed on this thread's CPU
 * clock into the thread's own slot. */
static void timed_task(void *ctx, int task, int n_tasks, int thread) {
    pt_pool *p = ctx;
    const int64_t t0 = thread_cpu_ns();
    p->wfn(p->wctx, task, n_tasks, thread);
    const int64_t t1 = thread_cpu_ns();
    p->slots[thread].busy_ns = t0 >= 0 && t1 > t0 ? t1 - t0 : 0;
}

void pt_pool_run_weighted(pt_pool *p, pt_pool_fn fn, void *ctx, const int64_t *n_units,
                          int n_parts) {
    const int n = p->n_threads;
    /* every cursor is set before the run is published: a thief may look
     * at thread i's share before thread i has started */
    for (int i = 0; i < n; i++) {
        pt_slot *sl = &p->slots[i];
        for (int part = 0; part < PT_POOL_MAX_PARTS; part++) {
            int64_t u0 = 0, u1 = 0;
            if (part < n_parts) pt_pool_share(p, i, n_units[part], &u0, &u1);
            const int64_t c = (u1 - u0 + PT_POOL_CHUNKS - 1) / PT_POOL_CHUNKS;
            sl->chunk[part] = c > 0 ? c : 1;
            atomic_store_explicit(&sl->cursor[part], cursor_pack((uint64_t)u0, (uint64_t)u1),
                                  memory_order_relaxed);
        }
        sl->units = 0;
        sl->busy_ns = 0;
    }
    if (n == 1) {
        fn(ctx, 0, 1, 0);
        return;
    }
    p->wfn = fn;
    p->wctx = ctx;
    pt_pool_run_each(p, timed_task, p);
    /* every task is done (run_each waited): the slots are final */
    double rate[PT_POOL_MAX_THREADS];
    for (int i = 0; i < n; i++) {
        const pt_slot *sl = &p->slots[i];
        rate[i] = sl->busy_ns > 0 ? (double)sl->units * 1e9 / (double)sl->busy_ns : 0;
    }
    pt_pool_note_speed(p, rate); /* no-op unless every thread measured */
}

int pt_pool_threads(const pt_pool *p) { return p->n_threads; }

void pt_pool_set_spin_us(pt_pool *p, int spin_us) {
    atomic_store_explicit(&p->spin_us, spin_us < 0 ? 0 : spin_us, memory_order_relaxed);
}

static void stop_workers(pt_pool *p) {
    atomic_store(&p->quit, true);
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_started; i++) pthread_join(p->workers[i].thread, NULL);
    p->n_started = 0;
}

pt_status pt_pool_new(int n_threads, pt_pool **out, pt_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > PT_POOL_MAX_THREADS)
        return pt_fail(err, PT_ERR_ARG, "thread count %d is outside 1..%d", n_threads,
                       PT_POOL_MAX_THREADS);
    pt_pool *p = calloc(1, sizeof *p);
    if (!p) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the thread pool");
    p->n_threads = n_threads;
    atomic_init(&p->spin_us, 200);
    atomic_init(&p->job, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->quit, false);
    atomic_init(&p->bar_count, 0);
    atomic_init(&p->bar_gen, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->bar_sleepers, 0);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->bar_wake, NULL);
    p->speed = malloc((size_t)n_threads * sizeof *p->speed);
    p->cum = malloc(((size_t)n_threads + 1) * sizeof *p->cum);
    p->slots = aligned_alloc(_Alignof(pt_slot), (size_t)n_threads * sizeof *p->slots);
    if (n_threads > 1) p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
    if (!p->speed || !p->cum || !p->slots || (n_threads > 1 && !p->workers)) {
        pt_pool_free(p);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for the thread pool");
    }
    memset(p->slots, 0, (size_t)n_threads * sizeof *p->slots);
    for (int i = 0; i < n_threads; i++)
        for (int part = 0; part < PT_POOL_MAX_PARTS; part++) atomic_init(&p->slots[i].cursor[part], 0);
    pt_pool_set_speed(p, NULL); /* equal shares until measured */
    for (int i = 0; i < n_threads - 1; i++) {
        pt_worker *w = &p->workers[i];
        w->pool = p;
        w->index = i + 1;
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            pt_pool_free(p);
            return pt_fail(err, PT_ERR_NOMEM, "cannot start worker thread %d of %d (error %d)",
                           i + 1, n_threads - 1, rc);
        }
        p->n_started++;
    }
    *out = p;
    return PT_OK;
}

void pt_pool_free(pt_pool *p) {
    if (!p) return;
    stop_workers(p);
    pthread_cond_destroy(&p->bar_wake);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p->speed);
    free(p->cum);
    free(p->slots);
    free(p);
}

/* ---- the public pool (petrel.h) ----------------------------------------- */

pt_status pt_threadpool_new(int n_threads, pt_threadpool **out, pt_error *err) {
    *out = NULL;
    if (n_threads <= 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    if (n_threads > PT_POOL_MAX_THREADS) n_threads = PT_POOL_MAX_THREADS;
    pt_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp) return pt_fail(err, PT_ERR_NOMEM, "out of memory for a thread pool");
    pt_status st = pt_pool_new(n_threads, &tp->pool, err);
    if (st != PT_OK) {
        free(tp);
        return st;
    }
    pthread_mutex_init(&tp->turn, NULL);
    *out = tp;
    return PT_OK;
}

void pt_threadpool_free(pt_threadpool *tp) {
    if (!tp) return;
    pt_pool_free(tp->pool);
    pthread_mutex_destroy(&tp->turn);
    free(tp);
}

void pt_threadpool_acquire(pt_threadpool *tp) { pthread_mutex_lock(&tp->turn); }
void pt_threadpool_release(pt_threadpool *tp) { pthread_mutex_unlock(&tp->turn); }
