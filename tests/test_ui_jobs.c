/*
 * test_ui_jobs.c — the Models screen's file-job thread (ui/jobs.c):
 * a quantization runs through the engine (progress, then a result whose
 * file matches what pt_quantize_file writes directly); a download runs
 * through the app's fetcher hook, here a stand-in that reports progress
 * and waits for the cancel flag, so that cancelling is checked without
 * timing: a cancel stops the running job (CANCELLED) and never reaches a
 * later one, a queued job cancelled before it starts ends without
 * running, and stopping the thread ends a running job. Without a fetcher
 * a download ends with a one-line error; a convert runs the engine's
 * converter (pt_convert_file) with progress, or ends with a one-line
 * error on a folder that holds no model.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "jobs.h"

static pt_queue events;
static pt_jobs jobs;

/* The stand-in fetcher: blocks (reporting progress) until cancelled when
 * the entry's id is "block", else reports 100 of 100 bytes and succeeds. */
static atomic_int fetch_calls;

static pt_status fake_pull(const pt_catalog_entry *e, const char *dir, const char *dest,
                           const pt_download_params *dp, pt_download_result *res, pt_error *err) {
    (void)dir;
    atomic_fetch_add(&fetch_calls, 1);
    pt_download_progress p = {.done = 50, .total = 100, .bytes_per_s = 10, .eta_s = 5, .attempt = 1};
    dp->progress(dp->progress_user, &p);
    if (!strcmp(e->id, "block")) {
        for (int i = 0; i < 60 * 1000 && !atomic_load(dp->cancel); i++) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (!atomic_load(dp->cancel)) { snprintf(err->msg, sizeof err->msg, "never cancelled"); return PT_ERR_IO; }
        snprintf(err->msg, sizeof err->msg, "cancelled");
        return PT_ERR_CANCELLED;
    }
    p.done = 100;
    dp->progress(dp->progress_user, &p);
    FILE *f = fopen(dest, "wb");
    if (f) { fputs("0123456789", f); fclose(f); }
    res->check = PT_DOWNLOAD_SHA256_GIVEN;
    return PT_OK;
}

typedef struct seen {
    int n_progress;
    pt_job_info last_progress;
    pt_status status;
    char msg[320];
    pt_job_info info;
} seen;

/* Events until job id's JOB_DONE; a JOB_PROGRESS of it first when
 * stop_at_progress (then returns with status -1). */
static seen wait_job(int id, bool stop_at_progress) {
    seen s = {0};
    s.status = (pt_status)-1;
    for (;;) {
        pt_ui_event *ev = (pt_ui_event *)pt_queue_wait(&events);
        if (!ev) { CHECK(0, "event queue closed before job %d ended", id); return s; }
        CHECK(ev->job_id == id, "an event of job %d while waiting for job %d", ev->job_id, id);
        bool done = ev->kind == PT_EV_JOB_DONE;
        if (ev->kind == PT_EV_JOB_PROGRESS) { s.n_progress++; s.last_progress = ev->job; }
        if (done) {
            s.status = ev->status;
            snprintf(s.msg, sizeof s.msg, "%s", ev->msg);
            s.info = ev->job;
        }
        pt_ui_event_free(ev);
        if (done || (stop_at_progress && s.n_progress)) return s;
    }
}

static pt_job_spec pull_spec(int id, const pt_catalog_entry *e, const char *dir) {
    pt_job_spec s = {.kind = PT_JOB_PULL, .id = id, .entry = e, .pull = fake_pull, .max_retries = -1};
    snprintf(s.dir, sizeof s.dir, "%s", dir);
    snprintf(s.dest, sizeof s.dest, "%s/pulled-%d.gguf", dir, id);
    return s;
}

