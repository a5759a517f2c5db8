/*
 * worker.h — the engine thread of the full-screen UI.
 *
 * The UI thread sends commands (load a model, run a turn, reset, probe a
 * model file's metadata, report memory, quit) through a command queue; the
 * worker runs them one at a time and answers with events on the UI's
 * event queue, whose self-pipe wakes the UI's poll(). The only state the
 * two threads share is the cancel state below.
 *
 * Cancelling: every turn has an id (the UI numbers them 1, 2, 3, ... in
 * the order it sends them). pt_worker_cancel(w, N) cancels every turn with
 * an id up to N: the one in the engine stops at its next token, and one
 * that has not started yet (the worker is still loading, probing or ending
 * the previous turn) ends at once when it starts, without running. A
 * cancel never reaches a turn with a larger id, so an Esc that arrives
 * late cannot stop the next reply.
 *
 * Signals: the worker blocks every asynchronous signal, so SIGWINCH and
 * the termination signals always reach the UI thread.
 */
#ifndef PETREL_UI_WORKER_H
#define PETREL_UI_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "imgset.h"
#include "queue.h"
#include "session.h"
#include "slash.h"

typedef enum pt_ev_kind {
    PT_EV_LOADED,       /* model opened: info, mem, path; or status != OK */
    PT_EV_PROBED,       /* metadata of a model file (picker); status may fail */
    PT_EV_TURN_START,   /* prompt ready, prefill starts: live.n_prompt / n_cached */
    PT_EV_TEXT,         /* a chunk of the reply, with live numbers */
    PT_EV_TURN_DONE,    /* the turn ended (result, or status != OK) */
    PT_EV_MEM,          /* memory numbers */
    PT_EV_LOAD_PROGRESS, /* path: load_done of load_total weight bytes ready */
    PT_EV_IMG_LOADED,   /* image model opened (img_id of the job that opened it):
                           img_defaults; or status != OK */
    PT_EV_IMG_PROGRESS, /* img_id: img_step of img_total done, img_elapsed, and a
                           copy of the engine's preview (rgb, w x h) */
    PT_EV_IMG_DONE,     /* img_id: the picture (rgb, w x h) and img_set, the
                           settings it used; or status != OK (PT_ERR_CANCELLED) */
    PT_EV_JOB_PROGRESS, /* job_id: a download's or quantization's progress (job) */
    PT_EV_JOB_DONE,     /* job_id: the file job ended (job: its last numbers);
                           or status != OK with msg (PT_ERR_CANCELLED) */
    PT_EV_KV,           /* a KV save (kv_saved) or restore of path ended: status, msg, kv_tokens */
    PT_EV_LORA,         /* a /lora command ran (lora_op), or a model switch
                           reloaded the adapters: loras, the state now; status
                           != OK with msg (one line) when it failed */
} pt_ev_kind;

/* LoRA adapters the worker keeps loaded for the open model, at most this
 * many (PT_LORA_MAX of them active at once). */
#define PT_UI_LORA_LOADED 16

/* The adapters as the worker holds them, copied for the UI. */
typedef struct pt_lora_entry {
    char name[64];        /* the path's last part, ".gguf" cut off; escaped */
    char path[4096];      /* its real path, for /lora commands (not escaped:
                             never drawn) */
    float scale;          /* the scale it is (or was last) active with */
    bool active;
    int rank;
    uint64_t bytes;       /* heap bytes of its factors */
} pt_lora_entry;

typedef struct pt_lora_list {
    int n;
    pt_lora_entry e[PT_UI_LORA_LOADED];
} pt_lora_list;

/* What a file job (jobs.h: download, quantize, convert) reports. Bytes
 * are the engine's: a download counts the bytes in its .part (resumed
 * ones included) of the file's, a quantization the input weight bytes
 * handled of all of them. */
