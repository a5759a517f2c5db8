/* worker.c — the engine thread (see worker.h). */
#include "worker.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef enum {
    WCMD_LOAD, WCMD_PROBE, WCMD_MEM, WCMD_RESET, WCMD_TURN, WCMD_IMAGE, WCMD_LORA, WCMD_KV_SAVE, WCMD_KV_LOAD,
    WCMD_QUIT
} wcmd_kind;

typedef struct wcmd {
    pt_qnode node;
    wcmd_kind kind;
    char *path;
    pt_chat_message *msgs;   /* roles are static strings, contents owned */
    int n_msgs;
    pt_chat_settings set;
    int turn_id, load_id, img_id;
    pt_img_settings img;     /* IMAGE */
    pt_lora_cmd lora;        /* LORA */
    pt_ui_event *done;       /* LOAD, TURN: the event that reports the end,
                                made with the command so it cannot fail later */
} wcmd;

static void wcmd_free(pt_qnode *node) {
    wcmd *c = (wcmd *)node;
    pt_ui_event_free(c->done);
    free(c->path);
    for (int i = 0; i < c->n_msgs; i++) free((char *)c->msgs[i].content);
    free(c->msgs);
    free(c);
}

void pt_ui_event_free(pt_ui_event *ev) {
    if (!ev) return;
    free(ev->text);
    free(ev->path);
    free(ev->res.reply);
    free(ev->rgb);
    free(ev->loras);
    free(ev);
}

static pt_ui_event *ev_new(pt_ev_kind kind) {
    pt_ui_event *ev = calloc(1, sizeof *ev);
    if (ev) { ev->kind = kind; ev->t = pt_ui_now(); }
    return ev;
}

static void post(pt_worker *w, pt_ui_event *ev) {
    if (ev) pt_queue_push(w->events, &ev->node);
}

/* Copy text that may come from a model file (metadata, or an engine
 * message quoting it), escaped for the terminal with pt_escape_text. */
static void copy_str(char *dst, size_t cap, const char *src) {
    if (!src) src = "";
    pt_escape_text(src, strlen(src), dst, cap);
}

void pt_model_card_from_info(pt_model_card *c, const pt_model_info *info) {
    memset(c, 0, sizeof *c);
    copy_str(c->arch, sizeof c->arch, info->arch);
    copy_str(c->name, sizeof c->name, info->name);
    copy_str(c->ftype, sizeof c->ftype, info->ftype);
    copy_str(c->tokenizer, sizeof c->tokenizer, info->tokenizer);
    copy_str(c->tmpl, sizeof c->tmpl, info->chat_template_kind);
    c->n_params = info->n_params;
    c->file_bytes = info->file_bytes;
    c->n_ctx_train = info->n_ctx_train;
    c->n_layer = info->n_layer;
    c->n_embd = info->n_embd;
    c->n_vocab = info->n_vocab;
    copy_str(c->device, sizeof c->device, info->device ? info->device : "CPU");
    c->n_device_layers = info->n_device_layers;
    copy_str(c->device_note, sizeof c->device_note, info->device_note);
}

static void attach_mem(pt_worker *w, pt_ui_event *ev) {
    if (!ev || !w->sess.ctx) return;
    pt_context_memory(w->sess.ctx, &ev->mem);
    pt_context_kv_stats(w->sess.ctx, &ev->kv);
    ev->has_mem = true;
    w->last_mem_t = pt_ui_now();
}

/* Progress of a load, posted at most 10 times a second (and at the end). */
typedef struct load_ctx { pt_worker *w; int load_id; double last_t; } load_ctx;

static void on_load_progress(void *user, uint64_t done, uint64_t total) {
    load_ctx *lc = user;
    const double now = pt_ui_now();
    if (done < total && now - lc->last_t < 0.1) return;
    lc->last_t = now;
    pt_ui_event *ev = ev_new(PT_EV_LOAD_PROGRESS);
    if (!ev) return;   /* a progress report may be skipped */
    ev->load_id = lc->load_id;
    ev->load_done = done;
    ev->load_total = total;
    post(lc->w, ev);
}

/* Load parameters: the kernel variant from PETREL_CPU (the engine never
 * reads the environment), the worker's pool and the --device settings (a
 * metadata-only probe opens no device: the engine skips it). */
