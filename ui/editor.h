/*
 * editor.h — the multi-line input line: a UTF-8 buffer with a cursor
 * (a byte offset that always sits on a code point boundary), editing
 * operations and a history of sent inputs. No terminal code.
 */
#ifndef PETREL_UI_EDITOR_H
#define PETREL_UI_EDITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pt_editor {
    char *buf;          /* NUL-terminated */
    size_t len, cap;
    size_t cur;         /* cursor byte offset, 0..len */
    char **hist;        /* oldest first */
    int n_hist, cap_hist;
    int hist_pos;       /* n_hist = editing a new line, else browsing */
    char *draft;        /* the new line saved while browsing history */
} pt_editor;

void pt_editor_init(pt_editor *e);
void pt_editor_free(pt_editor *e);

void pt_editor_set(pt_editor *e, const char *text);   /* cursor to the end */
void pt_editor_clear(pt_editor *e);
void pt_editor_insert(pt_editor *e, const char *text, size_t len);
void pt_editor_insert_cp(pt_editor *e, uint32_t cp);
void pt_editor_backspace(pt_editor *e);
void pt_editor_delete(pt_editor *e);
void pt_editor_left(pt_editor *e);
void pt_editor_right(pt_editor *e);
void pt_editor_word_left(pt_editor *e);
void pt_editor_word_right(pt_editor *e);
void pt_editor_home(pt_editor *e);          /* start of the current line */
void pt_editor_end(pt_editor *e);           /* end of the current line */
void pt_editor_kill_to_start(pt_editor *e); /* ^U: delete to line start */
void pt_editor_kill_to_end(pt_editor *e);   /* ^K: delete to line end */
void pt_editor_kill_word(pt_editor *e);     /* ^W: delete the word before */
/* Move up/down a line of the text laid out at width (char wrap); false
 * when already on the first/last line (the caller then browses history). */
bool pt_editor_up(pt_editor *e, int width);
bool pt_editor_down(pt_editor *e, int width);

/* History: remember a sent line (not an empty one nor a repeat of the
 * last); prev/next replace the buffer and return false at either end. */
void pt_editor_remember(pt_editor *e, const char *text);
bool pt_editor_hist_prev(pt_editor *e);
bool pt_editor_hist_next(pt_editor *e);

#endif
