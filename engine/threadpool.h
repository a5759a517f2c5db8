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
 *                     compute-bound work split into units: each task
 *                     claims ranges of units with pt_pool_claim, first
 *                     from its own share (sized by the thread's measured
 *                     speed), then by stealing from other threads' shares.
 * All return once every task has finished; every write a task made is
 * then visible to the caller, and every write the caller made before the
 * call is visible to the tasks.
 *
 * Weighted runs with stealing (big.LITTLE phones: a fast core must not
 * wait for a slow one; any machine: a thread may be preempted or migrated
 * mid-run). The work of a run is n_parts parts of n_units[p] units each
 * (say, the row groups of the Q, K and V products). Every part is split
 * into one contiguous share per thread (pt_pool_share), sized by the
 * thread's weight. A task claims its own share of a part from the front,
 * a few chunks at a time (PT_POOL_CHUNKS), so neighbouring units stay on
 * one core; once its share is empty it steals half of what is left from
 * the back of the share of that part with the most units left, until no
 * share of the part has any. Every unit of every part is handed out
 * exactly once, whatever the timing; which thread gets it is not fixed,
 * so a task's results must not depend on who computes a unit.
 *
 * Learning. The pool keeps a speed per thread, relative (they sum to 1),
 * starting equal. A weighted run times each thread's task on the thread's
 * CPU clock (CLOCK_THREAD_CPUTIME_ID: the speed of the core it ran on, not
 * the time it spent preempted by other processes) and counts the units
 * pt_pool_claim handed it (own and stolen); afterwards the caller's thread
 * turns units / time into relative speeds and moves the kept speeds a
 * fraction PT_POOL_SPEED_ALPHA of the way towards them (an exponential
 * moving average). A run is not learnt from when some thread got no units
 * (others took them all) or measured no time. The weights are the speeds
 * with every thread raised to at least PT_POOL_MIN_SHARE of an even share
 * (the rest scaled down to keep the sum 1), so a thread measured slow once
 * still gets work and is measured again. Shares tile [0, n_units) exactly
 * and are a pure function of (weights, thread, n_units); weights change
 * only between runs. Bandwidth-bound work (one token) should keep an even
 * split (pt_pool_run with n_threads tasks): its speed is the memory's,
 * shared by all cores.
 */
#ifndef PETREL_THREADPOOL_H
#define PETREL_THREADPOOL_H

#include "petrel.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct pt_pool pt_pool;

/* One task: task in [0, n_tasks), thread in [0, n_threads) is the thread
 * running it (for per-thread scratch buffers). */
typedef void (*pt_pool_fn)(void *ctx, int task, int n_tasks, int thread);

#define PT_POOL_MAX_THREADS 256
#define PT_POOL_MAX_TASKS ((1 << 20) - 1)

/* One step of a spin-wait: the CPU's pause hint. */
static inline void pt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Step `spins` (counted from 0 by the caller) of a wait that spins, then
 * gives the core away: the pause hint below `limit` steps, sched_yield
 * from then on (whoever is awaited may have lost its core). */
static inline void pt_spin_backoff(int64_t spins, int64_t limit) {
    if (spins < limit) pt_cpu_relax();
    else sched_yield();
}

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

/* Most parts of a weighted run, and how many chunks a thread takes its
 * own share of a part in (the last may be smaller). */
#define PT_POOL_MAX_PARTS 4
#define PT_POOL_CHUNKS 4

/* Run fn(ctx, i, n, i) on thread i for i in [0, n) like pt_pool_run_each,
 * over n_parts (0..PT_POOL_MAX_PARTS) parts of n_units[p] units each
 * (0 <= n_units[p] <= UINT32_MAX), which the tasks take with
 * pt_pool_claim; then learn from the measured speeds (see above). The
 * tasks must not wait at pt_pool_barrier (the wait would count as
 * slowness). A pool of 1 thread runs fn inline (its claims hand it every
 * unit) and learns nothing. */
void pt_pool_run_weighted(pt_pool *pool, pt_pool_fn fn, void *ctx, const int64_t *n_units,
                          int n_parts);

/* Inside a weighted task only, for the task's own `thread`: the next
 * range [*u0, *u1) (non-empty) of part `part` for this thread, from its
 * own share or stolen from another's; false once every unit of the part
 * has been handed out (not necessarily processed yet). The units also
 * count towards the thread's measured speed. Typical task:
 *     while (pt_pool_claim(pool, thread, part, &u0, &u1)) work(u0, u1); */
bool pt_pool_claim(pt_pool *pool, int thread, int part, int64_t *u0, int64_t *u1);

/* Thread `thread`'s share [*u0, *u1) of [0, n_units) under the current
 * weights: contiguous shares in thread order, thread i's within one unit
 * of n_units * weight_i (possibly empty). A pure function of the weights
 * (which change only between runs), so it may be called any time, also
 * from a task. 0 <= n_units <= 2^53 (from 2^40 on, double rounding may add
 * up to n_units / 2^52 to the one unit). */
void pt_pool_share(const pt_pool *pool, int thread, int64_t n_units, int64_t *u0, int64_t *u1);

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

/* The public pt_threadpool (petrel.h): the process's one pool, shared by
 * every model load and context given it. Its users may live on different
 * threads, but a pool has one driver at a time (see above), so each user
 * holds `turn` for the whole of a forward pass or a repacking, between
 * pt_threadpool_acquire and pt_threadpool_release; the other waits. */
struct pt_threadpool {
    pt_pool *pool;
    pthread_mutex_t turn;
};

void pt_threadpool_acquire(pt_threadpool *tp);
void pt_threadpool_release(pt_threadpool *tp);

#endif
