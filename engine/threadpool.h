/*
 * threadpool.h — a fixed set of worker threads that run the tasks of one
 * parallel step at a time, with a low-latency hand-off: idle workers spin
 * for a short while (spin_us, default 200 µs) before sleeping on a condition
 * variable, so back-to-back steps of a forward pass never pay a wake-up,
 * while an idle pool costs no CPU. Internal to the engine.
 *
 * Threads are numbered 0..n_threads-1; thread 0 is the caller of
 * pt_pool_run, which works on tasks too (a pool of 1 thread has no worker
 * and runs everything inline). One pool is driven by one thread at a time:
 * pt_pool_run is not reentrant and must not be called from inside a task.
 *
 * Three ways to run a step:
 *   pt_pool_run       n_tasks tasks, each claimed by whichever thread is
 *                     free next (dynamic: fast cores take more tasks, so
 *                     split work into more tasks than threads for balance);
 *   pt_pool_run_each  exactly one task per thread, task i on thread i, and
 *                     the tasks may meet at pt_pool_barrier (for fusing
 *                     several dependent steps into one dispatch);
 *   pt_pool_run_weighted  one task per thread like run_each, for
 *                     compute-bound work: each task takes its share of the
 *                     work from pt_pool_share, one contiguous range of units
 *                     per thread, sized by the thread's measured speed.
 * All return once every task has finished; every write a task made is
 * then visible to the caller, and every write the caller made before the
 * call is visible to the tasks.
 *
 * Weighted shares (big.LITTLE phones: a fast core must not wait for a slow
 * one). The pool keeps a speed per thread, relative (they sum to 1),
 * starting equal. A weighted run times each thread's task on the thread's
 * CPU clock (CLOCK_THREAD_CPUTIME_ID: the speed of the core it ran on, not
 * the time it spent preempted by other processes) and counts the units
 * pt_pool_share handed it; afterwards the caller's thread turns units /
 * time into relative speeds and moves the kept speeds a fraction
 * PT_POOL_SPEED_ALPHA of the way towards them (an exponential moving
 * average). A run is not learnt from when some thread got no units or
 * measured no time. The weights are the speeds with every thread raised
 * to at least PT_POOL_MIN_SHARE of an even share (the rest scaled down to
 * keep the sum 1), so a thread measured slow once still gets work and is
 * measured again. Shares tile [0, n_units) exactly and are a pure function
 * of (weights, thread, n_units): every thread computes the same partition,
 * and weights change only between runs. Bandwidth-bound work (one token)
 * should keep an even split (pt_pool_run with n_threads tasks): its speed
 * is the memory's, shared by all cores.
 */
#ifndef PETREL_THREADPOOL_H
#define PETREL_THREADPOOL_H

#include "petrel.h"

typedef struct pt_pool pt_pool;

/* One task: task in [0, n_tasks), thread in [0, n_threads) is the thread
 * running it (for per-thread scratch buffers). */
typedef void (*pt_pool_fn)(void *ctx, int task, int n_tasks, int thread);

#define PT_POOL_MAX_THREADS 256
#define PT_POOL_MAX_TASKS ((1 << 20) - 1)

/* Start n_threads - 1 workers (1 <= n_threads <= PT_POOL_MAX_THREADS). */
pt_status pt_pool_new(int n_threads, pt_pool **out, pt_error *err);

/* Stop and join the workers. The pool must be idle (no run in progress).
 * NULL is a no-op. */
void pt_pool_free(pt_pool *pool);

int pt_pool_threads(const pt_pool *pool);

/* How long an idle worker (or a thread waiting at a barrier) spins before
 * it sleeps; 0 sleeps at once. Call only while no run is in progress. */
void pt_pool_set_spin_us(pt_pool *pool, int spin_us);

/* Run fn(ctx, i, n_tasks, thread) for every i in [0, n_tasks), spread over
 * the pool; returns when all are done. n_tasks <= 0 does nothing. More
 * than PT_POOL_MAX_TASKS tasks run as several consecutive steps (so a
 * task of one step may start only after the previous step finished). */
void pt_pool_run(pt_pool *pool, pt_pool_fn fn, void *ctx, int n_tasks);

/* Run fn(ctx, i, n, i) on thread i for i in [0, n), n = pt_pool_threads. */
void pt_pool_run_each(pt_pool *pool, pt_pool_fn fn, void *ctx);

/* Run fn(ctx, i, n, i) on thread i for i in [0, n) like pt_pool_run_each,
 * each task taking its units from pt_pool_share, then learn from the
 * measured speeds (see above). The tasks must not wait at pt_pool_barrier
 * (the wait would count as slowness). A pool of 1 thread runs fn inline
 * and learns nothing. */
void pt_pool_run_weighted(pt_pool *pool, pt_pool_fn fn, void *ctx);

/* Units [*u0, *u1) of [0, n_units) for `thread`: contiguous shares in
 * thread order, thread i's within one unit of n_units * weight_i (possibly
 * empty). It also counts the units towards the thread's measured speed,
 * so during a run only thread i may ask for thread i's share; any thread
 * may while no run is in progress. 0 <= n_units <= 2^53 (from 2^40 on,
 * double rounding may add up to n_units / 2^52 to the one unit). */
void pt_pool_share(pt_pool *pool, int thread, int64_t n_units, int64_t *u0, int64_t *u1);

/* Learning rate of the speed average, and the least share of a thread as a
 * fraction of an even share (1 / n_threads). */
#define PT_POOL_SPEED_ALPHA 0.2
#define PT_POOL_MIN_SHARE 0.25

/* The current weights: w[0..n_threads), summing to 1. */
void pt_pool_weights(const pt_pool *pool, double *w);

/* Set the kept speeds to speed[0..n_threads) (relative; each > 0), or to
 * equal when speed is NULL or holds a value that is not positive and
 * finite. For seeding from known core speeds, and for tests. Call only
 * while no run is in progress. */
void pt_pool_set_speed(pt_pool *pool, const double *speed);

/* Learn from one measurement of units per second per thread, as a
 * weighted run does with what it measured (ignored unless every value is
 * positive and finite). Lets tests feed timings. Call only while no run
 * is in progress. */
void pt_pool_note_speed(pt_pool *pool, const double *units_per_s);

/* Inside a pt_pool_run_each task only: wait until every thread of the pool
 * has reached this barrier. Writes before it are visible to every thread
 * after it. Every thread must call it the same number of times. */
void pt_pool_barrier(pt_pool *pool);

#endif
