/*
 * models_screen.h — the Models screen (F2, ^O, /models, /model): the
 * local models and the catalog's in one list with two sections (name,
 * architecture, quantization, size, installed or not, a fits-in-RAM
 * hint), and what can be done to them:
 *   Enter  a local model (or an installed catalog entry): switch the chat
 *          to it (an image model: the studio's model); a catalog entry
 *          not here yet: download it (a .part left by an earlier try is
 *          resumed)
 *   d      download / resume the catalog entry
 *   x      cancel the running download or quantization
 *   q      quantize the model: a form (type, output name, requantize)
 *   c      convert a Hugging Face folder or checkpoint: a form (the hook
 *          for pt_convert_*, see jobs.h)
 *   D, Del delete the local model (or a partial download), after a y/n
 *   r      rescan the models folder;  Esc, F2, ^O  back
 * Keys and events here (models_screen.c), painting in models_draw.c.
 * UI thread only; downloads and quantizations run on the job thread
 * (jobs.h).
 *
 * Job state machine (one file job at a time):
 *   idle --Enter / d / form--> running (job_id = ++last id)
 *   running --JOB_PROGRESS (same id)--> running (numbers, bar)
 *   running --x--> stopping (cancel sent)
 *   running/stopping --JOB_DONE (same id)--> idle (the list rescanned;
 *     a one-line result or error in the status line)
 * Events of other ids are dropped.
 */
#ifndef PETREL_UI_MODELS_SCREEN_H
#define PETREL_UI_MODELS_SCREEN_H

#include <stdbool.h>
#include <stdint.h>

#include "editor.h"
#include "jobs.h"
#include "models_rows.h"
#include "worker.h"

typedef enum pt_mform {
    PT_MFORM_NONE = 0,
    PT_MFORM_QUANTIZE,   /* fields: type, output name, requantize */
    PT_MFORM_CONVERT,    /* fields: source, output name */
    PT_MFORM_DELETE,     /* y/n */
} pt_mform;

typedef enum pt_mfield { MF_TYPE, MF_NAME, MF_REQUANT, MF_SRC } pt_mfield;

typedef struct pt_mscreen {
    pt_mrows rows;
    int sel, top;              /* selected row, first row shown */
    int back;                  /* the screen Esc returns to (pt_screen) */
    uint64_t mem_avail;        /* MemAvailable, refreshed every 2 s while shown */
    double mem_t;
    /* the form (one at a time, drawn over the list) */
    pt_mform form;
    pt_mfield field;           /* the field with the focus */
    int type_idx;              /* into pt_quant_types */
    bool requant;
    bool name_auto;            /* the name is the default one: follows the type */
    pt_editor name, src;       /* output name; convert: the source path */
    char form_path[4096];      /* quantize: the source; delete: the file */
    char form_what[256];       /* what the form is about, escaped for the screen */
    bool form_part;            /* delete: a partial download (.part and sidecar) */
    char form_err[200];
    /* the file job */
    pt_jobs jobs;
    bool jobs_ok;              /* the job thread runs */
    int job_id;                /* the latest job sent */
    bool running, stop_requested;
    pt_job_kind job_kind;
    int job_catalog;           /* PULL: the catalog index, else -1 */
    char job_name[256];        /* the file made, escaped for the screen */
    char job_dest[4096];
    pt_job_info job;           /* its latest numbers */
    double job_t0;
} pt_mscreen;

#endif
