/* file_job.c — Ctrl-C and progress of quantize and convert (file_job.h). */
#include "file_job.h"

#include <stdio.h>
#include <unistd.h>

#include "args.h"

/* Set by SIGINT; the only state a signal handler can share with the app. */
static atomic_bool g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    atomic_store(&g_interrupted, true);
}

void app_file_job_begin(app_file_job *j) {
    j->cancel = &g_interrupted;
    j->tty = isatty(STDERR_FILENO);
    j->last_tensor = j->last_pct = -1;
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &j->old_int);
}

void app_file_job_progress(app_file_job *j, int tensor, int n_tensors, uint64_t done, uint64_t total,
                           const char *name, const char *what) {
    if (!j->tty || tensor >= n_tensors) return;
    const int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    if (tensor == j->last_tensor && pct == j->last_pct) return;
    j->last_tensor = tensor;
    j->last_pct = pct;
    char safe[128];
    fprintf(stderr, "\r\033[K[%4d/%4d] %3d%%  %-40.40s %s", tensor + 1, n_tensors, pct,
            app_escaped(name, safe, sizeof safe), what);
    fflush(stderr);
}

void app_file_job_end(app_file_job *j) {
    sigaction(SIGINT, &j->old_int, NULL);
    if (j->tty && j->last_tensor >= 0) fputs("\r\033[K", stderr);
}