typedef struct pt_job_info {
    uint64_t done, total;          /* total 0: not known yet */
    uint64_t resumed_from;         /* download: bytes that were there when it began */
    double bytes_per_s;            /* download: recent speed, 0 when not known */
    double eta_s;                  /* download: seconds left, < 0 when not known */
    int attempt;                   /* download: 1, 2, ... (retries) */
    int tensor, n_tensors;         /* quantize: the tensor being written, of all */
    pt_download_check check;       /* download, JOB_DONE: how the file was verified */
    uint64_t in_bytes, out_bytes;  /* JOB_DONE: the source's and the result's file sizes */
    double elapsed;                /* seconds since the job began */
} pt_job_info;

/* Model metadata copied out of the engine (the model may be gone), its
 * strings escaped with pt_escape_text: ready for the screen. Event msg
 * texts are escaped the same way. */
typedef struct pt_model_card {
    char arch[24], name[96], ftype[16], tokenizer[16], tmpl[16];
    int64_t n_params;
    uint64_t file_bytes;
    int n_ctx_train, n_layer, n_embd, n_vocab;
    int n_ctx;             /* context window of the open context (LOADED) */
    /* where the layers run (LOADED): "CPU" or the OpenCL device's name, how
     * many layers it runs, and why an OpenCL load runs on the CPU ("" when
     * it does not, or none was asked for) */
    char device[128];
    int n_device_layers;
    char device_note[320];
} pt_model_card;

typedef struct pt_ui_event {
    pt_qnode node;
    pt_ev_kind kind;
    int turn_id;
    int load_id;                   /* LOADED, LOAD_PROGRESS: the pt_worker_load id */
    pt_status status;
    char msg[320];
    char *text; size_t len;        /* TEXT: the chunk; DONE: the whole reply */
    char *path;                    /* LOADED, PROBED, KV */
    pt_turn_live live;             /* TURN_START, TEXT */
    pt_turn_result res;            /* DONE (res.reply is moved to text) */
    pt_model_card card;            /* LOADED, PROBED */
    bool has_mem;
    pt_memory_stats mem;
    pt_kv_stats kv;          /* with has_mem: the KV cache's RAM, disk and budget */
    uint64_t load_done, load_total; /* LOAD_PROGRESS */
    double t;                      /* pt_ui_now() when posted */
    /* image jobs */
    int img_id;
    int img_step, img_total;       /* IMG_PROGRESS */
    double img_elapsed;            /* IMG_PROGRESS, IMG_DONE: seconds since the job began */
    uint8_t *rgb; int w, h;        /* IMG_PROGRESS: preview; IMG_DONE: the picture
                                      (malloc'd, stride 3 * w; the UI may take it) */
    pt_img_settings img_set;       /* IMG_DONE: what was asked, the model's
                                      defaults filled in */
    pt_img_settings img_defaults;  /* IMG_LOADED: the model's recommended settings */
    /* file jobs (jobs.h) */
    int job_id;
    pt_job_info job;               /* JOB_PROGRESS, JOB_DONE */
    /* LoRA */
    pt_lora_op lora_op;            /* LORA: the command's */
    bool lora_quiet;               /* LORA: the command's quiet */
    pt_lora_list *loras;           /* LORA: malloc'd, the state after it */
    bool lora_reloaded;            /* LORA: sent after a model switch (msg: the
                                      adapters that did not fit, dropped) */
    bool kv_saved;                 /* KV: a save (else a restore) */
    int kv_tokens;                 /* KV: tokens the context holds after it */
} pt_ui_event;

void pt_ui_event_free(pt_ui_event *ev);

