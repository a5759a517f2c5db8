/*
 * sigbus.c — a model file truncated or replaced while it is mapped makes the
 * next read of a vanished page raise SIGBUS. The engine installs no signal
 * handlers (library rule), so the app catches it and ends with one line
 * naming the file instead of a core dump.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "sigbus.h"

/* The message the handler writes, formatted (and escaped) before the model is
 * opened, from the main thread only; the handler only reads it. The one
 * piece of static state here: a signal handler can reach nothing else. */
static char sigbus_msg[4096 + 128];
static volatile sig_atomic_t sigbus_len;
/* Several threads read the mapping: the first to fault writes the line, the
 * others wait for its _exit (a lock-free atomic_flag is signal-safe). */
static atomic_flag sigbus_claimed = ATOMIC_FLAG_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    (void)uctx;
    if (info->si_code != BUS_ADRERR) {
        /* not a vanished page of a mapping (say, a misaligned access): the
         * default action, so the fault is reported as what it is */
        signal(sig, SIG_DFL);
        return; /* the faulting instruction runs again and ends the process */
    }
    if (atomic_flag_test_and_set(&sigbus_claimed))
        for (;;) pause();
    /* async-signal-safe only: write(2) and _exit(2) */
    ssize_t w = write(STDERR_FILENO, sigbus_msg, (size_t)sigbus_len);
    (void)w;
    _exit(1);
}

void app_catch_sigbus(const char *model_path) {
    char safe[4096];
    sigbus_len = 0; /* a fault while the text changes writes nothing, still exits 1 */
    int n = snprintf(sigbus_msg, sizeof sigbus_msg, "petrel: model file %s changed or was truncated while in use\n",
                     app_escaped(model_path, safe, sizeof safe));
    sigbus_len = n < 0 ? 0 : (size_t)n < sizeof sigbus_msg ? n : (int)sizeof sigbus_msg - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
