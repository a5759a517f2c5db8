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
 * Two ways to run a step:
 *   pt_pool_run       n_tasks tasks, each claimed by whichever thread is
 *                     free next (dynamic: fast cores take more tasks, so
 *                     split compute-bound work into more tasks than
 *                     threads for balance);
 *   pt_pool_run_each  exactly one task per thread, task i on thread i, and
 *                     the tasks may meet at pt_pool_barrier (for fusing
 *                     several dependent steps into one dispatch).
 * Both return once every task has finished; every write a task made is
 * then visible to the caller, and every write the caller made before the
 * call is visible to the tasks.
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

/* Inside a pt_pool_run_each task only: wait until every thread of the pool
 * has reached this barrier. Writes before it are visible to every thread
 * after it. Every thread must call it the same number of times. */
void pt_pool_barrier(pt_pool *pool);

#endif
