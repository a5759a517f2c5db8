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
    bool valid;
} pt_tmsg_cache;

typedef struct pt_transcript {
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
 * returns the total. */
int pt_layout_message(const pt_msg *m, int msg_index, int width, pt_tline *out, int cap);

#endif
