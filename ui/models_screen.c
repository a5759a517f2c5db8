/* models_screen.c — the Models screen's keys, forms and job events (see
 * models_screen.h; painting in models_draw.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "text.h"

#define CTRL(c) ((c) & 0x1f)

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* buf = dir/name (+ tail); false when it does not fit. */
static bool path_join(char *buf, size_t cap, const char *dir, const char *name, const char *tail) {
    int n = snprintf(buf, cap, "%s/%s%s", dir, name, tail);
    return n > 0 && (size_t)n < cap;
}

static void models_dir(const pt_app *a, char *buf, size_t cap) {
    snprintf(buf, cap, "%.4000s/models", a->data_dir);
}

static void say(pt_app *a, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(pt_app *a, bool err, const char *fmt, ...) {
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pt_app_status(a, err, "%s", buf);
}

void pt_mscreen_init(pt_app *a) {
    pt_mscreen *m = &a->ms;
    memset(m, 0, sizeof *m);
    pt_editor_init(&m->name);
    pt_editor_init(&m->src);
    m->job_catalog = -1;
    m->jobs_ok = pt_jobs_start(&m->jobs, &a->events);
}

bool pt_mscreen_free(pt_app *a) {
    pt_mscreen *m = &a->ms;
    bool stopped = !m->jobs_ok || pt_jobs_stop(&m->jobs, 3.0);
    pt_editor_free(&m->name);
    pt_editor_free(&m->src);
    pt_mrows_free(&m->rows);
    return stopped;
}

/* ---- the list ---- */

const pt_catalog_entry *pt_mscreen_entry(const pt_app *a, const pt_mrow *r) {
    if (!a->opts.catalog || r->catalog < 0) return NULL;
    return pt_catalog_get(a->opts.catalog, r->catalog);
}

const pt_mrow *pt_mscreen_selected(const pt_app *a) {
    const pt_mscreen *m = &a->ms;
    if (m->sel < 0 || m->sel >= m->rows.n || m->rows.items[m->sel].kind == PT_MROW_HEADER) return NULL;
    return &m->rows.items[m->sel];
}

/* The file a row stands for (a local file, an installed catalog entry's),
 * or false. */
static bool row_file(const pt_app *a, const pt_mrow *r, char *buf, size_t cap) {
    if (r->kind == PT_MROW_LOCAL) {
        snprintf(buf, cap, "%s", a->models.items[r->index].path);
        return true;
    }
    const pt_catalog_entry *e = pt_mscreen_entry(a, r);
    if (r->kind != PT_MROW_CATALOG || r->state != PT_CAT_INSTALLED || !e) return false;
    char dir[4100];
    models_dir(a, dir, sizeof dir);
    return path_join(buf, cap, dir, e->local_name, "");
}

/* Rescan the folder and rebuild the rows, keeping the selection on the
 * same file or catalog entry. */
void pt_mscreen_rescan(pt_app *a) {
    pt_mscreen *m = &a->ms;
    const pt_mrow *old = pt_mscreen_selected(a);
    pt_mrow_kind kind = old ? old->kind : PT_MROW_HEADER;
    int cat = old ? old->catalog : -1;
    char path[4096] = "";
    if (old && old->kind == PT_MROW_LOCAL) snprintf(path, sizeof path, "%s", a->models.items[old->index].path);
    pt_models_scan(&a->models, a->data_dir, a->loaded || a->loading ? a->model_path : NULL);
    for (int i = 0; i < a->models.n; i++) {
        pt_model_entry *e = &a->models.items[i];
        if (!e->probe_sent) { pt_worker_probe(&a->worker, e->path); e->probe_sent = true; }
    }
    char dir[4100];
    models_dir(a, dir, sizeof dir);
    if (!pt_mrows_build(&m->rows, &a->models, a->opts.catalog, dir))
        say(a, true, "out of memory: the list is not complete");
    int sel = -1;
    for (int i = 0; i < m->rows.n && sel < 0; i++) {
        const pt_mrow *r = &m->rows.items[i];
        if (r->kind != kind) continue;
        if (kind == PT_MROW_LOCAL && !strcmp(a->models.items[r->index].path, path)) sel = i;
        if (kind == PT_MROW_CATALOG && r->catalog == cat) sel = i;
    }
    if (sel < 0 && !old) {
        /* first time: the open model */
        for (int i = 0; i < m->rows.n && sel < 0; i++) {
            const pt_mrow *r = &m->rows.items[i];
            if (r->kind == PT_MROW_LOCAL && !strcmp(a->models.items[r->index].path, a->model_path)) sel = i;
        }
    }
    if (sel < 0) sel = m->sel;
    m->sel = pt_mrows_select(&m->rows, sel, 0);
    if (m->sel < 0) m->sel = pt_mrows_select(&m->rows, sel, -1);
    a->dirty = true;
}

void pt_mscreen_open(pt_app *a) {
    pt_mscreen *m = &a->ms;
    if (a->screen != SCREEN_MODELS) m->back = a->screen;
    a->screen = SCREEN_MODELS;
    a->ov = OV_NONE;
    m->mem_avail = pt_mem_available();
    m->mem_t = pt_ui_now();
    pt_mscreen_rescan(a);
}

void pt_mscreen_close(pt_app *a) {
    pt_mscreen *m = &a->ms;
    m->form = PT_MFORM_NONE;
    a->screen = m->back == SCREEN_STUDIO ? SCREEN_STUDIO : SCREEN_CHAT;
    a->dirty = true;
}

void pt_mscreen_tick(pt_app *a, double now) {
    pt_mscreen *m = &a->ms;
    if (a->screen != SCREEN_MODELS || now - m->mem_t < 2.0) return;
    uint64_t v = pt_mem_available();
    if (v != m->mem_avail) a->dirty = true;
    m->mem_avail = v;
    m->mem_t = now;
}

uint64_t pt_mscreen_avail_for(const pt_app *a, bool replaces_open) {
    uint64_t avail = a->ms.mem_avail;
    if (avail && replaces_open && a->loaded) avail += a->card.file_bytes;   /* the open model is closed first */
    return avail;
}

static void move_sel(pt_app *a, int by) {
    pt_mscreen *m = &a->ms;
    int dir = by < 0 ? -1 : 1;
    int i = m->sel;
    for (int s = 0; s < (by < 0 ? -by : by); s++) {
        int j = pt_mrows_select(&m->rows, i, dir);
        if (j < 0) break;
        i = j;
    }
    if (i >= 0) m->sel = i;
}

/* ---- jobs ---- */

static bool job_busy(pt_app *a) {
    if (!a->ms.running) return false;
    say(a, true, "%s is running: wait for it, or x cancels it",
        a->ms.job_kind == PT_JOB_PULL ? "a download" : a->ms.job_kind == PT_JOB_QUANTIZE ? "a quantization" : "a conversion");
    return true;
}

static bool send_job(pt_app *a, pt_job_spec *s, const char *name) {
    pt_mscreen *m = &a->ms;
    if (!m->jobs_ok) { say(a, true, "the job thread could not be started"); return false; }
    s->id = m->job_id + 1;
    if (!pt_jobs_send(&m->jobs, s)) { say(a, true, "out of memory: the job was not started"); return false; }
    m->job_id = s->id;
    m->running = true;
    m->stop_requested = false;
    m->job_kind = s->kind;
    m->job_t0 = pt_ui_now();
    memset(&m->job, 0, sizeof m->job);
    m->job.eta_s = -1;
    pt_shown(name, m->job_name, sizeof m->job_name);
    snprintf(m->job_dest, sizeof m->job_dest, "%s", s->dest);
    a->dirty = true;
    return true;
}

static void start_pull(pt_app *a, const pt_mrow *r) {
    const pt_catalog_entry *e = pt_mscreen_entry(a, r);
    if (!e || job_busy(a)) return;
    char id[200];
    pt_shown(e->id, id, sizeof id);
    if (r->state == PT_CAT_BUNDLED) { say(a, false, "%s ships with petrel: nothing to download", id); return; }
    if (r->state == PT_CAT_INSTALLED) { say(a, false, "%s is already here (D deletes it)", id); return; }
    if (!a->opts.pull) { say(a, true, "this petrel cannot download models"); return; }
    pt_job_spec s = {.kind = PT_JOB_PULL, .entry = e, .pull = a->opts.pull, .max_retries = -1};
    models_dir(a, s.dir, sizeof s.dir);
    snprintf(s.dest, sizeof s.dest, "%.4000s/%s", s.dir, e->local_name);
    if (send_job(a, &s, e->local_name)) {
        a->ms.job_catalog = r->catalog;
        say(a, false, "%s %s...", r->state == PT_CAT_PARTIAL ? "resuming" : "downloading", id);
    }
}

static void cancel_job(pt_app *a) {
    pt_mscreen *m = &a->ms;
    if (!m->running) { say(a, false, "nothing is running"); return; }
    pt_jobs_cancel(&m->jobs, m->job_id);
    m->stop_requested = true;
    a->dirty = true;
}

static const char *check_text(pt_download_check c) {
    switch (c) {
    case PT_DOWNLOAD_SHA256_GIVEN: return "catalog sha256 ok";
    case PT_DOWNLOAD_SHA256_SERVER: return "server sha256 ok";
    case PT_DOWNLOAD_UNVERIFIED: break;
    }
    return "NOT verified: no sha256 known";
}

static void on_done(pt_app *a, const pt_ui_event *ev) {
    pt_mscreen *m = &a->ms;
    m->running = false;
    m->job = ev->job;
    char sz[24], in[24];
    pt_fmt_bytes(ev->job.out_bytes, sz, sizeof sz);
    pt_fmt_bytes(ev->job.in_bytes, in, sizeof in);
    const char *name = m->job_name;
    switch (m->job_kind) {
    case PT_JOB_PULL:
        if (ev->status == PT_OK)
            say(a, false, "installed %s (%s%s; %s)", name, sz, ev->job.resumed_from ? ", resumed" : "",
                check_text(ev->job.check));
        else if (ev->status == PT_ERR_CANCELLED)
            say(a, false, "download of %s stopped: the part is kept, Enter resumes it", name);
        else
            say(a, true, "download of %s failed: %s", name, ev->msg);
        break;
    case PT_JOB_QUANTIZE:
        if (ev->status == PT_OK) say(a, false, "quantized to %s (%s -> %s)", name, in, sz);
        else if (ev->status == PT_ERR_CANCELLED) say(a, false, "quantizing %s stopped: nothing was written", name);
        else say(a, true, "quantize failed: %s", ev->msg);
        break;
    case PT_JOB_CONVERT:
        if (ev->status == PT_OK) say(a, false, "converted to %s (%s)", name, sz);
        else if (ev->status == PT_ERR_CANCELLED) say(a, false, "converting stopped: nothing was written");
        else say(a, true, "convert failed: %s", ev->msg);
        break;
    }
    pt_mscreen_rescan(a);
}

void pt_mscreen_on_event(pt_app *a, pt_ui_event *ev) {
    pt_mscreen *m = &a->ms;
    if (ev->job_id != m->job_id || !m->running) return;
    if (ev->kind == PT_EV_JOB_PROGRESS) m->job = ev->job;
    else if (ev->kind == PT_EV_JOB_DONE) on_done(a, ev);
    a->dirty = true;
}

/* ---- Enter: switch, or fetch ---- */

static void activate(pt_app *a) {
    const pt_mrow *r = pt_mscreen_selected(a);
    if (!r) return;
    const pt_catalog_entry *e = pt_mscreen_entry(a, r);
    if (r->kind == PT_MROW_CATALOG && r->state != PT_CAT_INSTALLED) {
        if (r->state == PT_CAT_BUNDLED && e && e->kind == PT_MODEL_KIND_IMAGE)
            say(a, false, "the bundled image model is the studio's unless petrel --image-model names another");
        else start_pull(a, r);
        return;
    }
    char path[4096], shown[300];
    if (!row_file(a, r, path, sizeof path)) return;
    pt_shown(base_name(path), shown, sizeof shown);
    if (e && e->kind == PT_MODEL_KIND_IMAGE) {
        /* the studio opens its model by path on its next picture */
        snprintf(a->img_model, sizeof a->img_model, "%s", path);
        a->studio.have_defaults = false;
        say(a, false, "%s is the studio's image model now (F6)", shown);
        return;
    }
    if ((a->loaded || a->loading) && !strcmp(path, a->model_path)) {
        say(a, false, "%s is the open model", shown);
        pt_mscreen_close(a);
        return;
    }
    pt_app_load_model(a, path);
    a->ms.back = SCREEN_CHAT;
    pt_mscreen_close(a);
}

/* ---- forms ---- */

static bool is_float_type(const char *t) {
    return !strcmp(t, "F32") || !strcmp(t, "F16") || !strcmp(t, "BF16");
}

static void set_type(pt_app *a, int idx) {
    pt_mscreen *m = &a->ms;
    m->type_idx = (idx % pt_n_quant_types + pt_n_quant_types) % pt_n_quant_types;
    if (m->name_auto) {
        char out[512];
        pt_quant_out_name(base_name(m->form_path), pt_quant_types[m->type_idx], out, sizeof out);
        pt_editor_set(&m->name, out);
    }
}

static void open_quantize(pt_app *a) {
    pt_mscreen *m = &a->ms;
    const pt_mrow *r = pt_mscreen_selected(a);
    if (!r || job_busy(a)) return;
    if (!row_file(a, r, m->form_path, sizeof m->form_path)) {
        say(a, true, "download it first (Enter): only a local model can be quantized");
        return;
    }
    const pt_model_entry *me = pt_models_find(&a->models, m->form_path);
    const char *ftype = me && me->probed && !me->bad ? me->card.ftype : "";
    pt_shown(base_name(m->form_path), m->form_what, sizeof m->form_what);
    m->form = PT_MFORM_QUANTIZE;
    m->field = MF_TYPE;
    m->form_err[0] = 0;
    m->requant = ftype[0] && !is_float_type(ftype);
    m->name_auto = true;
    /* the first type that is not the source's own */
    int idx = 0;
    while (idx + 1 < pt_n_quant_types && !strcmp(pt_quant_types[idx], ftype)) idx++;
    set_type(a, idx);
}

static void open_convert(pt_app *a) {
    pt_mscreen *m = &a->ms;
    if (job_busy(a)) return;
    m->form = PT_MFORM_CONVERT;
    m->field = MF_SRC;
    m->form_err[0] = 0;
    snprintf(m->form_what, sizeof m->form_what, "a Hugging Face folder or checkpoint");
    pt_editor_clear(&m->src);
    pt_editor_clear(&m->name);
    m->name_auto = false;
}

static void open_delete(pt_app *a) {
    pt_mscreen *m = &a->ms;
    const pt_mrow *r = pt_mscreen_selected(a);
    if (!r) return;
    char dir[4100], shown[300];
    models_dir(a, dir, sizeof dir);
    m->form_part = false;
    const pt_catalog_entry *e = pt_mscreen_entry(a, r);
    if (r->kind == PT_MROW_CATALOG && r->state == PT_CAT_PARTIAL && e) {
        m->form_part = path_join(m->form_path, sizeof m->form_path, dir, e->local_name, ".part");
        if (!m->form_part) return;
    } else if (!row_file(a, r, m->form_path, sizeof m->form_path)) {
        say(a, true, "%s", r->state == PT_CAT_BUNDLED ? "a bundled model cannot be deleted" : "nothing to delete: it is not downloaded");
        return;
    }
    pt_shown(base_name(m->form_path), shown, sizeof shown);
    size_t dl = strlen(dir);
    if (strncmp(m->form_path, dir, dl) != 0 || m->form_path[dl] != '/' || strchr(m->form_path + dl + 1, '/')) {
        say(a, true, "%s is not in the models folder: petrel deletes only its own files", shown);
        return;
    }
    if (!m->form_part && (a->loaded || a->loading) && !strcmp(m->form_path, a->model_path)) {
        say(a, true, "%s is open: switch to another model first", shown);
        return;
    }
    if (m->running && (!strcmp(m->job_dest, m->form_path) || strstr(m->form_path, m->job_dest) == m->form_path)) {
        say(a, true, "%s is being written: x cancels that first", shown);
        return;
    }
    struct stat st;
    char sz[24] = "?";
    if (stat(m->form_path, &st) == 0) pt_fmt_bytes((uint64_t)st.st_size, sz, sizeof sz);
    snprintf(m->form_what, sizeof m->form_what, "%.200s (%s)", shown, sz);
    m->form = PT_MFORM_DELETE;
}

static void do_delete(pt_app *a) {
    pt_mscreen *m = &a->ms;
    char side[4200], shown[300];
    pt_shown(base_name(m->form_path), shown, sizeof shown);
    m->form = PT_MFORM_NONE;
    if (unlink(m->form_path) != 0) {
        say(a, true, "cannot delete %s: %s", shown, strerror(errno));
        return;
    }
    /* what belongs to it: the sidecar of a .part; the .part of an
     * installed file (an abandoned re-download) and its last-used stamp */
    if (m->form_part) {
        snprintf(side, sizeof side, "%s.meta", m->form_path);
        unlink(side);
    } else {
        snprintf(side, sizeof side, "%s.part", m->form_path);
        unlink(side);
        snprintf(side, sizeof side, "%s.part.meta", m->form_path);
        unlink(side);
        char dir[4100];
        models_dir(a, dir, sizeof dir);
        if (path_join(side, sizeof side, dir, ".used/", base_name(m->form_path))) unlink(side);
    }
    say(a, false, "deleted %s", m->form_what);
    pt_mscreen_rescan(a);
}

static void submit_form(pt_app *a) {
    pt_mscreen *m = &a->ms;
    if (!m->name.buf || !m->src.buf) { snprintf(m->form_err, sizeof m->form_err, "out of memory"); return; }
    const char *problem = pt_out_name_problem(m->name.buf);
    if (problem) { snprintf(m->form_err, sizeof m->form_err, "%s", problem); return; }
    pt_job_spec s = {.kind = m->form == PT_MFORM_QUANTIZE ? PT_JOB_QUANTIZE : PT_JOB_CONVERT,
                     .n_threads = a->opts.n_threads, .max_retries = -1};
    models_dir(a, s.dir, sizeof s.dir);
    snprintf(s.dest, sizeof s.dest, "%.4000s/%s", s.dir, m->name.buf);
    if (m->form == PT_MFORM_QUANTIZE) {
        snprintf(s.src, sizeof s.src, "%s", m->form_path);
        snprintf(s.type, sizeof s.type, "%s", pt_quant_types[m->type_idx]);
        s.allow_requantize = m->requant;
    } else {
        if (!m->src.len) { snprintf(m->form_err, sizeof m->form_err, "which folder or file? (a path)"); return; }
        snprintf(s.src, sizeof s.src, "%s", m->src.buf);
        if (access(s.src, R_OK) != 0) { snprintf(m->form_err, sizeof m->form_err, "cannot read it: %s", strerror(errno)); return; }
    }
    struct stat st;
    if (stat(s.dest, &st) == 0) { snprintf(m->form_err, sizeof m->form_err, "that file exists: pick another name"); return; }
    if (mkdir(s.dir, 0755) != 0 && errno != EEXIST) {
        snprintf(m->form_err, sizeof m->form_err, "cannot create the models folder: %s", strerror(errno));
        return;
    }
    if (send_job(a, &s, m->name.buf)) {
        m->form = PT_MFORM_NONE;
        say(a, false, "%s %s...", s.kind == PT_JOB_QUANTIZE ? "quantizing to" : "converting to", a->ms.job_name);
    }
}

/* Text keys for the form's editors. */
static void edit_key(pt_editor *e, int k, bool is_char, bool *changed) {
    *changed = true;
    if (is_char) {
        switch (k) {
        case 127: case CTRL('h'): pt_editor_backspace(e); return;
        case CTRL('a'): pt_editor_home(e); return;
        case CTRL('e'): pt_editor_end(e); return;
        case CTRL('u'): pt_editor_kill_to_start(e); return;
        case CTRL('k'): pt_editor_kill_to_end(e); return;
        case CTRL('w'): pt_editor_kill_word(e); return;
        default:
            if (k >= 0x20 && k != 0x7f) { pt_editor_insert_cp(e, (uint32_t)k); return; }
            break;
        }
    } else {
        switch (k) {
        case KEY_BACKSPACE: pt_editor_backspace(e); return;
        case KEY_DC: pt_editor_delete(e); return;
        case KEY_LEFT: pt_editor_left(e); return;
        case KEY_RIGHT: pt_editor_right(e); return;
        case KEY_HOME: pt_editor_home(e); return;
        case KEY_END: pt_editor_end(e); return;
        default: break;
        }
    }
    *changed = false;
}

static void form_key(pt_app *a, int k, bool is_char) {
    pt_mscreen *m = &a->ms;
    if (m->form == PT_MFORM_DELETE) {
        if (is_char && (k == 'y' || k == 'Y')) do_delete(a);
        else { m->form = PT_MFORM_NONE; say(a, false, "kept %s", m->form_what); }
        return;
    }
    static const pt_mfield qfields[] = {MF_TYPE, MF_NAME, MF_REQUANT};
    static const pt_mfield cfields[] = {MF_SRC, MF_NAME};
    const pt_mfield *fields = m->form == PT_MFORM_QUANTIZE ? qfields : cfields;
    int nf = m->form == PT_MFORM_QUANTIZE ? 3 : 2, at = 0;
    while (at < nf && fields[at] != m->field) at++;
    if (is_char && (k == 27 || k == CTRL('c'))) { m->form = PT_MFORM_NONE; return; }
    if ((is_char && (k == '\r' || k == '\n')) || (!is_char && k == KEY_ENTER)) { submit_form(a); return; }
    if ((is_char && k == '\t') || (!is_char && k == KEY_DOWN)) { m->field = fields[(at + 1) % nf]; return; }
    if (!is_char && (k == KEY_UP || k == KEY_BTAB)) { m->field = fields[(at + nf - 1) % nf]; return; }
    m->form_err[0] = 0;
    if (m->field == MF_TYPE || m->field == MF_REQUANT) {
        int d = 0;
        if ((!is_char && k == KEY_RIGHT) || (is_char && (k == '+' || k == ' ' || k == 'l'))) d = 1;
        if ((!is_char && k == KEY_LEFT) || (is_char && (k == '-' || k == 'h'))) d = -1;
        if (!d) return;
        if (m->field == MF_TYPE) set_type(a, m->type_idx + d);
        else m->requant = !m->requant;
        return;
    }
    bool changed;
    edit_key(m->field == MF_NAME ? &m->name : &m->src, k, is_char, &changed);
    if (changed && m->field == MF_NAME) m->name_auto = false;
}

/* ---- keys ---- */

void pt_mscreen_key(pt_app *a, int k, bool is_char) {
    pt_mscreen *m = &a->ms;
    if (m->form != PT_MFORM_NONE) { form_key(a, k, is_char); return; }
    const pt_mrow *r = pt_mscreen_selected(a);
    int page = a->ms.rows.n > 10 ? 10 : 5;
    if (is_char) {
        switch (k) {
        case 27: case CTRL('c'): pt_mscreen_close(a); return;
        case '\r': case '\n': activate(a); return;
        case 'k': move_sel(a, -1); return;
        case 'j': move_sel(a, 1); return;
        case 'd': if (r && r->kind == PT_MROW_CATALOG) start_pull(a, r); else say(a, false, "d downloads a catalog entry"); return;
        case 'x': cancel_job(a); return;
        case 'q': open_quantize(a); return;
        case 'c': open_convert(a); return;
        case 'D': open_delete(a); return;
        case 'r': pt_mscreen_rescan(a); say(a, false, "rescanned"); return;
        default: return;
        }
    }
    switch (k) {
    case KEY_UP: move_sel(a, -1); break;
    case KEY_DOWN: move_sel(a, 1); break;
    case KEY_PPAGE: move_sel(a, -page); break;
    case KEY_NPAGE: move_sel(a, page); break;
    case KEY_HOME: m->sel = pt_mrows_select(&m->rows, 0, 0); break;
    case KEY_END: { int e = pt_mrows_select(&m->rows, m->rows.n - 1, 0); m->sel = e >= 0 ? e : pt_mrows_select(&m->rows, m->rows.n - 1, -1); break; }
    case KEY_ENTER: activate(a); break;
    case KEY_DC: open_delete(a); break;
    default: break;
    }
}
