/* jobs.c — the file-job thread (see jobs.h). */
#include "jobs.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct jcmd {
    pt_qnode node;
    bool quit;
    pt_job_spec spec;
    pt_ui_event *done;   /* the JOB_DONE event, made with the command */
} jcmd;

static void jcmd_free(pt_qnode *n) {
    jcmd *c = (jcmd *)n;
    pt_ui_event_free(c->done);
    free(c);
}

static pt_ui_event *ev_new(pt_ev_kind kind, int job_id) {
    pt_ui_event *ev = calloc(1, sizeof *ev);
    if (ev) {
        ev->kind = kind;
        ev->job_id = job_id;
        ev->t = pt_ui_now();
    }
    return ev;
}

/* The running job's progress: posted at most 10 times a second, and
 * always when it reaches its total. */
typedef struct job_ctx {
    pt_jobs *j;
    int id;
    double t0, last_t;
    pt_job_info info;
} job_ctx;

static void post_progress(job_ctx *jc) {
    const double now = pt_ui_now();
    jc->info.elapsed = now - jc->t0;
    if (now - jc->last_t < 0.1 && !(jc->info.total && jc->info.done >= jc->info.total)) return;
    jc->last_t = now;
    pt_ui_event *ev = ev_new(PT_EV_JOB_PROGRESS, jc->id);
    if (!ev) return;   /* a progress report may be skipped */
    ev->job = jc->info;
    pt_queue_push(jc->j->events, &ev->node);
}

static void on_download(void *user, const pt_download_progress *p) {
    job_ctx *jc = user;
    jc->info.done = p->done;
    jc->info.total = p->total;
    jc->info.resumed_from = p->resumed_from;
    jc->info.bytes_per_s = p->bytes_per_s;
    jc->info.eta_s = p->eta_s;
    jc->info.attempt = p->attempt;
    post_progress(jc);
}

/* A quantization's or conversion's progress: tensors and input bytes
 * handled of all of them; the rate and time left from the bytes handled
 * so far. */
static void on_tensors(job_ctx *jc, uint64_t done, uint64_t total, int tensor, int n_tensors) {
    jc->info.done = done;
    jc->info.total = total;
    jc->info.tensor = tensor;
    jc->info.n_tensors = n_tensors;
    jc->info.eta_s = -1;
    const double t = pt_ui_now() - jc->t0;
    if (t > 0.5 && done > 0) {
        jc->info.bytes_per_s = (double)done / t;
        jc->info.eta_s = (double)(total - done) / jc->info.bytes_per_s;
    }
    post_progress(jc);
}

static void on_quantize(void *user, const pt_quantize_progress *p) {
    on_tensors(user, p->done, p->total, p->tensor, p->n_tensors);
}

