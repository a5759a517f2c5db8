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
#include "gallery.h"
#include "graphics/graphics.h"
#include "meter.h"
#include "models.h"
#include "models_screen.h"
#include "queue.h"
#include "picture.h"
#include "slash.h"
#include "studio.h"
#include "term.h"
#include "transcript.h"
#include "ui.h"
#include "worker.h"

typedef enum pt_overlay { OV_NONE, OV_HELP, OV_LORA } pt_overlay;
typedef enum pt_screen { SCREEN_CHAT, SCREEN_STUDIO, SCREEN_MODELS } pt_screen;

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
    char device_note[320];      /* the last OpenCL fallback note put in the chat (escaped) */
    pt_lora_list loras;         /* the worker's adapters, from its last LORA event */
    int lora_sel;               /* the picker's (OV_LORA) selected row */

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
    pt_screen screen;
    pt_overlay last_ov;         /* overlay of the last frame (pictures re-sent when it goes) */
    pt_screen last_screen;      /* screen of the last frame */
    int last_W, last_H;         /* size of the last frame */
    int help_scroll;
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

    /* pictures */
    pt_term_caps caps;          /* what the probe found (pt_ui_run, before curses) */
    pt_pic_layer pics;          /* picture slots of the frame (picture.h) */
    pt_gallery gal;
    pt_studio studio;
    pt_mscreen ms;              /* the Models screen (models_screen.h) */
    uint64_t pic_gen;           /* last pixel generation handed out */
    char img_model[4096];       /* the image model's path ("" when none was found) */
    char img_model_why[512];    /* why there is none */

    bool quit;
    bool dirty;
    double frame_t;
    unsigned long frames;
} pt_app;

/* draw.c */
void pt_draw(pt_app *a);

/* demo.c */
const char *pt_demo_prompt(int i);   /* cycles */

/* draw.c: painting helpers shared with studio_draw.c */
int pt_put_text(int y, int x, const char *s, size_t len, attr_t attr, int max);
int pt_put_str(int y, int x, const char *s, attr_t attr, int max);
void pt_fill(int y, int x, int n, attr_t attr);
void pt_rule(int y, int x, int n, attr_t attr);
const char *pt_spinner(void);
void pt_draw_title(pt_app *a, int y, int W);
/* A box with a border and a title on it, its inside cleared. */
void pt_draw_box(int y, int x, int h, int w, const char *title);
/* Lay out and draw an editor in rows x width cells at (y0, x0); the
 * cursor's cell goes to *cy, *cx. prompt: the first row's marker. */
void pt_draw_editor(pt_editor *e, int y0, int x0, int rows, int width, const char *hint, bool focus,
                    int *cy, int *cx);

/* lora_picker.c: the adapter picker overlay (OV_LORA, F7) */
void pt_lora_picker_key(pt_app *a, int k, bool is_char);
void pt_lora_picker_draw(pt_app *a, int W, int H);

/* studio.c */
void pt_studio_init(pt_app *a);
void pt_studio_free(pt_app *a);
void pt_studio_key(pt_app *a, int k, bool is_char);
void pt_studio_on_event(pt_app *a, pt_ui_event *ev);   /* IMG_* events; may take ev->rgb */
/* /imagine PROMPT: a job with the studio's settings whose picture goes
 * into the transcript. */
void pt_studio_imagine(pt_app *a, const char *prompt);
void pt_studio_cancel(pt_app *a);
/* "step 3/10  4.2 it/s  ETA 0:02" of the running job (or loading). */
void pt_studio_progress_text(const pt_app *a, char *out, size_t cap);
/* A new pixel generation (picture.h). */
uint64_t pt_app_next_gen(pt_app *a);

/* studio_draw.c */
void pt_studio_draw(pt_app *a, int W, int H, int *cy, int *cx, bool *show_cursor);

/* models_screen.c */
void pt_mscreen_init(pt_app *a);            /* starts the job thread */
bool pt_mscreen_free(pt_app *a);            /* stops it; false: it would not stop */
void pt_mscreen_open(pt_app *a);            /* show the screen (rescans) */
void pt_mscreen_close(pt_app *a);           /* back to the screen it came from */
void pt_mscreen_rescan(pt_app *a);
void pt_mscreen_key(pt_app *a, int k, bool is_char);
void pt_mscreen_on_event(pt_app *a, pt_ui_event *ev);   /* JOB_* events */
void pt_mscreen_tick(pt_app *a, double now);
const pt_mrow *pt_mscreen_selected(const pt_app *a);
const pt_catalog_entry *pt_mscreen_entry(const pt_app *a, const pt_mrow *r);
/* Free memory for a model, plus the open model's size when the model
 * would replace it (the open one is closed first); 0: not known. */
uint64_t pt_mscreen_avail_for(const pt_app *a, bool replaces_open);

/* models_draw.c */
void pt_mscreen_draw(pt_app *a, int W, int H, int *cy, int *cx, bool *show_cursor);
/* "↓ 45%" of the running file job for the title bar; "" when none. */
void pt_mscreen_job_badge(const pt_app *a, char *buf, size_t cap);

/* tui.c */
void pt_app_status(pt_app *a, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Open the model at path for the chat (the one open is closed first). */
void pt_app_load_model(pt_app *a, const char *path);
/* A scale as 1.0, 0.5, 0.25, -1.0. */
void pt_app_fmt_scale(float v, char *buf, size_t cap);
/* The active adapters as "a×1.0+b×0.5" ("" when none; x without UTF-8). */
void pt_app_lora_summary(const pt_app *a, char *buf, size_t cap);

#endif
