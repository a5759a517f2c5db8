/*
 * file_job.h — what the commands that write one model file from another
 * (`petrel quantize`, `petrel convert`) share: Ctrl-C turned into the
 * engine's cancel flag while the job runs, and a progress line on stderr
 * (redrawn in place on a terminal, nothing otherwise).
 */
#ifndef PETREL_APP_FILE_JOB_H
#define PETREL_APP_FILE_JOB_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct app_file_job {
    const atomic_bool *cancel; /* for the engine's params: set by SIGINT */
    bool tty;                  /* stderr is a terminal: draw the progress line */
    int last_tensor, last_pct; /* what the line shows now (-1: nothing drawn) */
    struct sigaction old_int;  /* SIGINT's disposition before begin */
} app_file_job;

/* Catch SIGINT (main thread, once per process run of a job). */
void app_file_job_begin(app_file_job *j);
/* "[  12/ 200]  40%  NAME  WHAT" when tensor or percent changed. */
void app_file_job_progress(app_file_job *j, int tensor, int n_tensors, uint64_t done, uint64_t total,
                           const char *name, const char *what);
/* Restore SIGINT and clear the progress line. */
void app_file_job_end(app_file_job *j);

static inline double app_mib(uint64_t n) { return (double)n / (1024.0 * 1024.0); }

#endif
