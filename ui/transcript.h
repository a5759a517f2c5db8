/*
 * transcript.h — the conversation laid out as screen lines for a width.
 *
 * Each message becomes: a label line (who speaks), its text word-wrapped
 * two cells in, and a blank line. Fenced code blocks (``` lines) are kept
 * as written: character-wrapped, drawn with a bar in the code style, the
 * fence lines themselves shown as rules. Lines point into the message
 * text (byte ranges), so nothing is copied; a message is laid out again
 * only when its text or the width changed (the streaming reply is the
 * only one that changes while text arrives).
 */
#ifndef PETREL_UI_TRANSCRIPT_H
#define PETREL_UI_TRANSCRIPT_H

#include <stdint.h>

#include "convo.h"

typedef enum pt_tline_kind {
    PT_TL_LABEL,   /* "You", "petrel", ... */
    PT_TL_TEXT,    /* prose */
    PT_TL_CODE,    /* inside a fenced block */
    PT_TL_FENCE,   /* a ``` line (start..end is the language tag, if any) */
    PT_TL_BLANK,   /* spacing after a message */
    PT_TL_PICTURE, /* one row of a picture block: start = the row (0..end-1), end = its rows */
} pt_tline_kind;

#define PT_TEXT_INDENT 2   /* cells before prose */
#define PT_CODE_INDENT 4   /* cells before code (2 + bar + space) */

typedef struct pt_tline {
    int msg;               /* message index */
    uint32_t start, end;   /* bytes of the message text */
    int cells;
    uint8_t kind;          /* pt_tline_kind */
} pt_tline;

typedef struct pt_tmsg_cache {
    pt_tline *lines;
    int n, cap;
    unsigned rev;
    size_t len;
    int width;
    int role;
    int pic_max_rows;
    bool valid;
} pt_tmsg_cache;

typedef struct pt_transcript {
    /* rows a picture block may take (set by the app before layout; 1: a
     * one-line placeholder, for terminals without pictures); a change
     * lays every picture message out again */
    int pic_max_rows;
    pt_tmsg_cache *msgs;
    int n_msgs, cap_msgs;
    int total;             /* lines over all messages */
} pt_transcript;

void pt_transcript_init(pt_transcript *t);
void pt_transcript_free(pt_transcript *t);
/* Bring the layout up to date with c at width cells. */
void pt_transcript_layout(pt_transcript *t, const pt_convo *c, int width);
/* Line i (0 = first line of the first message), i < t->total. */
const pt_tline *pt_transcript_line(const pt_transcript *t, int i);

/* Lay out one message (exposed for the tests): writes at most cap lines,
 * returns the total. A picture message is: its label, the caption
 * word-wrapped, pt_picture_rows() picture rows, a blank line. */
int pt_layout_message(const pt_msg *m, int msg_index, int width, int pic_max_rows, pt_tline *out,
                      int cap);

/* Cell rows of a w x h picture in a transcript `width` cells wide (cells
 * twice as tall as wide; the picture indented like prose and one column
 * short of the edge): as many as its aspect asks for at the full width,
 * 1..max_rows. */
int pt_picture_rows(int width, int w, int h, int max_rows);
/* Cell columns of that block (the width its rows ask for, at most the
 * room there is). */
int pt_picture_cols(int width, int w, int h, int rows);

#endif
