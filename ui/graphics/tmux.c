/*
 * tmux.c — tmux's passthrough: whether it is allowed (asked of tmux
 * itself), and the wrapper that carries a picture through it.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gfx_internal.h"
#include "tmux.h"

extern char **environ;

void pt_gfx_tmux_wrap(const char *data, size_t n, pt_gfx_buf *out) {
    pt_gfx_buf_append(out, "\033Ptmux;", 7);
    size_t from = 0;
    for (size_t i = 0; i < n; i++)
        if (data[i] == 0x1b) {
            /* the run up to and including this ESC, then the ESC again */
            pt_gfx_buf_append(out, data + from, i + 1 - from);
            pt_gfx_buf_append(out, "\033", 1);
            from = i + 1;
        }
    pt_gfx_buf_append(out, data + from, n - from);
    pt_gfx_buf_append(out, "\033\\", 2);
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

bool pt_gfx_tmux_passthrough(int timeout_ms) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"tmux", "show-options", "-gv", "allow-passthrough", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "tmux", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return false; /* no tmux binary: nothing to ask, nothing passes */
    }
    char out[32];
    size_t len = 0;
    long deadline = now_ms() + timeout_ms;
    for (;;) {
        long left = deadline - now_ms();
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) break;
        ssize_t got = read(fds[0], out + len, sizeof out - 1 - len);
        if (got <= 0) break;
        len += (size_t)got;
        if (len == sizeof out - 1) break;
    }
    close(fds[0]);
    int status = 0;
    /* its stdout closed: it is exiting; give it what is left of the time */
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() >= deadline) { /* still running past the timeout */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return false;
        }
        nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
    }
    out[len] = '\0';
    if (!WIFEXITED(status)) return false;
    if (WEXITSTATUS(status) != 0)
        /* tmux before 3.3 has no such option and passes every DCS through;
         * 127: the shell's "not found", from a spawn that could not exec */
        return WEXITSTATUS(status) != 127;
    /* "on" or "all" (3.4: also invisible panes) */
    return !strncmp(out, "on", 2) || !strncmp(out, "all", 3);
}