static pt_model_params model_params(pt_worker *w) {
    pt_model_params mp = pt_model_default_params();
    mp.cpu = getenv("PETREL_CPU");
    mp.threadpool = w->pool;
    mp.backend = w->backend;
    mp.device = w->device;
    mp.device_cache = w->device_cache;
    return mp;
}

/* ---- LoRA adapters ---- */

static bool seg_is(const char *s, size_t n, const char *want) {
    return strlen(want) == n && memcmp(s, want, n) == 0;
}

/* The adapter's name for the screen and for /lora -NAME: the path's last
 * part (a trailing '/' ignored), ".gguf" cut off; a PEFT folder's name
 * when the path names one of its two files. */
static void lora_name(const char *path, char *out, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    if (b > 1 && (seg_is(path + b, n - b, "adapter_model.safetensors") ||
                  seg_is(path + b, n - b, "adapter_config.json"))) {
        n = b - 1;   /* the folder: "a/b/adapter_config.json" -> "b" */
        while (n > 1 && path[n - 1] == '/') n--;
        b = n;
        while (b > 0 && path[b - 1] != '/') b--;
    }
    if (n - b > 5 && strncmp(path + n - 5, ".gguf", 5) == 0) n -= 5;
    char raw[256];
    size_t k = n - b < sizeof raw ? n - b : sizeof raw - 1;
    memcpy(raw, path + b, k);
    raw[k] = 0;
    copy_str(out, cap, raw);
}

/* Set the active adapters on the context, in load order. */
static pt_status lora_apply(pt_worker *w, pt_error *err) {
    if (!w->sess.ctx) return PT_OK;
    pt_lora *set[PT_LORA_MAX];
    float scales[PT_LORA_MAX];
    int n = 0;
    for (int i = 0; i < w->n_loras && n < PT_LORA_MAX; i++)
        if (w->loras[i].active && w->loras[i].lora) { set[n] = w->loras[i].lora; scales[n++] = w->loras[i].scale; }
    return pt_context_set_loras(w->sess.ctx, set, scales, n, err);
}

static int lora_n_active(const pt_worker *w) {
    int n = 0;
    for (int i = 0; i < w->n_loras; i++) n += w->loras[i].active;
    return n;
}

/* Switch every adapter off and free it (entries kept, for a reload). */
static void lora_release(pt_worker *w) {
    if (w->sess.ctx) pt_context_set_loras(w->sess.ctx, NULL, NULL, 0, NULL);
    for (int i = 0; i < w->n_loras; i++) {
        pt_lora_free(w->loras[i].lora);
        w->loras[i].lora = NULL;
    }
}

static void lora_remove(pt_worker *w, int i) {
    pt_lora_free(w->loras[i].lora);
    memmove(&w->loras[i], &w->loras[i + 1], sizeof w->loras[0] * (size_t)(w->n_loras - i - 1));
    w->n_loras--;
}

/* An event with a copy of the adapters' state and the memory numbers. */
static pt_ui_event *lora_event(pt_worker *w, pt_lora_op op) {
    pt_ui_event *ev = ev_new(PT_EV_LORA);
    if (!ev) return NULL;
    ev->lora_op = op;
    ev->loras = calloc(1, sizeof *ev->loras);
    if (!ev->loras) { pt_ui_event_free(ev); return NULL; }
    for (int i = 0; i < w->n_loras; i++) {
        pt_lora_entry *e = &ev->loras->e[ev->loras->n++];
        snprintf(e->name, sizeof e->name, "%s", w->loras[i].name);
        snprintf(e->path, sizeof e->path, "%s", w->loras[i].path);
        e->scale = w->loras[i].scale;
        e->active = w->loras[i].active;
        if (w->loras[i].lora) {
            pt_lora_info info;
            pt_lora_get_info(w->loras[i].lora, &info);
            e->rank = info.rank;
            e->bytes = info.bytes;
        }
    }
    attach_mem(w, ev);
    return ev;
}

/* An adapter's identity: its real path when it resolves, else as given;
 * a PEFT folder's when the path names one of its two files. */
