/*
 * wrap.h — breaking UTF-8 text into screen lines of at most `width` cells.
 *
 * A line is a byte range [start, end) of the source text plus its width in
 * cells; the newline that ends a paragraph and the spaces at a soft break
 * are not part of any line. Every line's cells <= width, except that a
 * single character wider than width (a wide character when width is 1)
 * gets a line of its own.
 */
#ifndef PETREL_UI_WRAP_H
#define PETREL_UI_WRAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_wrap_line {
    uint32_t start, end;  /* byte offsets into the source */
    int cells;
} pt_wrap_line;

/* Word wrap: break after spaces, and before or after wide (CJK) characters,
 * which may break anywhere; a word longer than the width is cut where it
 * overflows. '\n' ends a line; indentation after '\n' is kept, spaces after
 * a soft break are dropped. Writes at most cap lines and returns the total
 * count (call again with more room when it exceeds cap). Empty text gives
 * one empty line. */
int pt_wrap_words(const char *s, size_t len, int width, pt_wrap_line *out, int cap);

/* Character wrap for the input editor: lines break exactly where the next
 * character would overflow (no space dropped), so every byte of the text
 * belongs to a line and a cursor maps to a (row, column). */
int pt_wrap_chars(const char *s, size_t len, int width, pt_wrap_line *out, int cap);

/* Row and column (cells) of the byte offset pos within lines from
 * pt_wrap_chars. A cursor just past a full line sits at column `cells`
 * of that line unless the next line starts there. */
void pt_wrap_locate(const pt_wrap_line *lines, int n, const char *s, size_t pos,
                    int *row, int *col);

#endif