typedef struct pt_worker {
    pthread_t thread;
    bool started;
    pt_queue cmds;
    pt_queue *events;
    /* cancel_mu guards cancel_upto and running_turn, and every store to
     * turn_cancel: so a cancel meant for turn N can never land on the
     * flag after the worker has moved on to turn N + 1 */
    pthread_mutex_t cancel_mu;
    int cancel_upto;          /* turns with id <= this are cancelled */
    int running_turn;         /* id of the turn in the engine; 0 when none */
    atomic_bool turn_cancel;  /* the engine's flag: running_turn <= cancel_upto */
    atomic_bool finished;  /* set by the thread as its last act */
    int n_ctx, n_threads;
    int kv_type, kv_ram_mb, kv_qk; /* set after pt_worker_start, before the first load: every context's KV cache */
    const char *kv_spill_dir;
    /* set like kv_type: where every LLM load runs (pt_model_params' backend,
     * device, device_cache; ui.h's --device) */
    pt_backend backend;
    int device;
    const char *device_cache;
    pt_threadpool *pool;   /* worker thread only: the process's one pool, made by the
                              first load (so its threads inherit the worker's signal mask) */
    /* image jobs: the same discipline as turns, numbered apart (their
     * own ids, their own cancel); guarded by cancel_mu as well */
    int img_cancel_upto;
    int img_running;
    atomic_bool img_cancel;
    pt_session sess;       /* worker thread only */
    pt_image_model *img;   /* worker thread only: the image model, kept open
                              (resident) beside the LLM once loaded */
    char img_path[4096];   /* worker thread only: its file */
    /* worker thread only: the LoRA adapters loaded for sess.model, in the
     * order they were first loaded; the active ones are set on sess.ctx in
     * that order. Freed (after being switched off) before the model is
     * closed; a model switch reloads them for the new model. */
    struct pt_worker_lora {
        pt_lora *lora;     /* NULL between a model's close and the reload */
        char path[4096];
        char name[64];     /* escaped, for the screen */
        float scale;
        bool active;
    } loras[PT_UI_LORA_LOADED];
    int n_loras;
    double last_mem_t;     /* worker thread only */
} pt_worker;

bool pt_worker_start(pt_worker *w, pt_queue *events, int n_ctx, int n_threads);
/* Cancel what runs, drop what is queued and wait up to wait_s seconds for
 * the thread to end. Returns false when it did not (it is stuck in a step
 * that cannot be cancelled, like loading a model or a long prefill): the
 * thread is then detached and w, its queues and the event queue must be
 * left alone; the process is about to exit anyway. */
bool pt_worker_stop(pt_worker *w, double wait_s);

/* Open a model (closing the current one first). The LOADED event carries
 * load_id; its event is made here, so the end of a load is always
 * reported. Returns false (nothing sent) when out of memory. */
bool pt_worker_load(pt_worker *w, int load_id, const char *path);
void pt_worker_probe(pt_worker *w, const char *path);
void pt_worker_mem(pt_worker *w);
void pt_worker_reset(pt_worker *w);
/* Save the KV cache to path, or restore it from path (ui/session.h:
 * pt_session_save_kv / load_kv); posts PT_EV_KV. */
void pt_worker_save_kv(pt_worker *w, const char *path);
void pt_worker_load_kv(pt_worker *w, const char *path);
/* Run a turn (turn_id > 0, larger than every earlier one); msgs are
 * copied. Its TURN_DONE event is made here, so the end of a turn is
 * always reported. Returns false (nothing sent) when out of memory. */
bool pt_worker_turn(pt_worker *w, int turn_id, const pt_chat_message *msgs, int n,
                    const pt_chat_settings *set);
/* Cancel every turn with an id <= upto_turn_id (see the top of this file). */
void pt_worker_cancel(pt_worker *w, int upto_turn_id);

/* Generate a picture with the image model at model_path (opened on first
 * use, kept open; the LLM stays loaded) and settings s. img_id > 0 is
 * larger than every earlier image job's. Posts IMG_LOADED (when the model
 * was opened), IMG_PROGRESS after every step and IMG_DONE at the end,
 * which is made here, so the end of a job is always reported. Returns
 * false (nothing sent) when out of memory. */
bool pt_worker_image(pt_worker *w, int img_id, const char *model_path, const pt_img_settings *s);
/* Cancel every image job with an id <= upto: the one running stops within
 * one sampler step (IMG_DONE with PT_ERR_CANCELLED), a queued one ends at
 * once when it starts; a later job is never reached. */
void pt_worker_cancel_image(pt_worker *w, int upto_img_id);

/* A /lora command (slash.h), from the next turn on: loads an adapter for
 * the open model once (kept loaded until the model changes) and changes
 * the active set; the turns after it prefill the whole conversation again
 * (the KV cache holds what the old set gave). Posts PT_EV_LORA. */
void pt_worker_lora(pt_worker *w, const pt_lora_cmd *cmd);

void pt_model_card_from_info(pt_model_card *c, const pt_model_info *info);

#endif
