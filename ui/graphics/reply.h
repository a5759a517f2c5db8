/*
 * reply.h — the terminal's answers to the probe's queries, parsed from a
 * byte stream that may arrive in pieces, with anything else mixed in
 * (keys the user typed, replies to queries we never sent). Pure: no tty,
 * so it is unit-tested on canned replies and fuzzed.
 *
 * The replies understood (xterm ctlseqs, "Functions using CSI" and
 * "Device-Control functions"; kitty graphics protocol, "Querying support"):
 *   DA1           CSI ? Pp ; Pp ... c          attribute 4: sixel graphics
 *   XTSMGRAPHICS  CSI ? Pi ; Ps ; Pv... S      Pi 1: colour registers (Pv),
 *                                              Pi 2: max sixel geometry (Pv; Pv = w; h),
 *                                              Ps 0: success, else ignored
 *   CSI 16t       CSI 6 ; height ; width t     one cell in pixels
 *   CSI 14t       CSI 4 ; height ; width t     the text area in pixels
 *   XTVERSION     DCS > | text ST              the terminal's name and version
 *   kitty query   APC G keys ; message ST      message "OK": graphics supported
 * ST is ESC \ (BEL and the 8-bit ST 0x9c are taken too). Only 7-bit
 * introducers (ESC [, ESC P, ESC _, ESC ]) start a sequence.
 */
#ifndef PETREL_UI_GFX_REPLY_H
#define PETREL_UI_GFX_REPLY_H

#include <stdbool.h>
#include <stddef.h>

/* Longest sequence body kept; longer ones are skipped whole (no reply we
 * read is that long: XTVERSION's text is cut to fit version[]). */
#define PT_GFX_REPLY_SEQ_MAX 256

typedef struct pt_gfx_replies {
    /* what was found; 0 / false: not answered */
    bool da1;              /* the DA1 reply came: it is asked last, so every other reply is in */
    bool sixel;            /* DA1 has attribute 4 */
    int sixel_colors;      /* XTSMGRAPHICS Pi=1 */
    int sixel_max_w, sixel_max_h; /* XTSMGRAPHICS Pi=2 */
    bool kitty_answered, kitty_ok;
    int cell_w, cell_h;    /* CSI 16t */
    int text_w, text_h;    /* CSI 14t */
    char version[96];      /* XTVERSION text, printable ASCII only ('?' for others) */
    /* parser state: which kind of sequence is open and its body so far */
    int state;
    size_t len;
    bool too_long;         /* the open sequence outgrew seq[]: it is dropped at its end */
    char seq[PT_GFX_REPLY_SEQ_MAX];
} pt_gfx_replies;

void pt_gfx_replies_init(pt_gfx_replies *r);

/* Feed n more bytes. True once the DA1 reply has been seen (then the
 * probe stops reading). Bytes after it in the same call are still parsed. */
bool pt_gfx_replies_feed(pt_gfx_replies *r, const char *p, size_t n);

#endif