static void lora_canon(const char *path, char *out, size_t cap) {
    char buf[PATH_MAX];
    snprintf(out, cap, "%s", realpath(path, buf) ? buf : path);
    char *slash = strrchr(out, '/');
    if (slash && slash != out && (seg_is(slash + 1, strlen(slash + 1), "adapter_model.safetensors") ||
                                  seg_is(slash + 1, strlen(slash + 1), "adapter_config.json")))
        *slash = 0;
}

/* The entry /lora PATH or /lora -NAME means: the same file, else (by_name)
 * the same name; -1 when none. */
static int lora_find(const pt_worker *w, const char *target, bool by_name) {
    char canon[PATH_MAX];
    lora_canon(target, canon, sizeof canon);
    for (int i = 0; i < w->n_loras; i++)
        if (strcmp(w->loras[i].path, canon) == 0) return i;
    if (by_name) {
        char name[64];
        copy_str(name, sizeof name, target);
        for (int i = 0; i < w->n_loras; i++)
            if (strcmp(w->loras[i].name, name) == 0) return i;
    }
    return -1;
}

static void do_lora(pt_worker *w, const pt_lora_cmd *c) {
    pt_ui_event *ev = lora_event(w, c->op);
    if (!ev) return;
    /* messages name the adapter, not its whole path: one status line */
    char shown[64];
    lora_name(c->target, shown, sizeof shown);
    pt_error err = {0};
    bool changed = false;
    if (c->op == PT_LORA_LIST) {
        /* nothing to change */
    } else if (!pt_session_is_open(&w->sess)) {
        ev->status = PT_ERR_ARG;
        snprintf(ev->msg, sizeof ev->msg, "lora: no model is open");
    } else if (c->op == PT_LORA_OFF_ALL) {
        changed = lora_n_active(w) > 0;
        for (int i = 0; i < w->n_loras; i++) w->loras[i].active = false;
    } else if (c->op == PT_LORA_OFF) {
        int i = lora_find(w, c->target, true);
        if (i < 0) {
            ev->status = PT_ERR_ARG;
            snprintf(ev->msg, sizeof ev->msg, "lora: no adapter %s is loaded (/lora lists them)", shown);
        } else {
            changed = w->loras[i].active;
            w->loras[i].active = false;
        }
    } else {
        /* a name means a loaded adapter only when no such file is there */
        int i = lora_find(w, c->target, access(c->target, F_OK) != 0);
        if (i < 0 || !w->loras[i].active) {
            if (lora_n_active(w) >= PT_LORA_MAX) {
                ev->status = PT_ERR_ARG;
                snprintf(ev->msg, sizeof ev->msg, "lora: at most %d adapters can be active (/lora -NAME one first)",
                         PT_LORA_MAX);
            }
        }
        if (ev->status == PT_OK && i < 0) {
            if (w->n_loras >= PT_UI_LORA_LOADED) {
                ev->status = PT_ERR_ARG;
                snprintf(ev->msg, sizeof ev->msg, "lora: at most %d adapters can be loaded", PT_UI_LORA_LOADED);
            } else {
                pt_lora *l = NULL;
                ev->status = pt_lora_load(w->sess.model, c->target, &l, &err);
                if (ev->status != PT_OK) {
                    char why[240];
                    copy_str(why, sizeof why, err.msg[0] ? err.msg : pt_status_name(ev->status));
                    snprintf(ev->msg, sizeof ev->msg, "lora %.60s: %s", shown, why);
                } else {
                    i = w->n_loras++;
                    struct pt_worker_lora *e = &w->loras[i];
                    e->lora = l;
                    lora_canon(c->target, e->path, sizeof e->path);
                    lora_name(c->target, e->name, sizeof e->name);
                    e->active = false;
                }
            }
        }
        if (ev->status == PT_OK) {
            changed = !w->loras[i].active || w->loras[i].scale != c->scale;
            w->loras[i].active = true;
            w->loras[i].scale = c->scale;
        }
    }
    if (changed) {
        ev->status = lora_apply(w, &err);
        if (ev->status != PT_OK) {
            copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
            for (int i = 0; i < w->n_loras; i++) w->loras[i].active = false;
            lora_apply(w, NULL);
        }
        /* the KV cache holds what the old set gave: the next turn
         * prefills the conversation again */
        pt_session_reset(&w->sess);
    }
    /* the event shows the state after the command */
    pt_ui_event *now = lora_event(w, c->op);
    if (now) {
        now->lora_quiet = c->quiet;
        now->status = ev->status;
        snprintf(now->msg, sizeof now->msg, "%s", ev->msg);
        pt_ui_event_free(ev);
        ev = now;
    }
    post(w, ev);
}

