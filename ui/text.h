/*
 * text.h — UTF-8 decoding and terminal cell widths.
 *
 * Widths come from the C library's wcwidth() in the current locale, the
 * same table ncursesw uses to place characters, so what we measure is what
 * ncurses draws (CJK and most emoji are 2 cells, combining marks 0).
 * setlocale(LC_CTYPE, ...) must have selected a UTF-8 locale; otherwise
 * every non-ASCII character is drawn as '?' (1 cell) and measured so.
 */
#ifndef PETREL_UI_TEXT_H
#define PETREL_UI_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PT_UI_REPLACEMENT 0xFFFDu

/* Decode one code point from s[0..len) (len >= 1). Returns the bytes used
 * (1..4); an invalid or truncated sequence uses 1 byte and gives U+FFFD. */
int pt_ui_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Encode cp (<= 0x10FFFF, not a surrogate) into out (4 bytes of room).
 * Returns the byte count; invalid code points encode U+FFFD. */
int pt_ui_utf8_encode(uint32_t cp, char *out);

/* Byte length of the code point that ends at s[end] (exclusive), i.e. the
 * step backwards from end; 0 when end == 0. */
size_t pt_ui_utf8_prev(const char *s, size_t end);

/* Whether the current locale encodes text as UTF-8 (decided once by
 * pt_text_init and cached; tests may force it). */
void pt_text_init(void);
bool pt_text_utf8(void);
void pt_text_force_utf8(bool on);

/* How a code point is drawn: the code point actually put on screen and
 * its width in cells. Control characters and characters the locale cannot
 * show become '?' (1 cell); zero-width marks give width 0 and attach to
 * the previous cell. '\t' is not handled here (wrap.h expands it). */
uint32_t pt_cp_display(uint32_t cp, int *width);
int pt_cp_width(uint32_t cp);

/* Cells taken by s[0..len) on one line (tabs count as PT_TAB_CELLS). */
int pt_str_cells(const char *s, size_t len);

/* The longest prefix of s[0..len) that fits in max_cells cells (zero-width
 * marks after the last fitting character are included). Returns its byte
 * length and, when cells is non-NULL, its width. */
size_t pt_str_fit(const char *s, size_t len, int max_cells, int *cells);

#define PT_TAB_CELLS 4

/* Text from a file or the file system (model metadata and file names,
 * saved-chat names, paths) escaped into buf with pt_escape_text, so a
 * control character in it shows as \e, \x07, ... and never reaches the
 * terminal. Returns buf. 1024 bytes of room show 255 stray bytes. */
const char *pt_shown(const char *s, char *buf, size_t cap);

#endif