static uint64_t size_of(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int main(void) {
    char dir[] = "/tmp/petrel-jobs-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temporary folder");
    CHECK(pt_queue_init(&events, false), "event queue");
    CHECK(pt_jobs_start(&jobs, &events), "job thread");
    pt_catalog_entry block = {.id = "block"}, quick = {.id = "quick"};

    /* ---- quantize: the engine's, with progress */
    pt_job_spec q = {.kind = PT_JOB_QUANTIZE, .id = 1, .n_threads = 2, .max_retries = -1};
    snprintf(q.src, sizeof q.src, "%s", test_data("quantize_tiny.gguf"));
    snprintf(q.dest, sizeof q.dest, "%s/q8.gguf", dir);
    snprintf(q.type, sizeof q.type, "Q8_0");
    CHECK(pt_jobs_send(&jobs, &q), "quantize sent");
    seen s = wait_job(1, false);
    CHECK(s.status == PT_OK, "quantize: %s", s.msg);
    CHECK(s.n_progress >= 1, "quantize: progress reported (%d)", s.n_progress);
    CHECK(s.last_progress.total > 0 && s.last_progress.done == s.last_progress.total,
          "quantize: the last progress is the whole (%llu of %llu)", (unsigned long long)s.last_progress.done,
          (unsigned long long)s.last_progress.total);
    CHECK(s.last_progress.n_tensors > 0, "quantize: tensor count");
    CHECK(s.info.out_bytes == size_of(q.dest) && s.info.out_bytes > 0, "quantize: out_bytes is the file's size");
    CHECK(s.info.in_bytes == size_of(q.src), "quantize: in_bytes is the source's size");
    /* the same call made directly gives the same bytes */
    char direct[300];
    snprintf(direct, sizeof direct, "%s/direct.gguf", dir);
    pt_quantize_params qp = pt_quantize_default_params();
    qp.type = "Q8_0";
    qp.n_threads = 1;
    pt_error err = {0};
    CHECK(pt_quantize_file(q.src, direct, &qp, NULL, &err) == PT_OK, "direct quantize: %s", err.msg);
    size_t n1 = 0, n2 = 0;
    char *b1 = test_read_file(q.dest, &n1), *b2 = test_read_file(direct, &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "the job's file equals pt_quantize_file's");
    free(b1);
    free(b2);

    /* a quantization cancelled before it starts writes nothing */
    pt_jobs_cancel(&jobs, 2);
    q.id = 2;
    snprintf(q.dest, sizeof q.dest, "%s/never.gguf", dir);
    CHECK(pt_jobs_send(&jobs, &q), "quantize 2 sent");
    s = wait_job(2, false);
    CHECK(s.status == PT_ERR_CANCELLED, "cancelled before it started: %s", pt_status_name(s.status));
    CHECK(access(q.dest, F_OK) != 0 && access(direct, F_OK) == 0, "nothing at its output");
    /* a bad type is a one-line error */
    q.id = 3;
    snprintf(q.type, sizeof q.type, "Q9_9");
    CHECK(pt_jobs_send(&jobs, &q), "quantize 3 sent");
    s = wait_job(3, false);
    CHECK(s.status == PT_ERR_ARG && s.msg[0] && !strchr(s.msg, '\n'), "bad type: %s", s.msg);

    /* ---- downloads through the fetcher hook */
    pt_job_spec p4 = pull_spec(4, &quick, dir);
    CHECK(pt_jobs_send(&jobs, &p4), "pull 4 sent");
    s = wait_job(4, false);
    CHECK(s.status == PT_OK && s.info.check == PT_DOWNLOAD_SHA256_GIVEN, "pull 4: %s", s.msg);
    CHECK(s.info.out_bytes == 10, "pull 4: the file's size (%llu)", (unsigned long long)s.info.out_bytes);
    CHECK(s.n_progress >= 1 && s.last_progress.done == 100 && s.last_progress.total == 100 &&
              s.last_progress.bytes_per_s == 10 && s.last_progress.attempt == 1,
          "pull 4: the fetcher's progress arrives");

    /* a cancel stops the running job and never reaches the next one */
    pt_job_spec p5 = pull_spec(5, &block, dir), p6 = pull_spec(6, &quick, dir);
    CHECK(pt_jobs_send(&jobs, &p5) && pt_jobs_send(&jobs, &p6), "pulls 5, 6 sent");
    s = wait_job(5, true);   /* 5 runs: it reported progress */
    pt_jobs_cancel(&jobs, 5);
    s = wait_job(5, false);
    CHECK(s.status == PT_ERR_CANCELLED, "pull 5 cancelled: %s (%s)", pt_status_name(s.status), s.msg);
    s = wait_job(6, false);
    CHECK(s.status == PT_OK, "pull 6 runs untouched: %s", s.msg);

    /* a queued job cancelled while an earlier one runs ends without running */
    pt_job_spec p7 = pull_spec(7, &block, dir), p8 = pull_spec(8, &quick, dir);
    CHECK(pt_jobs_send(&jobs, &p7) && pt_jobs_send(&jobs, &p8), "pulls 7, 8 sent");
    s = wait_job(7, true);
    int calls = atomic_load(&fetch_calls);
    pt_jobs_cancel(&jobs, 8);
    CHECK(wait_job(7, false).status == PT_ERR_CANCELLED, "pull 7 cancelled");
    s = wait_job(8, false);
    CHECK(s.status == PT_ERR_CANCELLED && s.n_progress == 0, "pull 8 ended cancelled, no progress");
    CHECK(atomic_load(&fetch_calls) == calls, "the fetcher was not called for pull 8");

    /* no fetcher */
    pt_job_spec p9 = pull_spec(9, &quick, dir);
    p9.pull = NULL;
    CHECK(pt_jobs_send(&jobs, &p9), "pull 9 sent");
    s = wait_job(9, false);
    CHECK(s.status == PT_ERR_UNSUPPORTED && strstr(s.msg, "cannot download"), "no fetcher: %s", s.msg);

    /* convert: a folder that is no model is a one-line error, nothing
     * written; the tiny llama folder converts with progress, to the bytes
     * pt_convert_file writes directly */
    pt_job_spec c10 = {.kind = PT_JOB_CONVERT, .id = 10, .max_retries = -1};
    snprintf(c10.src, sizeof c10.src, "%s", dir);
    snprintf(c10.dest, sizeof c10.dest, "%s/converted.gguf", dir);
    CHECK(pt_jobs_send(&jobs, &c10), "convert sent");
    s = wait_job(10, false);
    CHECK(s.status != PT_OK && s.msg[0] && !strchr(s.msg, '\n'), "convert of no model: %s", s.msg);
    CHECK(access(c10.dest, F_OK) != 0, "convert of no model: nothing written");
    pt_job_spec c12 = {.kind = PT_JOB_CONVERT, .id = 12, .max_retries = -1, .n_threads = 1};
    snprintf(c12.src, sizeof c12.src, "%s", test_data("hf-tiny/llama"));
    snprintf(c12.dest, sizeof c12.dest, "%s/llama-f16.gguf", dir);
    CHECK(pt_jobs_send(&jobs, &c12), "convert 12 sent");
    s = wait_job(12, false);
    CHECK(s.status == PT_OK, "convert: %s", s.msg);
    CHECK(s.n_progress >= 1 && s.last_progress.total > 0 && s.last_progress.done == s.last_progress.total,
          "convert: progress to the whole (%d reports)", s.n_progress);
    CHECK(s.info.out_bytes == size_of(c12.dest) && s.info.out_bytes > 0, "convert: out_bytes is the file's size");
    char conv_direct[300];
    snprintf(conv_direct, sizeof conv_direct, "%s/llama-direct.gguf", dir);
    pt_convert_params cp = pt_convert_default_params();
    CHECK(pt_convert_file(c12.src, conv_direct, &cp, NULL, &err) == PT_OK, "direct convert: %s", err.msg);
    b1 = test_read_file(c12.dest, &n1);
    b2 = test_read_file(conv_direct, &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "the job's file equals pt_convert_file's");
    free(b1);
    free(b2);

    /* stopping the thread ends a running job */
    pt_job_spec p11 = pull_spec(13, &block, dir);
    CHECK(pt_jobs_send(&jobs, &p11), "pull 11 sent");
    s = wait_job(13, true);
    CHECK(pt_jobs_stop(&jobs, 30.0), "the thread stops while a job runs");
    s = wait_job(13, false);
    CHECK(s.status == PT_ERR_CANCELLED, "the running job ended cancelled");

    pt_qnode *n;
    while ((n = pt_queue_pop(&events))) pt_ui_event_free((pt_ui_event *)n);
    pt_queue_destroy(&events, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "clean up");
    return check_done("ui_jobs");
}