/* After a model was opened: load the adapters again for it; one that
 * does not fit is dropped, the first such reason in a one-line message.
 * Posts PT_EV_LORA when there were any. */
static void lora_reload(pt_worker *w, bool opened) {
    if (w->n_loras == 0) return;
    char names[160] = "", why[240] = "";
    int dropped = 0;
    for (int i = 0; i < w->n_loras;) {
        pt_error err = {0};
        pt_status st = opened ? pt_lora_load(w->sess.model, w->loras[i].path, &w->loras[i].lora, &err)
                              : PT_ERR_ARG;
        if (st == PT_OK) { i++; continue; }
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", dropped++ ? ", " : "", w->loras[i].name);
        if (!why[0]) copy_str(why, sizeof why, !opened ? "no model is open" : err.msg[0] ? err.msg : pt_status_name(st));
        lora_remove(w, i);
    }
    pt_error err = {0};
    pt_status st = lora_apply(w, &err);
    pt_ui_event *ev = lora_event(w, PT_LORA_LIST);
    if (!ev) return;
    ev->lora_reloaded = true;
    if (dropped) {
        ev->status = PT_ERR_ARG;
        snprintf(ev->msg, sizeof ev->msg, "lora dropped: %.100s (%.180s)", names, why); /* fits msg */
    } else if (st != PT_OK) {
        ev->status = st;
        copy_str(ev->msg, sizeof ev->msg, err.msg);
    }
    post(w, ev);
}

static void do_load(pt_worker *w, wcmd *c) {
    const char *path = c->path;
    pt_ui_event *ev = c->done;
    c->done = NULL;
    ev->load_id = c->load_id;
    ev->path = strdup(path);   /* informational: the UI matches load_id */
    /* close the old model first: two models at once may not fit in RAM
     * (its adapters before it; they are loaded again for the new one) */
    lora_release(w);
    pt_session_close(&w->sess);
    pt_error err = {0};
    /* the process's one pool, made on first use (if that fails, w->pool
     * stays NULL and the load and the context each make their own) */
    if (!w->pool) pt_threadpool_new(w->n_threads, &w->pool, NULL);
    pt_context_params cp = pt_context_default_params();
    if (w->n_ctx > 0) cp.n_ctx = w->n_ctx;
    if (w->n_threads > 0) cp.n_threads = w->n_threads;
    cp.threadpool = w->pool;
    cp.kv_type = (pt_kv_type)w->kv_type;
    cp.kv_ram_mb = w->kv_ram_mb;
    cp.kv_qk = (pt_kv_qk)w->kv_qk;
    cp.kv_spill_dir = w->kv_spill_dir;
    load_ctx lc = {w, c->load_id, 0};
    pt_model_params mp = model_params(w);
    mp.progress = on_load_progress;
    mp.progress_user = &lc;
    ev->status = pt_session_open(&w->sess, path, &mp, &cp, &err);
    if (ev->status == PT_OK) {
        pt_model_card_from_info(&ev->card, &w->sess.info);
        ev->card.n_ctx = pt_context_n_ctx(w->sess.ctx);
        attach_mem(w, ev);
    } else {
        copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
    }
    ev->t = pt_ui_now();
    const bool opened = ev->status == PT_OK; /* ev belongs to the UI once posted */
    post(w, ev);
    lora_reload(w, opened);
}

static void do_probe(pt_worker *w, const char *path) {
    pt_ui_event *ev = ev_new(PT_EV_PROBED);
    if (!ev) return;
    ev->path = strdup(path);
    if (pt_session_is_open(&w->sess) && strcmp(w->sess.path, path) == 0) {
        pt_model_card_from_info(&ev->card, &w->sess.info);
    } else {
        /* metadata only: the resident model stays the only one in RAM,
         * and a probe takes milliseconds, not a repacking */
        pt_model *m = NULL;
        pt_error err = {0};
        pt_model_params mp = model_params(w);
        mp.metadata_only = true;
        ev->status = pt_model_load(path, &mp, &m, &err);
        if (ev->status == PT_OK) {
            pt_model_info info;
            pt_model_get_info(m, &info);
            pt_model_card_from_info(&ev->card, &info);
            pt_model_free(m);
        } else {
            copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
        }
    }
    post(w, ev);
}

