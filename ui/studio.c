/*
 * studio.c — the image studio's keys and the image jobs' events (the
 * state machine is in studio.h). /imagine in chat runs through the same
 * job with the studio's settings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "text.h"

#define CTRL(c) ((c) & 0x1f)

uint64_t pt_app_next_gen(pt_app *a) { return ++a->pic_gen; }

void pt_studio_init(pt_app *a) {
    pt_studio *s = &a->studio;
    memset(s, 0, sizeof *s);
    pt_editor_init(&s->prompt);
    pt_editor_init(&s->negative);
    pt_img_settings_default(&s->form);
    s->sel = -1;
    pt_gallery_init(&a->gal);
}

void pt_studio_free(pt_app *a) {
    pt_editor_free(&a->studio.prompt);
    pt_editor_free(&a->studio.negative);
    free(a->studio.preview);
    a->studio.preview = NULL;
    pt_gallery_free(&a->gal);
}

static void say(pt_app *a, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(pt_app *a, bool err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->studio.line, sizeof a->studio.line, fmt, ap);
    va_end(ap);
    a->studio.line_err = err;
    /* the chat's status line says it too (the job may be /imagine's) */
    pt_app_status(a, err, "%s", a->studio.line);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The image model's name for the PNG's parameters (no extension). */
static void model_name(const pt_app *a, char *buf, size_t cap) {
    const char *b = base_name(a->img_model);
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".gguf") == 0) n -= 5;
    snprintf(buf, cap, "%.*s", (int)n, b);
}

/* Send a job with settings st; false (with the reason said) when it cannot go. */
static bool start_job(pt_app *a, const pt_img_settings *st, bool for_chat) {
    pt_studio *s = &a->studio;
    char why[200];
    if (s->running) { say(a, true, "a picture is being drawn: Esc stops it"); return false; }
    if (!a->img_model[0]) { say(a, true, "no image model: %s", a->img_model_why); return false; }
    if (!pt_img_settings_check(st, why, sizeof why)) { say(a, true, "%s", why); return false; }
    int id = s->img_id + 1;
    if (!pt_worker_image(&a->worker, id, a->img_model, st)) {
        say(a, true, "out of memory: the picture was not started");
        return false;
    }
    s->img_id = id;
    s->job = *st;
    s->running = true;
    s->stop_requested = false;
    s->for_chat = for_chat;
    s->step = s->total = 0;
    s->elapsed = 0;
    s->t0 = pt_ui_now();
    free(s->preview);
    s->preview = NULL;
    s->sel = -1;
    s->large = false;
    say(a, false, "drawing...");
    a->dirty = true;
    return true;
}

/* The form's settings with the two text fields copied in. */
static void form_settings(const pt_studio *s, pt_img_settings *st) {
    *st = s->form;
    snprintf(st->prompt, sizeof st->prompt, "%s", s->prompt.buf ? s->prompt.buf : "");
    snprintf(st->negative, sizeof st->negative, "%s", s->negative.buf ? s->negative.buf : "");
}

void pt_studio_imagine(pt_app *a, const char *prompt) {
    pt_img_settings st;
    form_settings(&a->studio, &st);
    snprintf(st.prompt, sizeof st.prompt, "%s", prompt);
    start_job(a, &st, true);
}

void pt_studio_cancel(pt_app *a) {
    pt_studio *s = &a->studio;
    if (!s->running) return;
    pt_worker_cancel_image(&a->worker, s->img_id);
    s->stop_requested = true;
    a->dirty = true;
}

void pt_studio_progress_text(const pt_app *a, char *out, size_t cap) {
    const pt_studio *s = &a->studio;
    if (s->total <= 0) {
        snprintf(out, cap, "preparing (model, text encoder) %.1fs", pt_ui_now() - s->t0);
        return;
    }
    double rate = s->elapsed > 0 ? s->step / s->elapsed : 0;
    double eta = rate > 0 ? (s->total - s->step) / rate : 0;
    if (rate >= 1 || rate <= 0)
        snprintf(out, cap, "step %d/%d  %.2f it/s  ETA %d:%02d", s->step, s->total, rate, (int)eta / 60,
                 (int)eta % 60);
    else
        snprintf(out, cap, "step %d/%d  %.2f s/it  ETA %d:%02d", s->step, s->total, 1 / rate,
                 (int)eta / 60, (int)eta % 60);
}

