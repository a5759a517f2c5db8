/*
 * app.h — state of the full-screen app, shared by tui.c (event loop,
 * keys, commands) and draw.c (painting a frame). Internal to ui/.
 *
 * Threads: everything here belongs to the UI thread. The engine runs on
 * the worker (worker.h); results arrive as events on `events`.
 *
 * Turn state machine:
 *   idle --send--> waiting (generating, prefilling) --first TEXT--> streaming
 *   waiting/streaming --DONE--> idle;  Esc/^C sets the cancel flag and the
 *   worker answers with DONE (stop = cancelled) after the current token.
 * Model state: loading (a LOAD sent, no LOADED yet) / loaded / none.
 */
#ifndef PETREL_UI_APP_H
#define PETREL_UI_APP_H

#include <stdbool.h>

#include "convo.h"
#include "editor.h"
#include "meter.h"
#include "models.h"
#include "queue.h"
#include "slash.h"
#include "transcript.h"
#include "ui.h"
#include "worker.h"

typedef enum pt_overlay { OV_NONE, OV_HELP, OV_PICKER } pt_overlay;

typedef struct pt_app {
    pt_ui_options opts;
    char data_dir[4096];

    pt_queue events;
    pt_worker worker;

    pt_convo convo;
    pt_transcript tr;
    pt_editor ed;
    pt_chat_settings set;
    pt_model_list models;

    /* model */
    bool loaded, loading;
    char model_path[4096];      /* the model open (or being opened) */
    int load_id;                /* id of the latest load sent: only its events count */
    pt_model_card card;
    double load_t0;
    uint64_t load_done, load_total; /* weight bytes ready, of total (0: not known yet) */

    /* turn */
    bool generating;
    int turn_id;
    int reply_msg;              /* convo index of the streaming reply */
    double turn_t0;
    bool stop_requested;
    pt_turn_live live;
    int spark_chunks;           /* live.n_chunks at the last sparkline sample */
    double spark_t;
    bool mem_pending;
    double mem_t, proc_t;

    pt_ui_stats st;

    /* view */
    int scroll;                 /* transcript lines above the bottom; 0 follows the tail */
    int view_rows;              /* transcript rows in the last frame */
    int input_width;            /* editor wrap width in the last frame */
    pt_overlay ov;
    int help_scroll;
    int pick_sel, pick_top;
    bool demo;
    int demo_idx;
    double demo_next;
    bool mouse;
    bool paste;                 /* inside a bracketed paste (keypad decoding off) */
    int paste_match;            /* bytes of the paste's end marker seen so far */
    double paste_t;            /* when the last pasted character came */
    char status[320];
    bool status_err;
    double status_t;

    bool quit;
    bool dirty;
    double frame_t;
    unsigned long frames;
} pt_app;

/* draw.c */
void pt_draw(pt_app *a);

/* demo.c */
const char *pt_demo_prompt(int i);   /* cycles */

/* tui.c */
void pt_app_status(pt_app *a, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