typedef struct turn_ctx { pt_worker *w; int turn_id; } turn_ctx;

static bool on_turn_text(const char *text, size_t len, const pt_turn_live *live, void *user) {
    turn_ctx *tc = user;
    pt_ui_event *ev = ev_new(text ? PT_EV_TEXT : PT_EV_TURN_START);
    if (!ev) return true;
    ev->turn_id = tc->turn_id;
    ev->live = *live;
    if (!text) { post(tc->w, ev); return true; }
    ev->text = malloc(len + 1);
    if (ev->text) { memcpy(ev->text, text, len); ev->text[len] = 0; ev->len = len; }
    /* mincore over the mapping costs a little: sample it 4 times a second */
    if (ev->t - tc->w->last_mem_t >= 0.25) attach_mem(tc->w, ev);
    post(tc->w, ev);
    return true;
}

/* Make turn_id the running turn and set the engine's flag from the
 * cancels already made. Returns true when the turn is already cancelled. */
static bool turn_begin(pt_worker *w, int turn_id) {
    pthread_mutex_lock(&w->cancel_mu);
    w->running_turn = turn_id;
    bool cancelled = turn_id <= w->cancel_upto;
    atomic_store(&w->turn_cancel, cancelled);
    pthread_mutex_unlock(&w->cancel_mu);
    return cancelled;
}

static void turn_end(pt_worker *w) {
    pthread_mutex_lock(&w->cancel_mu);
    w->running_turn = 0;
    atomic_store(&w->turn_cancel, false);
    pthread_mutex_unlock(&w->cancel_mu);
}

static void do_turn(pt_worker *w, wcmd *c) {
    turn_ctx tc = {w, c->turn_id};
    pt_ui_event *ev = c->done;
    c->done = NULL;
    ev->turn_id = c->turn_id;
    if (turn_begin(w, c->turn_id)) {
        /* cancelled before it started: it ends stopped, with no text */
        ev->res.gen.stop = PT_STOP_CANCELLED;
    } else {
        pt_error err = {0};
        ev->status = pt_session_turn(&w->sess, c->msgs, c->n_msgs, &c->set, on_turn_text, &tc,
                                     &w->turn_cancel, &ev->res, &err);
        if (ev->status != PT_OK)
            copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
    }
    turn_end(w);
    ev->text = ev->res.reply;
    ev->res.reply = NULL;
    ev->len = ev->text ? strlen(ev->text) : 0;
    ev->t = pt_ui_now();
    attach_mem(w, ev);
    post(w, ev);
}

/* ---- image jobs ---- */

/* Make img_id the running image job; true when it is already cancelled.
 * (turn_begin's twin: the same mutex, a separate id space.) */
static bool image_begin(pt_worker *w, int img_id) {
    pthread_mutex_lock(&w->cancel_mu);
    w->img_running = img_id;
    bool cancelled = img_id <= w->img_cancel_upto;
    atomic_store(&w->img_cancel, cancelled);
    pthread_mutex_unlock(&w->cancel_mu);
    return cancelled;
}

static void image_end(pt_worker *w) {
    pthread_mutex_lock(&w->cancel_mu);
    w->img_running = 0;
    atomic_store(&w->img_cancel, false);
    pthread_mutex_unlock(&w->cancel_mu);
}

/* A malloc'd tight copy (stride 3 * width) of img; NULL when out of memory. */
static uint8_t *copy_rgb(const pt_image *img) {
    if (!img || !img->pixels || img->width <= 0 || img->height <= 0) return NULL;
    const size_t row = (size_t)img->width * 3;
    uint8_t *p = malloc(row * (size_t)img->height);
    if (!p) return NULL;
    for (int y = 0; y < img->height; y++) memcpy(p + row * (size_t)y, img->pixels + img->stride * (size_t)y, row);
    return p;
}

typedef struct image_ctx { pt_worker *w; int img_id; } image_ctx;