/* ---- events ---- */

static void job_done(pt_app *a, pt_ui_event *ev) {
    pt_studio *s = &a->studio;
    s->running = false;
    s->stop_requested = false;
    free(s->preview);
    s->preview = NULL;
    if (ev->status == PT_ERR_CANCELLED) {
        say(a, false, "stopped at step %d of %d: nothing kept", s->step, s->total);
        return;
    }
    if (ev->status != PT_OK) {
        say(a, true, "picture failed: %s", ev->msg);
        return;
    }
    int i = pt_gallery_add(&a->gal, ev->rgb, ev->w, ev->h, &ev->img_set, ev->img_elapsed,
                           pt_app_next_gen(a));
    ev->rgb = NULL;   /* the gallery owns (or freed) it */
    if (i < 0) { say(a, true, "out of memory: the picture was not kept"); return; }
    s->sel = i;
    const pt_picture *p = &a->gal.items[i];
    char sum[200];
    pt_img_summary(&p->set, sum, sizeof sum);
    say(a, false, "picture %u done in %.1fs (%s)", p->id, p->seconds, sum);
    if (s->for_chat) {
        /* the prompt escaped for the screen (a newline in it stays on its
         * line), then the settings on a line of their own */
        char shown[PT_IMG_PROMPT_CAP], caption[PT_IMG_PROMPT_CAP + 256];
        pt_shown(p->set.prompt, shown, sizeof shown);
        snprintf(caption, sizeof caption, "%.1800s\n%s", shown, sum);
        if (pt_convo_add_picture(&a->convo, caption, p->id, p->w, p->h) >= 0) a->scroll = 0;
    }
}

void pt_studio_on_event(pt_app *a, pt_ui_event *ev) {
    pt_studio *s = &a->studio;
    switch (ev->kind) {
    case PT_EV_IMG_LOADED:
        if (ev->status == PT_OK) {
            s->defaults = ev->img_defaults;
            s->have_defaults = true;
        }
        break;
    case PT_EV_IMG_PROGRESS:
        /* only the latest job's reports count */
        if (ev->img_id != s->img_id || !s->running) break;
        s->step = ev->img_step;
        s->total = ev->img_total;
        s->elapsed = ev->img_elapsed;
        if (ev->rgb) {
            free(s->preview);
            s->preview = ev->rgb;
            ev->rgb = NULL;
            s->pw = ev->w;
            s->ph = ev->h;
            s->preview_gen = pt_app_next_gen(a);
        }
        break;
    case PT_EV_IMG_DONE:
        if (ev->img_id != s->img_id) break;
        job_done(a, ev);
        break;
    default:
        break;
    }
    a->dirty = true;
}

/* ---- keys ---- */

static pt_editor *field_editor(pt_studio *s) {
    if (s->field == SF_PROMPT) return &s->prompt;
    if (s->field == SF_NEGATIVE) return &s->negative;
    return NULL;
}

static void step_field(pt_app *a, int d) {
    pt_studio *s = &a->studio;
    switch (s->field) {
    case SF_STEPS: pt_img_step_steps(&s->form, d); break;
    case SF_CFG: pt_img_step_cfg(&s->form, d); break;
    case SF_SEED: pt_img_step_seed(&s->form, d); break;
    case SF_SIZE: pt_img_step_size(&s->form, d); break;
    case SF_SAMPLER: pt_img_step_sampler(&s->form, d); break;
    case SF_GALLERY:
        if (a->gal.n == 0) break;
        if (s->sel < 0) s->sel = a->gal.n - 1;
        s->sel += d;
        if (s->sel < 0) s->sel = 0;
        if (s->sel >= a->gal.n) s->sel = a->gal.n - 1;
        break;
    default: break;
    }
}

static pt_picture *selected(pt_app *a) {
    int i = a->studio.sel;
    return i >= 0 && i < a->gal.n ? &a->gal.items[i] : NULL;
}

