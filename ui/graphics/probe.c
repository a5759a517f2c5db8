/*
 * probe.c — asking the terminal what it can draw (graphics.h,
 * pt_gfx_probe). The queries go out in one write, DA1 last: terminals
 * answer in order and every terminal answers DA1, so its reply means the
 * others are in (or were never coming). The replies are read with the tty
 * in raw mode (no echo, no line editing, no signals) so they neither show
 * on the screen nor wait in the input; the mode is restored with
 * TCSAFLUSH, which also drops anything that arrived since the last read.
 * Keys typed during the probe (at most the timeout) are dropped with it.
 * The signals that end a program (INT, TERM, HUP, QUIT) and TSTP are
 * blocked while the tty is raw: one that comes then is delivered once the
 * mode is restored, so a kill during the probe never leaves the terminal raw.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "decide.h"
#include "gfx_internal.h"
#include "reply.h"
#include "tmux.h"

/* The queries, in the order sent (each documented where it is answered,
 * reply.h):
 *   kitty graphics query: APC G i=31,s=1,v=1,a=q,t=d,f=24 ; AAAA ST — a 1x1
 *     RGB image sent directly (t=d) for a query only (a=q): nothing is
 *     stored or drawn; kitty answers "OK" (kitty docs, "Querying support
 *     and available transmission mediums")
 *   XTSMGRAPHICS read colour registers CSI ? 1 ; 1 ; 0 S, read the maximum
 *     sixel geometry CSI ? 2 ; 1 ; 0 S (ctlseqs, "CSI ? Pi ; Pa ; Pv S")
 *   XTVERSION CSI > 0 q; cell size CSI 16 t; text area CSI 14 t
 *   DA1 CSI c */
static const char QUERIES[] = "\033_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\033\\"
                              "\033[?1;1;0S"
                              "\033[?2;1;0S"
                              "\033[>0q"
                              "\033[16t"
                              "\033[14t"
                              "\033[c";
/* Inside tmux or GNU screen, without the kitty query: both take an APC
 * string as the pane's title / hardstatus (tmux's input.c, screen's
 * manual), and neither draws kitty pictures itself. */
static const char QUERIES_NO_APC[] = "\033[?1;1;0S"
                                     "\033[?2;1;0S"
                                     "\033[>0q"
                                     "\033[16t"
                                     "\033[14t"
                                     "\033[c";
/* For the Linux console, which prints an APC's text instead of ignoring
 * it and has neither sixel nor XTSMGRAPHICS: the window size and DA1. */
static const char QUERIES_PLAIN[] = "\033[16t\033[14t\033[c";

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static bool write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Send the queries and read replies into r until DA1 or timeout_ms. */
static void query(int fd, const char *term, bool multiplexer, int timeout_ms, pt_gfx_replies *r) {
    struct termios saved, raw;
    if (tcgetattr(fd, &saved) != 0) return;
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGTSTP);
    pthread_sigmask(SIG_BLOCK, &block, &old_mask);
    raw = saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSANOW, &raw) != 0) {
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        return;
    }
    const bool linux_console = term && !strcmp(term, "linux");
    const char *q = linux_console ? QUERIES_PLAIN : multiplexer ? QUERIES_NO_APC : QUERIES;
    if (write_all(fd, q, strlen(q))) {
        const long deadline = now_ms() + timeout_ms;
        char in[512];
        for (;;) {
            long left = deadline - now_ms();
            if (left <= 0) break;
            struct pollfd p = {.fd = fd, .events = POLLIN};
            int ready = poll(&p, 1, (int)left);
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0) break;
            ssize_t got = read(fd, in, sizeof in);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got <= 0) break;
            if (pt_gfx_replies_feed(r, in, (size_t)got)) break;
        }
    }
    tcsetattr(fd, TCSAFLUSH, &saved);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL); /* a pending signal lands now */
}

void pt_gfx_probe(int fd, pt_gfx_proto want, int timeout_ms, pt_term_caps *caps) {
    pt_gfx_env env = {
        .term = getenv("TERM"),
        .term_program = getenv("TERM_PROGRAM"),
        .lc_terminal = getenv("LC_TERMINAL"),
        .colorterm = getenv("COLORTERM"),
        .kitty_window = getenv("KITTY_WINDOW_ID") != NULL,
        .wezterm = getenv("WEZTERM_PANE") != NULL,
        .tmux = getenv("TMUX") && *getenv("TMUX"),
    };
    struct winsize ws;
    if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0) {
        env.ws_cols = ws.ws_col;
        env.ws_rows = ws.ws_row;
        env.ws_xpixel = ws.ws_xpixel;
        env.ws_ypixel = ws.ws_ypixel;
    } else {
        /* not a terminal: the shell's idea of the size, if exported */
        const char *c = getenv("COLUMNS"), *l = getenv("LINES");
        env.ws_cols = c ? atoi(c) : 0;
        env.ws_rows = l ? atoi(l) : 0;
    }
    /* A background job that touches the tty's modes is stopped (SIGTTOU):
     * only the foreground process group asks. */
    env.tty = fd >= 0 && isatty(fd) && !(env.term && !strcmp(env.term, "dumb")) &&
              tcgetpgrp(fd) == getpgrp();
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    if (env.tty && want != PT_GFX_NONE) {
        if (env.tmux) env.passthrough = pt_gfx_tmux_passthrough(300); /* tmux answers in ms */
        const bool screen = env.term && !strncmp(env.term, "screen", 6);
        query(fd, env.term, env.tmux || screen, timeout_ms < 0 ? 0 : timeout_ms, &r);
    }
    pt_gfx_decide(&r, &env, want, caps);
}