static void on_image_progress(void *user, const pt_image_progress *p) {
    image_ctx *ic = user;
    pt_ui_event *ev = ev_new(PT_EV_IMG_PROGRESS);
    if (!ev) return;   /* a progress report may be skipped */
    ev->img_id = ic->img_id;
    ev->img_step = p->step;
    ev->img_total = p->total;
    ev->img_elapsed = p->elapsed;
    if ((ev->rgb = copy_rgb(p->preview))) { ev->w = p->preview->width; ev->h = p->preview->height; }
    post(ic->w, ev);
}

/* Open the image model at path unless it is the one open. */
static bool image_model_open(pt_worker *w, const char *path, int img_id, pt_ui_event *done) {
    if (w->img && strcmp(w->img_path, path) == 0) return true;
    pt_image_model_free(w->img);
    w->img = NULL;
    w->img_path[0] = 0;
    if (!w->pool) pt_threadpool_new(w->n_threads, &w->pool, NULL);
    pt_image_model_params mp = pt_image_model_default_params();
    mp.cpu = getenv("PETREL_CPU");
    mp.threadpool = w->pool;
    mp.n_threads = w->n_threads;
    mp.resident = true;   /* an interactive studio: no re-preparation per picture */
    mp.backend = w->backend; /* --device: the UNet and VAE on OpenCL too (a CPU load without one) */
    mp.device = w->device;
    mp.device_cache = w->device_cache;
    pt_error err = {0};
    pt_ui_event *ev = ev_new(PT_EV_IMG_LOADED);
    pt_status st = pt_image_model_load(path, &mp, &w->img, &err);
    if (st != PT_OK) {
        done->status = st;
        copy_str(done->msg, sizeof done->msg, err.msg[0] ? err.msg : pt_status_name(st));
        if (ev) {
            ev->img_id = img_id;
            ev->status = st;
            snprintf(ev->msg, sizeof ev->msg, "%s", done->msg);
            post(w, ev);
        }
        w->img = NULL;
        return false;
    }
    snprintf(w->img_path, sizeof w->img_path, "%s", path);
    if (ev) {
        pt_image_model_info info;
        pt_image_model_get_info(w->img, &info);
        pt_img_settings *d = &ev->img_defaults;
        pt_img_settings_default(d);
        d->steps = info.default_steps;
        d->cfg = info.default_cfg;
        d->sampler = info.default_sampler;
        d->width = info.default_width;
        d->height = info.default_height;
        ev->img_id = img_id;
        post(w, ev);
    }
    return true;
}

static void do_image(pt_worker *w, wcmd *c) {
    pt_ui_event *ev = c->done;
    c->done = NULL;
    ev->img_id = c->img_id;
    ev->img_set = c->img;
    const double t0 = pt_ui_now();
    if (image_begin(w, c->img_id)) {
        ev->status = PT_ERR_CANCELLED;   /* cancelled before it started */
        snprintf(ev->msg, sizeof ev->msg, "cancelled");
    } else if (image_model_open(w, c->path, c->img_id, ev)) {
        pt_image_model_info info;
        pt_image_model_get_info(w->img, &info);
        pt_img_settings *s = &ev->img_set;
        if (s->steps <= 0) s->steps = info.default_steps;
        if (s->cfg < 0) s->cfg = info.default_cfg;
        if (s->sampler >= PT_IMAGE_SAMPLER_COUNT) s->sampler = info.default_sampler;
        if (s->width <= 0 || s->height <= 0) { s->width = info.default_width; s->height = info.default_height; }
        image_ctx ic = {w, c->img_id};
        pt_image_params ip = pt_image_default_params();
        ip.prompt = s->prompt;
        ip.negative = s->negative;
        ip.steps = s->steps;
        ip.cfg = s->cfg;
        ip.seed = s->seed;
        ip.width = s->width;
        ip.height = s->height;
        ip.sampler = s->sampler;
        ip.progress = on_image_progress;
        ip.progress_user = &ic;
        ip.cancel = &w->img_cancel;
        pt_image img = {0};
        pt_error err = {0};
        ev->status = pt_image_generate(w->img, &ip, &img, &err);
        if (ev->status == PT_OK) {
            ev->rgb = copy_rgb(&img);
            ev->w = img.width;
            ev->h = img.height;
            if (!ev->rgb) { ev->status = PT_ERR_NOMEM; snprintf(ev->msg, sizeof ev->msg, "out of memory"); }
        } else {
            copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
        }
        pt_image_free(&img);
    }
    image_end(w);
    ev->img_elapsed = pt_ui_now() - t0;
    ev->t = pt_ui_now();
    post(w, ev);
}

