/*
 * studio.h — the image studio screen and /imagine in chat: the form, the
 * running job, the gallery's view. Keys and worker events here
 * (studio.c), painting in studio_draw.c. UI thread only.
 *
 * Job state machine (one image job at a time, chat or studio):
 *   idle --Enter / r (re-roll) / /imagine--> running (img_id = ++last id)
 *   running --IMG_PROGRESS (same id)--> running (step, preview)
 *   running --Esc / ^C--> stopping (cancel sent, within one step)
 *   running/stopping --IMG_DONE (same id)--> idle (picture in the gallery,
 *     or a one-line reason; a cancelled job leaves nothing behind)
 * Events of older ids are dropped (an Esc that arrives late cannot stop a
 * later job: pt_worker_cancel_image cancels ids up to the current one).
 */
#ifndef PETREL_UI_STUDIO_H
#define PETREL_UI_STUDIO_H

#include <stdbool.h>
#include <stdint.h>

#include "editor.h"
#include "gallery.h"
#include "imgset.h"

typedef enum pt_sfield {
    SF_PROMPT, SF_NEGATIVE, SF_STEPS, SF_CFG, SF_SEED, SF_SIZE, SF_SAMPLER, SF_GALLERY, SF_COUNT
} pt_sfield;

typedef struct pt_studio {
    pt_editor prompt, negative;   /* the two text fields (their buffers are the texts) */
    pt_img_settings form;         /* the numbers; prompt texts are copied in at send */
    int field;                    /* pt_sfield with the focus */
    /* the model */
    bool have_defaults;           /* the model's recommended settings are known */
    pt_img_settings defaults;
    /* the job */
    bool running, stop_requested, for_chat;
    int img_id;                   /* the latest job sent */
    int step, total;
    double elapsed, t0;
    uint8_t *preview;             /* the latest step's preview (owned) */
    int pw, ph;
    uint64_t preview_gen;
    pt_img_settings job;          /* what the running job asked for */
    /* the view */
    int sel;                      /* gallery index shown; -1: the running preview / none */
    bool large;                   /* view large: the picture takes the whole body */
    char line[320];               /* the studio's status line */
    bool line_err;
} pt_studio;

#endif