static void save_selected(pt_app *a) {
    pt_picture *p = selected(a);
    if (!p) { say(a, true, "no picture to save"); return; }
    char why[600], name[256], shown[700];
    model_name(a, name, sizeof name);
    if (pt_gallery_save(p, a->data_dir, name, why, sizeof why))
        say(a, false, "saved %s", pt_shown(p->saved, shown, sizeof shown));
    else
        say(a, true, "%s", pt_shown(why, shown, sizeof shown));
}

/* A seed for re-rolls: from the clock, never the one just used. */
static uint64_t new_seed(uint64_t old) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (old * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x %= 4294967296ull;   /* A1111 seeds are 32-bit */
    return x == old ? x + 1 : x;
}

static void gallery_key(pt_app *a, int k) {
    pt_studio *s = &a->studio;
    pt_picture *p = selected(a);
    switch (k) {
    case 'v': case 'V':
        if (p) s->large = !s->large;
        break;
    case 's': case 'S': save_selected(a); break;
    case 'r': case 'R': {
        if (!p) { say(a, true, "no picture to re-roll"); break; }
        pt_img_settings st = p->set;
        st.seed = new_seed(p->set.seed);
        start_job(a, &st, false);
        break;
    }
    case 'c': case 'C':
        if (!p) { say(a, true, "no picture selected"); break; }
        s->form = p->set;
        s->form.prompt[0] = s->form.negative[0] = 0;
        pt_editor_set(&s->prompt, p->set.prompt);
        pt_editor_set(&s->negative, p->set.negative);
        say(a, false, "settings of picture %u copied to the form", p->id);
        break;
    default: break;
    }
}

void pt_studio_key(pt_app *a, int k, bool is_char) {
    pt_studio *s = &a->studio;
    pt_editor *e = field_editor(s);
    a->dirty = true;
    if (is_char) {
        switch (k) {
        case 27:
            if (s->large) s->large = false;
            else if (s->running) pt_studio_cancel(a);
            else a->screen = SCREEN_CHAT;
            return;
        case CTRL('c'):
            if (s->running) pt_studio_cancel(a);
            else say(a, false, "F10 or ^Q quits");
            return;
        case '\r': case '\n': {
            if (s->field == SF_GALLERY && selected(a)) { s->large = !s->large; return; }
            pt_img_settings st;
            form_settings(s, &st);
            start_job(a, &st, false);
            return;
        }
        case '\t': s->field = (s->field + 1) % SF_COUNT; return;
        case 127: case CTRL('h'): if (e) pt_editor_backspace(e); return;
        case CTRL('a'): if (e) pt_editor_home(e); return;
        case CTRL('e'): if (e) pt_editor_end(e); return;
        case CTRL('u'): if (e) pt_editor_kill_to_start(e); return;
        case CTRL('k'): if (e) pt_editor_kill_to_end(e); return;
        case CTRL('w'): if (e) pt_editor_kill_word(e); return;
        default:
            if (k < 0x20 || k == 0x7f) return;
            if (e) { pt_editor_insert_cp(e, (uint32_t)k); return; }
            if (k == '+' || k == '=') step_field(a, 1);
            else if (k == '-' || k == '_') step_field(a, -1);
            else if (s->field == SF_GALLERY) gallery_key(a, k);
            else if (s->field == SF_SEED && (k == 'n' || k == 'N')) s->form.seed = new_seed(s->form.seed);
            return;
        }
    }
    switch (k) {
    case KEY_ENTER: pt_studio_key(a, '\r', true); return;
    case KEY_BTAB: case KEY_UP: s->field = (s->field + SF_COUNT - 1) % SF_COUNT; return;
    case KEY_DOWN: s->field = (s->field + 1) % SF_COUNT; return;
    case KEY_LEFT: if (e) pt_editor_left(e); else step_field(a, -1); return;
    case KEY_RIGHT: if (e) pt_editor_right(e); else step_field(a, 1); return;
    case KEY_HOME: if (e) pt_editor_home(e); return;
    case KEY_END: if (e) pt_editor_end(e); return;
    case KEY_BACKSPACE: if (e) pt_editor_backspace(e); return;
    case KEY_DC: if (e) pt_editor_delete(e); return;
    case KEY_PPAGE: case KEY_NPAGE: {
        int f = s->field;
        s->field = SF_GALLERY;
        step_field(a, k == KEY_PPAGE ? -1 : 1);
        s->field = f;
        return;
    }
    default: return;
    }
}