/* /save and /load of the KV cache beside a chat (c->path): posts PT_EV_KV
 * with the status, the message and the tokens held after it. */
static void do_kv(pt_worker *w, wcmd *c) {
    pt_ui_event *ev = ev_new(PT_EV_KV);
    if (!ev) return;
    ev->kv_saved = c->kind == WCMD_KV_SAVE;
    ev->path = c->path ? strdup(c->path) : NULL;
    pt_error err = {0};
    ev->status = ev->kv_saved ? pt_session_save_kv(&w->sess, c->path, &err)
                              : pt_session_load_kv(&w->sess, c->path, &err);
    if (ev->status != PT_OK) copy_str(ev->msg, sizeof ev->msg, err.msg[0] ? err.msg : pt_status_name(ev->status));
    ev->kv_tokens = w->sess.ctx ? pt_context_n_past(w->sess.ctx) : 0;
    attach_mem(w, ev);
    post(w, ev);
}

static void *worker_main(void *arg) {
    pt_worker *w = arg;
    for (;;) {
        wcmd *c = (wcmd *)pt_queue_wait(&w->cmds);
        if (!c) break;
        wcmd_kind k = c->kind;
        switch (k) {
        case WCMD_LOAD: do_load(w, c); break;
        case WCMD_PROBE: do_probe(w, c->path); break;
        case WCMD_MEM: {
            pt_ui_event *ev = ev_new(PT_EV_MEM);
            attach_mem(w, ev);
            if (ev && ev->has_mem) post(w, ev); else pt_ui_event_free(ev);
            break;
        }
        case WCMD_RESET: pt_session_reset(&w->sess); break;
        case WCMD_TURN: do_turn(w, c); break;
        case WCMD_IMAGE: do_image(w, c); break;
        case WCMD_LORA: do_lora(w, &c->lora); break;
        case WCMD_KV_SAVE: case WCMD_KV_LOAD: do_kv(w, c); break;
        case WCMD_QUIT: break;
        }
        wcmd_free(&c->node);
        if (k == WCMD_QUIT) break;
    }
    lora_release(w);
    w->n_loras = 0;
    pt_session_close(&w->sess);
    pt_image_model_free(w->img);
    w->img = NULL;
    pt_threadpool_free(w->pool);
    w->pool = NULL;
    atomic_store(&w->finished, true);
    return NULL;
}

bool pt_worker_start(pt_worker *w, pt_queue *events, int n_ctx, int n_threads) {
    memset(w, 0, sizeof *w);
    w->events = events;
    w->n_ctx = n_ctx;
    w->n_threads = n_threads;
    atomic_init(&w->turn_cancel, false);
    atomic_init(&w->img_cancel, false);
    atomic_init(&w->finished, false);
    if (pthread_mutex_init(&w->cancel_mu, NULL) != 0) return false;
    if (!pt_queue_init(&w->cmds, false)) { pthread_mutex_destroy(&w->cancel_mu); return false; }
    /* the thread inherits this mask: all asynchronous signals blocked
     * (faults like SIGSEGV are synchronous and still delivered to it) */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV); sigdelset(&all, SIGBUS); sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL); sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pt_queue_destroy(&w->cmds, NULL);
        pthread_mutex_destroy(&w->cancel_mu);
        return false;
    }
    w->started = true;
    return true;
}

static bool send_cmd(pt_worker *w, wcmd *c) {
    if (!c) return false;
    pt_queue_push(&w->cmds, &c->node);
    return true;
}

/* A command; done_kind >= 0 also makes the event that reports its end.
 * NULL when out of memory. */
static wcmd *cmd_new(wcmd_kind k, const char *path, int done_kind) {
    wcmd *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->kind = k;
    bool ok = !path || (c->path = strdup(path));
    if (ok && done_kind >= 0) ok = (c->done = ev_new((pt_ev_kind)done_kind)) != NULL;
    if (!ok) { wcmd_free(&c->node); return NULL; }
    return c;
}

