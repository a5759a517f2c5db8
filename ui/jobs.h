/*
 * jobs.h — the file-job thread of the full-screen UI: downloads of
 * catalog entries and quantizations for the Models screen (and
 * conversions, once the engine has them: see PT_JOB_CONVERT).
 *
 * Jobs are long (a download may take an hour) and touch only files, so
 * they run on a thread of their own beside the engine worker (worker.h):
 * a chat reply never waits behind a download, nor a download behind a
 * reply. Jobs run one at a time in the order sent. Events go to the UI's
 * event queue as the worker's do: PT_EV_JOB_PROGRESS at most ~10 times a
 * second, and PT_EV_JOB_DONE once per job, made when the job is sent so
 * that its end is always reported.
 *
 * Cancelling follows the worker's discipline for turns: job ids grow (the
 * UI numbers its jobs 1, 2, 3, ...) and pt_jobs_cancel(j, N) stops every
 * job with an id up to N: the running one at the engine's next check (a
 * download keeps its .part and sidecar for a later resume, a quantization
 * leaves nothing), a queued one as it starts, without running. A later
 * job is never reached.
 *
 * Signals: like the worker, the thread blocks every asynchronous signal.
 */
#ifndef PETREL_UI_JOBS_H
#define PETREL_UI_JOBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "petrel.h"
#include "queue.h"
#include "ui.h"
#include "worker.h"

typedef enum pt_job_kind {
    PT_JOB_PULL,      /* fetch a catalog entry (entry, pull, dir) into dest */
    PT_JOB_QUANTIZE,  /* pt_quantize_file(src, dest, type) */
    PT_JOB_CONVERT,   /* pt_convert_file(src, dest, type): a Hugging Face folder
                         or an SD checkpoint to a GGUF */
} pt_job_kind;

typedef struct pt_job_spec {
    pt_job_kind kind;
    int id;                       /* > 0, larger than every earlier job's */
    /* PULL: the entry (its catalog outlives the job and is not changed
     * meanwhile), the app's fetcher and the models folder */
    const pt_catalog_entry *entry;
    pt_ui_pull_fn pull;
    char dir[4096];
    char src[4096];               /* QUANTIZE, CONVERT: the input */
    char dest[4096];              /* the file made */
    char type[16];                /* QUANTIZE: llama-quantize's type name; CONVERT: "" or a type */
    bool allow_requantize;        /* QUANTIZE: a quantized source is dequantized first */
    int n_threads;                /* QUANTIZE: its private pool (<= 0: a thread per core) */
    int max_retries;              /* PULL: < 0: the engine's defaults */
    double retry_wait_s;
} pt_job_spec;

typedef struct pt_jobs {
    pthread_t thread;
    bool started;
    pt_queue cmds;
    pt_queue *events;
    /* mu guards cancel_upto and running, and every store to cancel: a
     * cancel meant for job N can never land after the thread has moved on
     * to job N + 1 */
    pthread_mutex_t mu;
    int cancel_upto;              /* jobs with id <= this are cancelled */
    int running;                  /* id of the job running; 0 when none */
    atomic_bool cancel;           /* the engine's flag */
    atomic_bool finished;         /* set by the thread as its last act */
} pt_jobs;

bool pt_jobs_start(pt_jobs *j, pt_queue *events);
/* Cancel what runs, drop what is queued, wait up to wait_s seconds for
 * the thread to end. False when it did not: the thread is detached and
 * j must be left alone (the process is about to exit). */
bool pt_jobs_stop(pt_jobs *j, double wait_s);
/* Queue a job (spec is copied). False (nothing sent) when out of memory. */
bool pt_jobs_send(pt_jobs *j, const pt_job_spec *spec);
/* Cancel every job with an id <= upto_id. */
void pt_jobs_cancel(pt_jobs *j, int upto_id);

#endif