static void on_convert(void *user, const pt_convert_progress *p) {
    on_tensors(user, p->done, p->total, p->tensor, p->n_tensors);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static pt_status job_pull(pt_jobs *j, const pt_job_spec *s, job_ctx *jc, pt_error *err) {
    if (!s->pull || !s->entry) {
        err->code = PT_ERR_UNSUPPORTED;
        snprintf(err->msg, sizeof err->msg, "this petrel cannot download models");
        return err->code;
    }
    pt_download_params dp = pt_download_default_params();
    if (s->max_retries >= 0) {
        dp.max_retries = s->max_retries;
        dp.retry_wait_s = s->retry_wait_s;
    }
    dp.progress = on_download;
    dp.progress_user = jc;
    dp.cancel = &j->cancel;
    pt_download_result res = {0};
    pt_status st = s->pull(s->entry, s->dir, s->dest, &dp, &res, err);
    if (st == PT_OK) {
        jc->info.check = res.check;
        jc->info.resumed_from = res.resumed_from;
        jc->info.out_bytes = file_size(s->dest);
        jc->info.done = jc->info.total = jc->info.out_bytes;
    }
    return st;
}

static pt_status job_quantize(pt_jobs *j, const pt_job_spec *s, job_ctx *jc, pt_error *err) {
    pt_quantize_params qp = pt_quantize_default_params();
    qp.type = s->type;
    qp.allow_requantize = s->allow_requantize;
    qp.n_threads = s->n_threads;
    qp.progress = on_quantize;
    qp.progress_user = jc;
    qp.cancel = &j->cancel;
    pt_quantize_result res = {0};
    pt_status st = pt_quantize_file(s->src, s->dest, &qp, &res, err);
    if (st == PT_OK) {
        jc->info.in_bytes = res.in_file_bytes;
        jc->info.out_bytes = res.out_file_bytes;
    }
    return st;
}

/* Convert s->src (a Hugging Face folder or an SD checkpoint) into s->dest
 * at s->type ("": the converter's default, F16). The engine writes
 * DEST.tmp and renames it only when complete, so a cancel leaves nothing
 * under the final name. */
static pt_status job_convert(pt_jobs *j, const pt_job_spec *s, job_ctx *jc, pt_error *err) {
    pt_convert_params cp = pt_convert_default_params();
    cp.outtype = s->type[0] ? s->type : NULL;
    cp.n_threads = s->n_threads;
    cp.progress = on_convert;
    cp.progress_user = jc;
    cp.cancel = &j->cancel;
    pt_convert_result res = {0};
    pt_status st = pt_convert_file(s->src, s->dest, &cp, &res, err);
    if (st == PT_OK) {
        jc->info.in_bytes = res.in_bytes;
        jc->info.out_bytes = res.out_file_bytes;
    }
    return st;
}

/* Make id the running job; true when it is already cancelled. */
static bool job_begin(pt_jobs *j, int id) {
    pthread_mutex_lock(&j->mu);
    j->running = id;
    bool cancelled = id <= j->cancel_upto;
    atomic_store(&j->cancel, cancelled);
    pthread_mutex_unlock(&j->mu);
    return cancelled;
}

static void job_end(pt_jobs *j) {
    pthread_mutex_lock(&j->mu);
    j->running = 0;
    atomic_store(&j->cancel, false);
    pthread_mutex_unlock(&j->mu);
}

static void run_job(pt_jobs *j, jcmd *c) {
    const pt_job_spec *s = &c->spec;
    pt_ui_event *ev = c->done;
    c->done = NULL;
    job_ctx jc = {.j = j, .id = s->id, .t0 = pt_ui_now()};
    jc.info.eta_s = -1;
    pt_error err = {0};
    if (job_begin(j, s->id)) {
        ev->status = PT_ERR_CANCELLED;
        snprintf(err.msg, sizeof err.msg, "cancelled");
    } else {
        switch (s->kind) {
        case PT_JOB_PULL: ev->status = job_pull(j, s, &jc, &err); break;
        case PT_JOB_QUANTIZE: ev->status = job_quantize(j, s, &jc, &err); break;
        case PT_JOB_CONVERT: ev->status = job_convert(j, s, &jc, &err); break;
        }
    }
    job_end(j);
    if (ev->status != PT_OK) {
        const char *m = err.msg[0] ? err.msg : pt_status_name(ev->status);
        /* engine messages may quote file names and server text */
        pt_escape_text(m, strlen(m), ev->msg, sizeof ev->msg);
    }
    jc.info.elapsed = pt_ui_now() - jc.t0;
    ev->job = jc.info;
    ev->t = pt_ui_now();
    pt_queue_push(j->events, &ev->node);
}

static void *jobs_main(void *arg) {
    pt_jobs *j = arg;
    for (;;) {
        jcmd *c = (jcmd *)pt_queue_wait(&j->cmds);
        if (!c) break;
        bool quit = c->quit;
        if (!quit) run_job(j, c);
        jcmd_free(&c->node);
        if (quit) break;
    }
    atomic_store(&j->finished, true);
    return NULL;
}

bool pt_jobs_start(pt_jobs *j, pt_queue *events) {
    memset(j, 0, sizeof *j);
    j->events = events;
    atomic_init(&j->cancel, false);
    atomic_init(&j->finished, false);
    if (pthread_mutex_init(&j->mu, NULL) != 0) return false;
    if (!pt_queue_init(&j->cmds, false)) { pthread_mutex_destroy(&j->mu); return false; }
    /* the thread inherits this mask: asynchronous signals stay with the UI */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV); sigdelset(&all, SIGBUS); sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL); sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&j->thread, NULL, jobs_main, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pt_queue_destroy(&j->cmds, NULL);
        pthread_mutex_destroy(&j->mu);
        return false;
    }
    j->started = true;
    return true;
}

bool pt_jobs_send(pt_jobs *j, const pt_job_spec *spec) {
    jcmd *c = calloc(1, sizeof *c);
    if (!c) return false;
    c->spec = *spec;
    if (!(c->done = ev_new(PT_EV_JOB_DONE, spec->id))) { free(c); return false; }
    pt_queue_push(&j->cmds, &c->node);
    return true;
}

void pt_jobs_cancel(pt_jobs *j, int upto_id) {
    pthread_mutex_lock(&j->mu);
    if (upto_id > j->cancel_upto) j->cancel_upto = upto_id;
    if (j->running > 0 && j->running <= j->cancel_upto) atomic_store(&j->cancel, true);
    pthread_mutex_unlock(&j->mu);
}

bool pt_jobs_stop(pt_jobs *j, double wait_s) {
    if (!j->started) return true;
    pt_jobs_cancel(j, INT_MAX);
    pt_qnode *n;
    while ((n = pt_queue_pop(&j->cmds))) jcmd_free(n);
    jcmd *q = calloc(1, sizeof *q);
    if (q) { q->quit = true; pt_queue_push(&j->cmds, &q->node); }
    pt_queue_close(&j->cmds);
    double end = pt_ui_now() + wait_s;
    while (!atomic_load(&j->finished) && pt_ui_now() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    j->started = false;
    if (!atomic_load(&j->finished)) {
        pthread_detach(j->thread);
        return false;
    }
    pthread_join(j->thread, NULL);
    pt_queue_destroy(&j->cmds, jcmd_free);
    pthread_mutex_destroy(&j->mu);
    return true;
}