bool pt_worker_stop(pt_worker *w, double wait_s) {
    if (!w->started) return true;
    pt_worker_cancel(w, INT_MAX);   /* also every turn still to come */
    pt_worker_cancel_image(w, INT_MAX);
    /* drop queued work, then ask the thread to leave */
    pt_qnode *n;
    while ((n = pt_queue_pop(&w->cmds))) wcmd_free(n);
    send_cmd(w, cmd_new(WCMD_QUIT, NULL, -1));
    pt_queue_close(&w->cmds);
    double end = pt_ui_now() + wait_s;
    while (!atomic_load(&w->finished) && pt_ui_now() < end) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    w->started = false;
    if (!atomic_load(&w->finished)) {
        pthread_detach(w->thread);
        return false;
    }
    pthread_join(w->thread, NULL);
    pt_queue_destroy(&w->cmds, wcmd_free);
    pthread_mutex_destroy(&w->cancel_mu);
    return true;
}

bool pt_worker_load(pt_worker *w, int load_id, const char *path) {
    wcmd *c = cmd_new(WCMD_LOAD, path, PT_EV_LOADED);
    if (c) c->load_id = load_id;
    return send_cmd(w, c);
}

void pt_worker_probe(pt_worker *w, const char *path) { send_cmd(w, cmd_new(WCMD_PROBE, path, -1)); }
void pt_worker_mem(pt_worker *w) { send_cmd(w, cmd_new(WCMD_MEM, NULL, -1)); }
void pt_worker_reset(pt_worker *w) { send_cmd(w, cmd_new(WCMD_RESET, NULL, -1)); }
void pt_worker_save_kv(pt_worker *w, const char *path) { send_cmd(w, cmd_new(WCMD_KV_SAVE, path, -1)); }
void pt_worker_load_kv(pt_worker *w, const char *path) { send_cmd(w, cmd_new(WCMD_KV_LOAD, path, -1)); }

void pt_worker_cancel(pt_worker *w, int upto_turn_id) {
    pthread_mutex_lock(&w->cancel_mu);
    if (upto_turn_id > w->cancel_upto) w->cancel_upto = upto_turn_id;
    if (w->running_turn > 0 && w->running_turn <= w->cancel_upto) atomic_store(&w->turn_cancel, true);
    pthread_mutex_unlock(&w->cancel_mu);
}

bool pt_worker_turn(pt_worker *w, int turn_id, const pt_chat_message *msgs, int n,
                    const pt_chat_settings *set) {
    wcmd *c = cmd_new(WCMD_TURN, NULL, PT_EV_TURN_DONE);
    if (!c) return false;
    c->turn_id = turn_id;
    c->set = *set;
    c->msgs = calloc((size_t)(n > 0 ? n : 1), sizeof *c->msgs);
    if (!c->msgs) { wcmd_free(&c->node); return false; }
    for (int i = 0; i < n; i++) {
        /* roles from pt_convo_engine_msgs are string literals */
        c->msgs[i].role = msgs[i].role;
        c->msgs[i].content = strdup(msgs[i].content);
        c->n_msgs = i + 1;
        if (!c->msgs[i].content) { wcmd_free(&c->node); return false; }
    }
    return send_cmd(w, c);
}

bool pt_worker_image(pt_worker *w, int img_id, const char *model_path, const pt_img_settings *s) {
    wcmd *c = cmd_new(WCMD_IMAGE, model_path, PT_EV_IMG_DONE);
    if (!c) return false;
    c->img_id = img_id;
    c->img = *s;
    return send_cmd(w, c);
}

void pt_worker_lora(pt_worker *w, const pt_lora_cmd *cmd) {
    wcmd *c = cmd_new(WCMD_LORA, NULL, -1);
    if (c) c->lora = *cmd;
    send_cmd(w, c);
}

void pt_worker_cancel_image(pt_worker *w, int upto) {
    pthread_mutex_lock(&w->cancel_mu);
    if (upto > w->img_cancel_upto) w->img_cancel_upto = upto;
    if (w->img_running > 0 && w->img_running <= w->img_cancel_upto) atomic_store(&w->img_cancel, true);
    pthread_mutex_unlock(&w->cancel_mu);
}
