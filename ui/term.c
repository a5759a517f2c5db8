/* term.c — terminal setup, styles and restoring (see term.h). */
#include "term.h"
#include "petrel.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Set while curses owns the terminal. Read by the signal handler. */
static volatile sig_atomic_t term_active;
static bool atexit_done;
static pt_color_mode color_mode;
static attr_t style_attr[S_COUNT];
static SCREEN *screen;
/* SIGWINCH self-pipe: the handler writes a byte, the loop polls the read end */
static int winch_pipe[2] = {-1, -1};
static volatile sig_atomic_t winch_seen;

/* Bracketed paste on/off (xterm DECSET 2004): pasted text arrives between
 * ESC[200~ and ESC[201~, so its newlines do not send the message. */
static const char paste_on[] = "\033[?2004h";
static const char paste_off[] = "\033[?2004l";

/* fg/bg for 256 colours, for 16 colours, attributes added in colour
 * modes, attributes used alone in monochrome. -1 = terminal default. */
typedef struct style_def {
    short fg256, bg256, fg16, bg16;
    attr_t attr, mono;
} style_def;

static const style_def styles[S_COUNT] = {
    [S_NORMAL] = {-1, -1, -1, -1, 0, 0},
    [S_TITLE] = {255, 24, 15, 4, A_BOLD, A_REVERSE | A_BOLD},
    [S_TITLE_DIM] = {251, 24, 7, 4, 0, A_REVERSE},
    [S_USER_LABEL] = {81, -1, 14, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [S_USER] = {153, -1, 6, -1, 0, 0},
    [S_BOT_LABEL] = {114, -1, 10, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [S_BOT] = {-1, -1, -1, -1, 0, 0},
    [S_INFO_LABEL] = {179, -1, 3, -1, A_BOLD, A_BOLD},
    [S_INFO] = {248, -1, 7, -1, 0, A_DIM},
    [S_ERROR] = {203, -1, 9, -1, A_BOLD, A_BOLD | A_REVERSE},
    [S_CODE] = {223, 236, 11, -1, 0, 0},
    [S_CODE_BAR] = {242, -1, 4, -1, 0, A_DIM},
    [S_DIM] = {244, -1, 7, -1, 0, A_DIM},
    [S_CAPTION] = {110, -1, 6, -1, 0, A_BOLD},
    [S_BRACKET] = {252, -1, 7, -1, A_BOLD, A_BOLD},
    [S_BAR1] = {78, -1, 2, -1, 0, 0},
    [S_BAR2] = {170, -1, 5, -1, 0, A_BOLD},
    [S_METER_TEXT] = {252, -1, 7, -1, 0, 0},
    [S_GRAPH] = {78, -1, 2, -1, 0, 0},
    [S_BIG] = {114, -1, 10, -1, A_BOLD, A_BOLD},
    [S_STATUS] = {246, -1, 7, -1, 0, A_DIM},
    [S_STATUS_ERR] = {203, -1, 9, -1, A_BOLD, A_BOLD},
    [S_KEY] = {255, 236, 15, 0, A_BOLD, A_BOLD},
    [S_KEY_LABEL] = {16, 110, 0, 6, 0, A_REVERSE},
    [S_BOX] = {110, -1, 6, -1, 0, 0},
    [S_SELECT] = {16, 153, 0, 6, 0, A_REVERSE},
    [S_PROMPT] = {81, -1, 14, -1, A_BOLD, A_BOLD},
};

static void restore_raw(void) {
    /* async-signal-safe part: leave the modes we turned on ourselves */
    ssize_t r = write(STDOUT_FILENO, paste_off, sizeof paste_off - 1);
    (void)r;
}

void pt_term_stop(void) {
    if (!term_active) return;
    term_active = 0;
    mousemask(0, NULL);
    restore_raw();
    endwin();
    fflush(stdout);
    /* free curses' screen (not from the signal handler: endwin is enough there) */
    if (screen) {
        delscreen(screen);
        screen = NULL;
    }
}

/* The SIGBUS line, formatted (path escaped) by pt_term_note_model on the main
 * thread; the handler only reads it. Its length is zeroed while it changes. */
static char sigbus_msg[4096 + 128];
static volatile sig_atomic_t sigbus_len;
/* Several threads read the mapping and may fault at once: the first one
 * restores the terminal and writes the line, the others wait for its _exit
 * (so SIGBUS is installed without SA_RESETHAND, see install_handlers). */
static atomic_flag sigbus_claimed = ATOMIC_FLAG_INIT;

void pt_term_note_model(const char *path) {
    char safe[4096];
    pt_escape_text(path, strlen(path), safe, sizeof safe);
    sigbus_len = 0;
    int n = snprintf(sigbus_msg, sizeof sigbus_msg,
                     "petrel: model file %s changed or was truncated while in use\n", safe);
    sigbus_len = n < 0 ? 0 : (size_t)n < sizeof sigbus_msg ? n : (int)sizeof sigbus_msg - 1;
}

static void on_fatal(int sig) {
    if (sig == SIGBUS && sigbus_len > 0 && atomic_flag_test_and_set(&sigbus_claimed))
        for (;;) pause();
    /* endwin() is not async-signal-safe, but it is what every curses app
     * does here: a wrecked terminal is worse than the small risk */
    if (term_active) {
        term_active = 0;
        restore_raw();
        endwin();
    }
    if (sig == SIGBUS && sigbus_len > 0) {
        /* the mapped model file shrank: a clean error, not a core dump */
        ssize_t w = write(STDERR_FILENO, sigbus_msg, (size_t)sigbus_len);
        (void)w;
        _exit(1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_winch(int sig) {
    (void)sig;
    int saved = errno;
    winch_seen = 1;
    if (winch_pipe[1] >= 0) {
        ssize_t r = write(winch_pipe[1], "w", 1);
        (void)r;
    }
    errno = saved;
}

int pt_term_winch_fd(void) { return winch_pipe[0]; }

bool pt_term_check_size(void) {
    if (winch_pipe[0] >= 0) {
        char buf[64];
        while (read(winch_pipe[0], buf, sizeof buf) > 0) {}
    }
    winch_seen = 0;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return false;
    if (ws.ws_row == LINES && ws.ws_col == COLS) return false;
    resizeterm(ws.ws_row, ws.ws_col);
    /* the terminal may have kept, cleared or reflowed the old contents:
     * repaint everything rather than trust a diff against the old screen */
    clearok(curscr, TRUE);
    return true;
}

static void install_handlers(void) {
    static const int sigs[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGSEGV, SIGBUS,
                               SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    sa.sa_flags = 0; /* stays installed: a second thread's SIGBUS must not kill (on_fatal) */
    sigaction(SIGBUS, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* replaces the SIGWINCH handler newterm installed (see term.h) */
    if (winch_pipe[0] < 0 && pipe2(winch_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        winch_pipe[0] = winch_pipe[1] = -1;
    struct sigaction sw;
    memset(&sw, 0, sizeof sw);
    sw.sa_handler = on_winch;
    sigemptyset(&sw.sa_mask);
    sw.sa_flags = SA_RESTART;
    sigaction(SIGWINCH, &sw, NULL);
}

static void setup_styles(void) {
    int pair = 1;
    for (int s = 0; s < S_COUNT; s++) {
        const style_def *d = &styles[s];
        if (color_mode == PT_COLOR_MONO) { style_attr[s] = d->mono; continue; }
        short fg = color_mode == PT_COLOR_256 ? d->fg256 : d->fg16;
        short bg = color_mode == PT_COLOR_256 ? d->bg256 : d->bg16;
        attr_t a = d->attr;
        if (color_mode == PT_COLOR_8) {
            /* bright colours become bold + the base colour */
            if (fg >= 8) { fg -= 8; a |= A_BOLD; }
            if (bg >= 8) bg -= 8;
        }
        if (fg < 0 && bg < 0) { style_attr[s] = a; continue; }
        if (pair < COLOR_PAIRS && init_pair((short)pair, fg, bg) == OK)
            style_attr[s] = a | COLOR_PAIR(pair++);
        else
            style_attr[s] = d->mono;
    }
}

static pt_color_mode pick_colors(const char *want) {
    const char *nc = getenv("NO_COLOR");
    if (want && strcmp(want, "mono") == 0) return PT_COLOR_MONO;
    if ((!want || strcmp(want, "auto") == 0) && nc && *nc) return PT_COLOR_MONO;
    if (!has_colors() || start_color() != OK) return PT_COLOR_MONO;
    use_default_colors();
    pt_color_mode best = COLORS >= 256 ? PT_COLOR_256 : COLORS >= 16 ? PT_COLOR_16
                       : COLORS >= 8 ? PT_COLOR_8 : PT_COLOR_MONO;
    pt_color_mode m = best;
    if (want && strcmp(want, "256") == 0) m = PT_COLOR_256;
    else if (want && strcmp(want, "16") == 0) m = PT_COLOR_16;
    else if (want && strcmp(want, "8") == 0) m = PT_COLOR_8;
    return m > best ? best : m;
}

bool pt_term_start(const char *color, char *err, size_t err_cap) {
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, err_cap, "the full-screen app needs a terminal (try: petrel chat --plain)");
        return false;
    }
    const char *term = getenv("TERM");
    if (!term || !*term || strcmp(term, "dumb") == 0) {
        snprintf(err, err_cap, "TERM is %s: use petrel chat --plain on this terminal",
                 term && *term ? "dumb" : "not set");
        return false;
    }
    /* newterm, unlike initscr, returns NULL instead of exiting */
    screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        snprintf(err, err_cap, "cannot use terminal type \"%s\" (terminfo missing?)", term);
        return false;
    }
    set_term(screen);
    term_active = 1;
    install_handlers();
    if (!atexit_done) { atexit(pt_term_stop); atexit_done = true; }
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    intrflush(stdscr, FALSE);
    meta(stdscr, TRUE);
    leaveok(stdscr, FALSE);
    scrollok(stdscr, FALSE);
    /* pictures live in cells ncurses thinks are blank (ui/picture.c): it
     * must never move what is on screen with insert/delete line or
     * character, which would carry our pixels along; it repaints instead */
    idlok(stdscr, FALSE);
    idcok(stdscr, FALSE);
    color_mode = pick_colors(color);
    setup_styles();
    define_key("\033[200~", PT_KEY_PASTE_BEGIN);
    define_key("\033[201~", PT_KEY_PASTE_END);
    ssize_t r = write(STDOUT_FILENO, paste_on, sizeof paste_on - 1);
    (void)r;
    return true;
}

void pt_term_mouse(bool on) {
    mousemask(on ? (BUTTON4_PRESSED | BUTTON5_PRESSED) : 0, NULL);
    mouseinterval(0);
}

void pt_term_suspend(void) {
    if (!term_active) return;
    /* ncurses' own SIGTSTP handler (installed by newterm) leaves curses
     * mode before stopping and restores it on SIGCONT; we only undo and
     * redo the modes we set by hand */
    restore_raw();
    raise(SIGTSTP);
    ssize_t r = write(STDOUT_FILENO, paste_on, sizeof paste_on - 1);
    (void)r;
    clearok(curscr, TRUE);
}

pt_color_mode pt_term_color_mode(void) { return color_mode; }
attr_t pt_attr(pt_style s) { return style_attr[s]; }
