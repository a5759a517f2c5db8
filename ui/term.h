/*
 * term.h — the terminal: ncurses setup, colour styles for 256-colour,
 * 16/8-colour and monochrome terminals (NO_COLOR honoured), and restoring
 * the terminal on every way out: normal return, exit() (atexit), and
 * fatal or termination signals (the handler calls endwin and re-raises).
 */
#ifndef PETREL_UI_TERM_H
#define PETREL_UI_TERM_H

#include <stdbool.h>

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>

typedef enum pt_style {
    S_NORMAL, S_TITLE, S_TITLE_DIM, S_USER_LABEL, S_USER, S_BOT_LABEL, S_BOT,
    S_INFO_LABEL, S_INFO, S_ERROR, S_CODE, S_CODE_BAR, S_DIM, S_CAPTION,
    S_BRACKET, S_BAR1, S_BAR2, S_METER_TEXT, S_GRAPH, S_BIG, S_STATUS,
    S_STATUS_ERR, S_KEY, S_KEY_LABEL, S_BOX, S_SELECT, S_PROMPT,
    S_COUNT
} pt_style;

typedef enum pt_color_mode { PT_COLOR_MONO = 0, PT_COLOR_8, PT_COLOR_16, PT_COLOR_256 } pt_color_mode;

/* Keys petrel defines on top of ncurses' (bracketed paste markers). */
#define PT_KEY_PASTE_BEGIN (KEY_MAX + 1)
#define PT_KEY_PASTE_END (KEY_MAX + 2)

/* Start curses on the controlling terminal. color: "auto" or NULL,
 * "256", "16", "8", "mono". Returns false (with a message in err) when the
 * terminal cannot be used. */
bool pt_term_start(const char *color, char *err, size_t err_cap);
/* The model file about to be mapped: a SIGBUS (the file truncated or
 * replaced while in use) then restores the terminal, prints "petrel: model
 * file PATH changed or was truncated while in use" and exits with status 1.
 * Main thread only. */
void pt_term_note_model(const char *path);
/* Leave curses and put the terminal back; safe to call more than once. */
void pt_term_stop(void);
/* ^Z: restore the terminal, stop, and take it over again on resume. */
void pt_term_suspend(void);
void pt_term_mouse(bool on);

/* Window size changes. petrel catches SIGWINCH itself (ncurses' own
 * handler only acts inside input and refresh calls, which made it notice
 * a resize seconds late while nothing was typed): the handler marks the
 * change and writes to a pipe, so poll() on pt_term_winch_fd() wakes at
 * once. pt_term_check_size() then compares the terminal's real size
 * (TIOCGWINSZ) with curses' and resizes curses; it returns true when the
 * size changed (the caller redraws everything). Calling it now and then
 * also catches a resize whose signal never came. */
int pt_term_winch_fd(void);
bool pt_term_check_size(void);

pt_color_mode pt_term_color_mode(void);
attr_t pt_attr(pt_style s);   /* attributes and colour pair of a style */

#endif
