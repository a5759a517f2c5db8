/*
 * tui.c — the full-screen app: start-up, the event loop, keys, slash
 * commands, and what each worker event does to the state (app.h).
 *
 * The loop never blocks on the engine: it poll()s the terminal and the
 * event queue's wake fd with a short timeout (50 ms while something
 * moves, 250 ms when idle, for the memory gauges), handles every pending
 * event and key, and redraws when something changed, at most ~30 times a
 * second while text streams (keys redraw at once).
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "term.h"
#include "text.h"
#include "ui.h"

#define DEFAULT_MODEL_FILE "SmolLM2-135M-Instruct.Q4_1.gguf"

void pt_app_status(pt_app *a, bool err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->status, sizeof a->status, fmt, ap);
    va_end(ap);
    a->status_err = err;
    a->status_t = pt_ui_now();
    a->dirty = true;
}

/* A note in the transcript (not sent to the model). */
static void note(pt_app *a, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(pt_app *a, bool err, const char *fmt, ...) {
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pt_convo_add(&a->convo, err ? PT_ROLE_ERROR : PT_ROLE_INFO, buf, strlen(buf));
    a->scroll = 0;
    a->dirty = true;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- engine requests ---- */

void pt_app_load_model(pt_app *a, const char *path) {
    if (a->generating) {
        pt_worker_cancel(&a->worker, a->turn_id);
        a->stop_requested = true;
    }
    snprintf(a->model_path, sizeof a->model_path, "%s", path);
    pt_term_note_model(path);
    a->loaded = false;
    a->load_t0 = pt_ui_now();
    a->load_done = a->load_total = 0;
    a->st.have_mem = false;
    a->load_id++;
    a->loading = pt_worker_load(&a->worker, a->load_id, path);
    if (!a->loading) pt_app_status(a, true, "out of memory: the model was not opened");
    a->dirty = true;
}

static void start_turn(pt_app *a) {
    int n = pt_convo_engine_count(&a->convo);
    pt_chat_message *msgs = malloc(sizeof *msgs * (size_t)(n > 0 ? n : 1));
    if (!msgs) return;
    n = pt_convo_engine_msgs(&a->convo, msgs, n);
    a->turn_id++;
    bool sent = pt_worker_turn(&a->worker, a->turn_id, msgs, n, &a->set);
    free(msgs);
    if (!sent) { pt_app_status(a, true, "out of memory: the message was not sent"); return; }
    a->reply_msg = pt_convo_add(&a->convo, PT_ROLE_ASSISTANT, "", 0);
    a->generating = true;
    a->stop_requested = false;
    a->turn_t0 = pt_ui_now();
    memset(&a->live, 0, sizeof a->live);
    a->live.t_first = -1;
    a->st.generating = true;
    a->st.prefilling = true;
    a->st.live_prefill_tps = a->st.live_decode_tps = a->st.live_ttft = -1;
    a->st.live_tokens = 0;
    a->spark_chunks = 0;
    a->spark_t = a->turn_t0;
    a->scroll = 0;
    a->dirty = true;
}

static void send_message(pt_app *a, const char *text) {
    if (!a->loaded) {
        pt_app_status(a, true, a->loading ? "the model is still loading" : "no model: F2 opens the Models screen");
        return;
    }
    pt_convo_add(&a->convo, PT_ROLE_USER, text, strlen(text));
    start_turn(a);
}

static void stop_generation(pt_app *a) {
    if (!a->generating) return;
    pt_worker_cancel(&a->worker, a->turn_id);
    a->stop_requested = true;
    a->dirty = true;
}

static void reset_chat(pt_app *a) {
    stop_generation(a);
    pt_convo_clear(&a->convo);
    pt_worker_reset(&a->worker);
    a->reply_msg = -1;
    a->scroll = 0;
    pt_app_status(a, false, "new conversation");
}

/* The conversation as JSON, and its KV cache beside it (NAME.kv, written
 * by the worker, which then reports it: PT_EV_KV). */
static void save_chat(pt_app *a, const char *name) {
    char path[4096], err[400], shown[1024], kv[4096];
    if (!pt_convo_save(&a->convo, &a->set, base_name(a->model_path), a->data_dir, name,
                       path, sizeof path, err, sizeof err)) {
        pt_app_status(a, true, "%s", pt_shown(err, shown, sizeof shown));
        return;
    }
    pt_app_status(a, false, "saved %s", pt_shown(path, shown, sizeof shown));
    if (a->loaded && !a->generating && pt_session_kv_path(path, kv, sizeof kv)) pt_worker_save_kv(&a->worker, kv);
}

/* F8 or /retry: drop notes and the last reply, then answer the last
 * question again (the KV cache keeps everything before the reply). */
static void retry_last(pt_app *a) {
    if (a->generating) { pt_app_status(a, true, "a reply is being written"); return; }
    if (!a->loaded) { pt_app_status(a, true, "no model loaded"); return; }
    while (a->convo.n > 0 && a->convo.msgs[a->convo.n - 1].role != PT_ROLE_USER)
        pt_convo_remove_last(&a->convo);
    if (a->convo.n == 0) { pt_app_status(a, true, "nothing to retry"); return; }
    start_turn(a);
}

/* F9 or /edit: the last user message goes back into the input (it and
 * what follows it leave the conversation); Enter sends it again and only
 * the tokens from the first change on are prefilled. /edit TEXT replaces
 * it with TEXT and sends at once. */
static void edit_last(pt_app *a, const char *text) {
    if (a->generating) { pt_app_status(a, true, "a reply is being written: Esc stops it"); return; }
    if (text && *text && !a->loaded) { pt_app_status(a, true, "no model loaded"); return; }
    int last = a->convo.n - 1;
    while (last >= 0 && a->convo.msgs[last].role != PT_ROLE_USER) last--;
    if (last < 0) { pt_app_status(a, true, "no message to edit"); return; }
    char *old = strdup(a->convo.msgs[last].text);
    if (!old) return;
    while (a->convo.n > last) pt_convo_remove_last(&a->convo);
    a->scroll = 0;
    if (text && *text) {
        send_message(a, text);
    } else {
        pt_editor_set(&a->ed, old);
        pt_app_status(a, false, "editing the last message: Enter sends it again");
    }
    free(old);
    a->dirty = true;
}

static void toggle_demo(pt_app *a) {
    a->demo = !a->demo;
    if (a->demo) {
        a->demo_next = pt_ui_now();
        pt_app_status(a, false, "demo mode: scripted prompts; Esc or F5 leaves");
    } else {
        stop_generation(a);
        pt_app_status(a, false, "demo mode off");
    }
}

/* ---- LoRA ---- */

void pt_app_fmt_scale(float v, char *buf, size_t cap) {
    snprintf(buf, cap, "%g", (double)v);
    if (!strpbrk(buf, ".en") && strlen(buf) + 2 < cap) strcat(buf, ".0");
}

void pt_app_lora_summary(const pt_app *a, char *buf, size_t cap) {
    size_t at = 0;
    if (cap) buf[0] = 0;
    const char *times = pt_text_utf8() ? "\u00d7" : "x";
    for (int i = 0; i < a->loras.n; i++) {
        const pt_lora_entry *e = &a->loras.e[i];
        if (!e->active) continue;
        char sc[24];
        pt_app_fmt_scale(e->scale, sc, sizeof sc);
        int n = snprintf(buf + at, cap - at, "%s%s%s%s", at ? "+" : "", e->name, times, sc);
        if (n < 0 || (size_t)n >= cap - at) break;
        at += (size_t)n;
    }
}

static void lora_command(pt_app *a, const char *arg) {
    pt_lora_cmd cmd;
    char msg[320];
    if (!pt_slash_lora_parse(arg, strlen(arg), &cmd, msg, sizeof msg)) {
        char shown[400];
        pt_app_status(a, true, "%s", pt_shown(msg, shown, sizeof shown));
        return;
    }
    /* the worker runs it after what it has queued: a reply being written
     * keeps its adapters, the next one gets the new set */
    pt_worker_lora(&a->worker, &cmd);
}

static void lora_list_note(pt_app *a) {
    if (a->loras.n == 0) {
        note(a, false, "no LoRA adapters loaded: /lora PATH [SCALE] loads one");
        return;
    }
    char buf[4096];
    size_t at = 0;
    at += (size_t)snprintf(buf, sizeof buf, "LoRA adapters (%d loaded):", a->loras.n);
    for (int i = 0; i < a->loras.n && at < sizeof buf; i++) {
        const pt_lora_entry *e = &a->loras.e[i];
        char sc[24], by[24];
        pt_app_fmt_scale(e->scale, sc, sizeof sc);
        pt_fmt_bytes(e->bytes, by, sizeof by);
        at += (size_t)snprintf(buf + at, sizeof buf - at, "\n  %-20s %s  rank %d, %s", e->name,
                               e->active ? sc : "off", e->rank, by);
    }
    note(a, false, "%s", buf);
}

static void on_lora(pt_app *a, const pt_ui_event *ev) {
    if (ev->loras) a->loras = *ev->loras;
    if (ev->status != PT_OK) { pt_app_status(a, true, "%s", ev->msg); return; }
    if (ev->lora_reloaded) return;   /* all of them fit the new model: the title shows them */
    if (ev->lora_op == PT_LORA_LIST) { lora_list_note(a); return; }
    if (ev->lora_quiet) return;
    char sum[256];
    pt_app_lora_summary(a, sum, sizeof sum);
    if (sum[0]) pt_app_status(a, false, "lora %s (from the next reply)", sum);
    else pt_app_status(a, false, "lora off (from the next reply)");
}

/* ---- slash commands ---- */

static void show_stats(pt_app *a) {
    char p[24], d[24], t[24], rss[24], pk[24], res[24], map[24], kr[24];
    pt_ui_stats *s = &a->st;
    pt_fmt_rate(s->have_last ? s->last_prefill_tps : -1, p, sizeof p);
    pt_fmt_rate(s->have_last ? s->last_decode_tps : -1, d, sizeof d);
    pt_fmt_secs(s->have_last ? s->last_ttft : -1, t, sizeof t);
    pt_fmt_bytes(s->rss, rss, sizeof rss);
    pt_fmt_bytes(s->rss_peak, pk, sizeof pk);
    pt_fmt_bytes(s->mem.model_resident, res, sizeof res);
    pt_fmt_bytes(s->mem.model_mapped, map, sizeof map);
    pt_fmt_bytes(s->mem.kv_bytes_ram, kr, sizeof kr);
    char lora[96] = "", lb[24];
    if (s->mem.n_lora > 0) {
        pt_fmt_bytes(s->mem.lora_bytes, lb, sizeof lb);
        snprintf(lora, sizeof lora, "\nLoRA: %d active, %s of factors", s->mem.n_lora, lb);
    }
    note(a, false,
         "last reply: %d prompt tokens (%d cached), %d generated\n"
         "prefill %s t/s, decode %s t/s, time to first token %s\n"
         "RSS %s (peak %s), model %s of %s resident, KV %s in RAM, context %d/%d%s",
         s->last_n_prompt, s->last_n_cached, s->last_n_gen, p, d, t, rss, pk, res, map, kr,
         s->mem.kv_tokens, s->mem.kv_capacity, lora);
}

static void run_slash(pt_app *a, const pt_slash *c) {
    char arg[4096], msg[512];
    size_t n = c->arg_len < sizeof arg - 1 ? c->arg_len : sizeof arg - 1;
    memcpy(arg, c->arg, n);
    arg[n] = 0;
    switch (c->id) {
    case PT_SLASH_HELP: a->ov = OV_HELP; a->help_scroll = 0; break;
    case PT_SLASH_RESET: reset_chat(a); break;
    case PT_SLASH_SYSTEM:
        if (!arg[0]) note(a, false, "system prompt: %s", a->convo.system ? a->convo.system : "(none)");
        else {
            pt_convo_set_system(&a->convo, strcmp(arg, "-") == 0 ? NULL : arg);
            pt_app_status(a, false, a->convo.system ? "system prompt set" : "system prompt cleared");
        }
        break;
    case PT_SLASH_MODEL: {
        if (!arg[0]) { pt_mscreen_open(a); break; }
        char path[4096];
        pt_models_scan(&a->models, a->data_dir, NULL);
        const char *p = pt_models_resolve(&a->models, arg, path, sizeof path);
        if (!p) pt_app_status(a, true, "no model \"%s\" (see /models)", arg);
        else pt_app_load_model(a, p);
        break;
    }
    case PT_SLASH_MODELS: pt_mscreen_open(a); break;
    case PT_SLASH_SAVE: save_chat(a, arg); break;
    case PT_SLASH_LOAD: {
        if (a->generating) { pt_app_status(a, true, "stop the reply first (Esc)"); break; }
        char path[4096], err[400];
        if (!arg[0]) {
            char *list = pt_chats_list(a->data_dir);
            note(a, false, "saved chats:\n%s", list && *list ? list : "(none)\n");
            free(list);
            break;
        }
        char shown[1024];
        if (pt_convo_load(&a->convo, &a->set, a->data_dir, arg, path, sizeof path, err, sizeof err)) {
            pt_worker_reset(&a->worker);
            a->scroll = 0;
            pt_app_status(a, false, "loaded %s (%d messages)", pt_shown(path, shown, sizeof shown), a->convo.n);
            char kv[4096]; /* its KV cache too, when one was saved beside it */
            if (a->loaded && pt_session_kv_path(path, kv, sizeof kv) && access(kv, F_OK) == 0)
                pt_worker_load_kv(&a->worker, kv);
        } else {
            pt_app_status(a, true, "%s", pt_shown(err, shown, sizeof shown));
        }
        break;
    }
    case PT_SLASH_CHATS: {
        char *list = pt_chats_list(a->data_dir);
        note(a, false, "saved chats (newest first):\n%s", list && *list ? list : "(none)");
        free(list);
        break;
    }
    case PT_SLASH_SET: {
        if (!arg[0]) {
            char buf[2048];
            size_t at = 0;
            for (int i = 0; i < pt_slash_n_settings; i++) {
                char v[48];
                pt_slash_setting_value(&a->set, &pt_slash_settings[i], v, sizeof v);
                at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s = %s", i ? "\n" : "",
                                       pt_slash_settings[i].name, v);
            }
            note(a, false, "%s", buf);
            break;
        }
        char *sp = strpbrk(arg, " \t");
        size_t nl = sp ? (size_t)(sp - arg) : strlen(arg);
        const pt_slash_setting *st = pt_slash_find_setting(arg, nl);
        if (!st) { pt_app_status(a, true, "no setting \"%.*s\"", (int)nl, arg); break; }
        const char *v = sp ? sp : "";
        bool ok = pt_slash_set(&a->set, st, v, strlen(v), msg, sizeof msg);
        pt_app_status(a, !ok, "%s", msg);
        break;
    }
    case PT_SLASH_SETTING: {
        bool ok = pt_slash_set(&a->set, c->setting, arg, strlen(arg), msg, sizeof msg);
        pt_app_status(a, !ok, "%s", msg);
        break;
    }
    case PT_SLASH_STATS: show_stats(a); break;
    case PT_SLASH_RETRY: retry_last(a); break;
    case PT_SLASH_EDIT: edit_last(a, arg); break;
    case PT_SLASH_DEMO: toggle_demo(a); break;
    case PT_SLASH_MOUSE:
        a->mouse = strcmp(arg, "off") != 0 && (arg[0] || !a->mouse);
        pt_term_mouse(a->mouse);
        pt_app_status(a, false, "mouse %s", a->mouse ? "on (wheel scrolls)" : "off (the terminal selects text)");
        break;
    case PT_SLASH_IMAGINE:
        if (!arg[0]) { pt_app_status(a, true, "/imagine wants a prompt: /imagine a red square"); break; }
        pt_studio_imagine(a, arg);
        break;
    case PT_SLASH_STUDIO: a->screen = SCREEN_STUDIO; break;
    case PT_SLASH_LORA: lora_command(a, arg); break;
    case PT_SLASH_QUIT: a->quit = true; break;
    default:
        pt_app_status(a, true, "unknown command /%.*s (/help lists them)", (int)c->name_len, c->name);
        break;
    }
    a->dirty = true;
}

static void submit(pt_app *a) {
    pt_editor *e = &a->ed;
    /* a line ending in a backslash continues on the next line */
    if (e->cur == e->len && e->len > 0 && e->buf[e->len - 1] == '\\') {
        e->buf[--e->len] = 0;
        e->cur = e->len;
        pt_editor_insert(e, "\n", 1);
        return;
    }
    char *text = strdup(e->buf);
    if (!text) return;
    /* blank input does nothing */
    const char *p = text;
    while (*p == ' ' || *p == '\n' || *p == '\t') p++;
    if (!*p) { free(text); return; }
    pt_slash c;
    if (pt_slash_parse(text, &c)) {
        pt_editor_remember(e, text);
        pt_editor_clear(e);
        run_slash(a, &c);
    } else if (a->generating) {
        pt_app_status(a, true, "a reply is being written: Esc stops it");
    } else {
        pt_editor_remember(e, text);
        pt_editor_clear(e);
        send_message(a, pt_slash_literal(text));
    }
    free(text);
    a->dirty = true;
}

static void complete(pt_app *a) {
    pt_editor *e = &a->ed;
    if (e->len < 1 || e->buf[0] != '/' || strchr(e->buf, ' ')) return;
    const char *hit = pt_slash_complete(e->buf + 1, e->len - 1, NULL);
    if (!hit) return;
    const char *second = pt_slash_complete(e->buf + 1, e->len - 1, hit);
    char buf[64];
    snprintf(buf, sizeof buf, "/%s%s", hit, second ? "" : " ");
    if (second) {
        /* several: complete the common prefix and list them */
        size_t common = strlen(hit);
        char list[512] = "";
        size_t at = 0;
        for (const char *h = hit; h; h = pt_slash_complete(e->buf + 1, e->len - 1, h)) {
            size_t k = 0;
            while (k < common && h[k] == hit[k]) k++;
            common = k;
            at += (size_t)snprintf(list + at, sizeof list - at, "/%s ", h);
            if (at >= sizeof list) break;
        }
        snprintf(buf, sizeof buf, "/%.*s", (int)common, hit);
        pt_app_status(a, false, "%s", list);
    }
    pt_editor_set(e, buf);
}

/* ---- events from the worker ---- */

static void on_event(pt_app *a, pt_ui_event *ev) {
    if (ev->has_mem) { a->st.mem = ev->mem; a->st.kv = ev->kv; a->st.have_mem = true; }
    switch (ev->kind) {
    case PT_EV_LOADED:
        /* a later load may already be on its way: only the latest counts */
        if (ev->load_id != a->load_id) break;
        a->loading = false;
        if (ev->status == PT_OK) {
            a->loaded = true;
            a->card = ev->card;
            pt_model_entry *e = pt_models_find(&a->models, a->model_path);
            if (e) { e->card = ev->card; e->probed = true; e->bad = false; }
            char file[1024];
            pt_app_status(a, false, "loaded %s in %.2fs", pt_shown(base_name(a->model_path), file, sizeof file),
                          ev->t - a->load_t0);
            /* --device opencl that runs on the CPU: why, in the chat, once
             * (a later load falling back for the same reason adds nothing) */
            if (ev->card.device_note[0] && strcmp(ev->card.device_note, a->device_note) != 0) {
                snprintf(a->device_note, sizeof a->device_note, "%s", ev->card.device_note);
                note(a, false, "OpenCL unavailable (%s): the model runs on the CPU", ev->card.device_note);
            }
        } else {
            a->loaded = false;
            a->st.have_mem = false;
            char path[1024];
            note(a, true, "cannot open %s: %s", pt_shown(a->model_path, path, sizeof path), ev->msg);
            pt_app_status(a, true, "model not loaded: F2 picks another");
        }
        break;
    case PT_EV_LOAD_PROGRESS:
        if (a->loading && ev->load_id == a->load_id) {
            a->load_done = ev->load_done;
            a->load_total = ev->load_total;
            a->dirty = true;
        }
        break;
    case PT_EV_PROBED: {
        pt_model_entry *e = ev->path ? pt_models_find(&a->models, ev->path) : NULL;
        if (!e) break;
        e->probed = true;
        e->bad = ev->status != PT_OK;
        if (e->bad) snprintf(e->error, sizeof e->error, "%.150s", ev->msg);
        else e->card = ev->card;
        break;
    }
    case PT_EV_TURN_START:
        if (ev->turn_id == a->turn_id && a->generating) a->live = ev->live;
        break;
    case PT_EV_TEXT:
        if (ev->turn_id != a->turn_id || !a->generating) break;
        a->live = ev->live;
        if (a->reply_msg >= 0 && a->reply_msg < a->convo.n && ev->text)
            pt_convo_append(&a->convo, a->reply_msg, ev->text, ev->len);
        if (a->st.prefilling && a->live.t_first >= 0) {
            a->st.prefilling = false;
            a->st.live_ttft = a->live.t_first;
            a->st.live_prefill_tps = a->live.t_first > 0 ? a->live.n_prompt / a->live.t_first : -1;
            a->spark_t = ev->t;
            a->spark_chunks = 1;
        }
        /* the turn's average since the first token: what the engine
         * reports as decode tok/s at the end */
        if (a->live.n_chunks > 1 && a->live.t_now > a->live.t_first)
            a->st.live_decode_tps = (a->live.n_chunks - 1) / (a->live.t_now - a->live.t_first);
        a->st.live_tokens = a->live.n_chunks;
        pt_stats_scale(&a->st);
        break;
    case PT_EV_TURN_DONE: {
        if (ev->turn_id != a->turn_id) break;
        a->generating = false;
        a->st.generating = false;
        a->st.prefilling = false;
        pt_msg *m = a->reply_msg >= 0 && a->reply_msg < a->convo.n ? &a->convo.msgs[a->reply_msg] : NULL;
        /* the worker's copy of the reply is authoritative */
        if (m && ev->text && (m->len != ev->len || memcmp(m->text, ev->text, ev->len) != 0)) {
            m->len = 0;
            pt_convo_append(&a->convo, a->reply_msg, ev->text, ev->len);
        }
        if (ev->status != PT_OK) {
            if (m && m->len == 0) { pt_convo_remove_last(&a->convo); m = NULL; }
            else if (m) m->stopped = true;
            note(a, true, "%s", ev->msg);
            pt_app_status(a, true, "%s", ev->msg);
            a->reply_msg = -1;
            break;
        }
        const pt_generate_stats *g = &ev->res.gen;
        a->st.have_last = true;
        a->st.last_prefill_tps = g->prefill_tps;
        a->st.last_decode_tps = g->decode_tps;
        a->st.last_ttft = ev->res.ttft;
        a->st.last_n_prompt = g->n_prompt;
        a->st.last_n_gen = g->n_generated;
        a->st.last_n_cached = ev->res.n_cached;
        pt_stats_scale(&a->st);
        if (g->decode_tps > 0) pt_spark_push(&a->st, (float)g->decode_tps);
        static const char *const why[] = {"end of reply", "length limit (/max)", "context full",
                                          "stopped", "stopped"};
        bool stopped = g->stop == PT_STOP_CANCELLED || g->stop == PT_STOP_CALLBACK;
        if (m) m->stopped = stopped;
        /* stopped before any text: no empty reply in the conversation */
        if (m && stopped && m->len == 0 && a->reply_msg == a->convo.n - 1) pt_convo_remove_last(&a->convo);
        char pr[24], dr[24];
        pt_fmt_rate(g->prefill_tps, pr, sizeof pr);
        pt_fmt_rate(g->decode_tps, dr, sizeof dr);
        pt_app_status(a, false, "%s: %d tokens, prefill %s t/s, decode %s t/s%s",
                      (unsigned)g->stop < 5 ? why[g->stop] : "done", g->n_generated, pr, dr,
                      ev->res.n_dropped_msgs ? " (context full: the oldest messages were dropped)" : "");
        a->reply_msg = -1;
        if (a->demo) a->demo_next = pt_ui_now() + 2.0;
        break;
    }
    case PT_EV_MEM:
        a->mem_pending = false;
        break;
    case PT_EV_KV: {
        char shown[400], file[1024];
        pt_shown(base_name(ev->path ? ev->path : ""), file, sizeof file);
        if (ev->status == PT_OK)
            pt_app_status(a, false, "KV cache of %d tokens %s %s", ev->kv_tokens,
                          ev->kv_saved ? "saved in" : "restored from", file);
        else
            pt_app_status(a, true, "KV cache %s: %s", ev->kv_saved ? "not saved" : "not restored (the chat is read again)",
                          pt_shown(ev->msg, shown, sizeof shown));
        break;
    }
    case PT_EV_IMG_LOADED: case PT_EV_IMG_PROGRESS: case PT_EV_IMG_DONE:
        pt_studio_on_event(a, ev);
        break;
    case PT_EV_JOB_PROGRESS: case PT_EV_JOB_DONE:
        pt_mscreen_on_event(a, ev);
        break;
    case PT_EV_LORA: on_lora(a, ev); break;
    }
    a->dirty = true;
}

/* ---- keys ---- */

#define CTRL(c) ((c) & 0x1f)

static void scroll_by(pt_app *a, int d) {
    a->scroll += d;
    if (a->scroll < 0) a->scroll = 0;
    int max = a->tr.total - a->view_rows;
    if (a->scroll > max) a->scroll = max > 0 ? max : 0;
}

static void key_help(pt_app *a, int k) {
    switch (k) {
    case KEY_UP: case 'k': a->help_scroll--; break;
    case KEY_DOWN: case 'j': a->help_scroll++; break;
    case KEY_PPAGE: a->help_scroll -= 10; break;
    case KEY_NPAGE: case ' ': a->help_scroll += 10; break;
    case KEY_HOME: a->help_scroll = 0; break;
    default: a->ov = OV_NONE; break;   /* any other key closes help */
    }
}

/* Keys common to every screen. Returns true when handled. */
static bool key_global(pt_app *a, int k) {
    switch (k) {
    case KEY_F(1): case CTRL('g'): a->ov = a->ov == OV_HELP ? OV_NONE : OV_HELP; a->help_scroll = 0; return true;
    case KEY_F(2): case CTRL('o'):
        if (a->screen == SCREEN_MODELS) pt_mscreen_close(a); else pt_mscreen_open(a);
        return true;
    case KEY_F(3): case CTRL('s'): save_chat(a, NULL); return true;
    case KEY_F(4): case CTRL('r'): reset_chat(a); return true;
    case KEY_F(5): case CTRL('t'): toggle_demo(a); return true;
    case KEY_F(6): case CTRL('x'):
        a->screen = a->screen == SCREEN_STUDIO ? SCREEN_CHAT : SCREEN_STUDIO;
        a->ms.form = PT_MFORM_NONE;
        a->ov = OV_NONE;
        return true;
    case KEY_F(7):
        if (a->ov == OV_LORA) a->ov = OV_NONE;
        else if (a->screen == SCREEN_CHAT) { a->ov = OV_LORA; a->lora_sel = 0; }
        else pt_app_status(a, false, "F7, the LoRA adapter picker, is on the chat screen");
        return true;
    case KEY_F(10): case CTRL('q'): a->quit = true; return true;
    case CTRL('l'): clearok(curscr, TRUE); pt_pic_invalidate(&a->pics); return true;
    case CTRL('z'): pt_term_suspend(); return true;
    case KEY_RESIZE: if (pt_term_check_size()) { a->dirty = true; pt_pic_invalidate(&a->pics); } return true;
    default: return false;
    }
}

static void key_chat(pt_app *a, int k, bool is_char) {
    pt_editor *e = &a->ed;
    if (is_char) {
        switch (k) {
        case 27:
            if (a->generating) stop_generation(a);
            if (a->studio.running) pt_studio_cancel(a);
            if (a->demo) { a->demo = false; pt_app_status(a, false, "demo mode off"); }
            return;
        case CTRL('c'):
            if (a->generating || a->studio.running) {
                stop_generation(a);
                pt_studio_cancel(a);
            } else if (e->len) pt_editor_clear(e);
            else pt_app_status(a, false, "F10 or ^Q quits");
            if (a->demo) a->demo = false;
            return;
        case '\r':
            submit(a);
            return;
        case '\n': pt_editor_insert(e, "\n", 1); return;
        case '\t': complete(a); return;
        case 127: case CTRL('h'): pt_editor_backspace(e); return;
        case CTRL('a'): pt_editor_home(e); return;
        case CTRL('e'): pt_editor_end(e); return;
        case CTRL('b'): pt_editor_left(e); return;
        case CTRL('f'): pt_editor_right(e); return;
        case CTRL('d'): pt_editor_delete(e); return;
        case CTRL('u'): pt_editor_kill_to_start(e); return;
        case CTRL('k'): pt_editor_kill_to_end(e); return;
        case CTRL('w'): pt_editor_kill_word(e); return;
        case CTRL('p'): pt_editor_hist_prev(e); return;
        case CTRL('n'): pt_editor_hist_next(e); return;
        default:
            if (k >= 0x20 && k != 0x7f) pt_editor_insert_cp(e, (uint32_t)k);
            return;
        }
    }
    switch (k) {
    case KEY_F(8): retry_last(a); break;
    case KEY_F(9): edit_last(a, NULL); break;
    case KEY_ENTER: submit(a); break;
    case KEY_BACKSPACE: pt_editor_backspace(e); break;
    case KEY_DC: pt_editor_delete(e); break;
    case KEY_LEFT: pt_editor_left(e); break;
    case KEY_RIGHT: pt_editor_right(e); break;
    case KEY_UP: if (!pt_editor_up(e, a->input_width)) pt_editor_hist_prev(e); break;
    case KEY_DOWN: if (!pt_editor_down(e, a->input_width)) pt_editor_hist_next(e); break;
    case KEY_HOME: if (e->len == 0) a->scroll = a->tr.total; else pt_editor_home(e); break;
    case KEY_END: if (e->len == 0) a->scroll = 0; else pt_editor_end(e); break;
    case KEY_PPAGE: scroll_by(a, a->view_rows > 2 ? a->view_rows - 2 : 1); break;
    case KEY_NPAGE: scroll_by(a, -(a->view_rows > 2 ? a->view_rows - 2 : 1)); break;
    case KEY_SR: scroll_by(a, 1); break;
    case KEY_SF: scroll_by(a, -1); break;
    case KEY_MOUSE: {
        MEVENT me;
        while (getmouse(&me) == OK) {
            if (me.bstate & BUTTON4_PRESSED) scroll_by(a, 3);
#ifdef BUTTON5_PRESSED
            else if (me.bstate & BUTTON5_PRESSED) scroll_by(a, -3);
#endif
        }
        break;
    }
    default: {
        /* Alt-Enter arrives as ESC + CR in one read: ncurses has no code
         * for it, so it comes as 27 then '\r' (handled above as stop + send) */
        const char *name = keyname(k);
        if (name && (strcmp(name, "kLFT5") == 0)) pt_editor_word_left(e);
        else if (name && (strcmp(name, "kRIT5") == 0)) pt_editor_word_right(e);
        break;
    }
    }
}

/* Bracketed paste: everything between ESC[200~ and ESC[201~ is text for
 * the editor, escape sequences and control keys included (a pasted F10 or
 * ^Q must not quit). ncurses' keypad decoding is off meanwhile, so
 * sequences arrive as their characters, and the end marker is matched
 * here; control characters other than newline and tab are kept (drawn as
 * '?'). */
static const char paste_end[] = "\033[201~";

static void paste_begin(pt_app *a) {
    a->paste = true;
    a->paste_match = 0;
    a->paste_t = pt_ui_now();
    keypad(stdscr, FALSE);
}

static void paste_text(pt_app *a, int k) {
    pt_editor *e = &a->ed;
    if (k == '\r' || k == '\n') pt_editor_insert(e, "\n", 1);
    else if (k == '\t') pt_editor_insert(e, "    ", 4);
    else pt_editor_insert_cp(e, (uint32_t)k);
}

/* The part of the end marker seen so far was text after all. */
static void paste_flush_match(pt_app *a) {
    for (int i = 0; i < a->paste_match; i++) paste_text(a, paste_end[i]);
    a->paste_match = 0;
}

static void paste_finish(pt_app *a) {
    a->paste = false;
    keypad(stdscr, TRUE);
}

/* A terminal sends a paste in one burst. When its end marker never comes
 * (binary junk: a stray UTF-8 lead byte makes get_wch swallow the marker's
 * ESC) the paste is over once no input came for PASTE_IDLE_S seconds;
 * without this every later key would be taken as text. */
#define PASTE_IDLE_S 1.0
static void paste_check_idle(pt_app *a, double now) {
    if (!a->paste || now - a->paste_t < PASTE_IDLE_S) return;
    paste_flush_match(a);
    paste_finish(a);
}

static void paste_char(pt_app *a, int k) {
    a->paste_t = pt_ui_now();
    if (k == paste_end[a->paste_match]) {
        if (paste_end[++a->paste_match] == 0) {
            a->paste_match = 0;
            paste_finish(a);
        }
        return;
    }
    paste_flush_match(a);
    a->paste_match = k == paste_end[0] ? 1 : 0;
    if (!a->paste_match) paste_text(a, k);
}

static void handle_key(pt_app *a, int k, bool is_char) {
    a->dirty = true;
    if (a->paste) {
        if (is_char) paste_char(a, k);   /* keypad is off: no key codes come */
        return;
    }
    if (!is_char && k == PT_KEY_PASTE_BEGIN) { paste_begin(a); return; }
    if (!is_char || k < 0x20 || k == 0x7f) {
        if (key_global(a, k)) return;
    }
    if (a->ov == OV_HELP) { key_help(a, k); return; }
    if (a->ov == OV_LORA) { pt_lora_picker_key(a, k, is_char); return; }
    if (a->screen == SCREEN_MODELS) { pt_mscreen_key(a, k, is_char); return; }
    if (a->screen == SCREEN_STUDIO) { pt_studio_key(a, k, is_char); return; }
    key_chat(a, k, is_char);
}

/* Escape followed at once by Enter is Alt-Enter: a new line. */
static void read_keys(pt_app *a) {
    wint_t wc;
    int r;
    int pending_esc = 0;
    while ((r = get_wch(&wc)) != ERR) {
        bool is_char = r == OK;
        int k = (int)wc;
        if (a->paste) { handle_key(a, k, is_char); continue; }
        if (pending_esc) {
            pending_esc = 0;
            if (is_char && (k == '\r' || k == '\n') && a->ov == OV_NONE && a->screen == SCREEN_CHAT) {
                pt_editor_insert(&a->ed, "\n", 1);
                a->dirty = true;
                continue;
            }
            handle_key(a, 27, true);
        }
        if (is_char && k == 27) { pending_esc = 1; continue; }
        handle_key(a, k, is_char);
        if (a->quit) return;
    }
    if (pending_esc) handle_key(a, 27, true);
}

/* ---- periodic work ---- */

static void tick(pt_app *a, double now) {
    paste_check_idle(a, now);
    pt_mscreen_tick(a, now);
    if (now - a->proc_t >= 0.5) {
        if (pt_term_check_size()) a->dirty = true;   /* a resize without a signal */
        uint64_t rss, peak;
        if (pt_proc_mem(&rss, &peak) && (rss != a->st.rss || peak != a->st.rss_peak)) {
            a->st.rss = rss;
            a->st.rss_peak = peak;
            a->dirty = true;
        }
        a->proc_t = now;
    }
    /* model residency changes as the kernel pages the mapping in and out:
     * ask for fresh numbers once a second when the worker is idle */
    if (a->loaded && !a->generating && !a->loading && !a->mem_pending && now - a->mem_t >= 1.0) {
        pt_worker_mem(&a->worker);
        a->mem_pending = true;
        a->mem_t = now;
    }
    /* sparkline: the decode rate over each half second of streaming */
    if (a->generating && !a->st.prefilling && now - a->spark_t >= 0.5) {
        double rate = (a->live.n_chunks - a->spark_chunks) / (now - a->spark_t);
        pt_spark_push(&a->st, (float)rate);
        a->spark_chunks = a->live.n_chunks;
        a->spark_t = now;
        a->dirty = true;
    }
    if (a->generating || a->loading || a->studio.running || a->ms.running) a->dirty = true;   /* spinners, timers */
    if (a->demo && !a->generating && !a->loading && a->loaded && a->ov == OV_NONE && now >= a->demo_next) {
        pt_convo_clear(&a->convo);
        pt_worker_reset(&a->worker);
        const char *p = pt_demo_prompt(a->demo_idx++);
        pt_convo_add(&a->convo, PT_ROLE_USER, p, strlen(p));
        start_turn(a);
    }
}

static void app_free(pt_app *a) {
    pt_mscreen_free(a);
    pt_studio_free(a);
    pt_convo_free(&a->convo);
    pt_transcript_free(&a->tr);
    pt_editor_free(&a->ed);
    pt_models_free(&a->models);
}

static void free_event_node(pt_qnode *n) { pt_ui_event_free((pt_ui_event *)n); }

static void pick_locale(void) {
    if (!setlocale(LC_ALL, "")) setlocale(LC_ALL, "C");
    pt_text_init();
    /* no locale asked for at all (common over SSH to small boards): the
     * terminal is very likely UTF-8, so use C.UTF-8 when it exists */
    if (!pt_text_utf8() && !getenv("LC_ALL") && !getenv("LC_CTYPE") && !getenv("LANG")) {
        if (setlocale(LC_CTYPE, "C.UTF-8")) pt_text_init();
    }
}

int pt_ui_run(const pt_ui_options *opts) {
    static pt_app app;   /* large; one per process */
    pt_app *a = &app;
    memset(a, 0, sizeof *a);
    a->opts = *opts;
    snprintf(a->data_dir, sizeof a->data_dir, "%s", opts->data_dir ? opts->data_dir : ".");
    pick_locale();

    pt_convo_init(&a->convo);
    pt_transcript_init(&a->tr);
    pt_editor_init(&a->ed);
    pt_chat_settings_default(&a->set);
    if (opts->n_predict > 0) a->set.n_predict = opts->n_predict;
    a->reply_msg = -1;
    a->mouse = !opts->no_mouse;
    a->st.ram_total = pt_ram_total();
    a->st.live_prefill_tps = a->st.live_decode_tps = a->st.live_ttft = -1;

    pt_studio_init(a);
    snprintf(a->img_model, sizeof a->img_model, "%s", opts->image_model ? opts->image_model : "");
    snprintf(a->img_model_why, sizeof a->img_model_why, "%s",
             opts->image_model_why ? opts->image_model_why : "none given");
    /* the terminal's picture protocol: probed once, before curses takes
     * the terminal, on the controlling tty (replies never reach curses) */
    pt_gfx_proto want = PT_GFX_AUTO;
    char gfx_why[320];
    bool bad_graphics = !pt_gfx_requested(opts->graphics, &want, gfx_why, sizeof gfx_why);
    if (bad_graphics) want = PT_GFX_AUTO;
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    pt_gfx_probe(tty >= 0 ? tty : STDOUT_FILENO, want, pt_gfx_probe_timeout_ms(), &a->caps);
    if (tty >= 0) close(tty);

    if (!pt_queue_init(&a->events, true)) {
        fprintf(stderr, "petrel: cannot create the event pipe\n");
        return 1;
    }
    char err[320];
    if (!pt_term_start(opts->color, err, sizeof err)) {
        fprintf(stderr, "petrel: %s\n", err);
        pt_queue_destroy(&a->events, free_event_node);
        app_free(a);
        return 1;
    }
    pt_term_mouse(a->mouse);
    if (!pt_worker_start(&a->worker, &a->events, opts->n_ctx, opts->n_threads)) {
        pt_term_stop();
        fprintf(stderr, "petrel: cannot start the engine thread\n");
        pt_queue_destroy(&a->events, free_event_node);
        app_free(a);
        return 1;
    }
    /* read by the worker thread only in the load commands posted below
     * (the command queue's lock orders these writes before them) */
    a->worker.kv_type = opts->kv_type;
    a->worker.kv_ram_mb = opts->kv_ram_mb;
    a->worker.kv_qk = opts->kv_qk;
    a->worker.kv_spill_dir = opts->kv_spill_dir;
    a->worker.backend = opts->backend;
    a->worker.device = opts->device;
    a->worker.device_cache = opts->device_cache;
    pt_mscreen_init(a);   /* the Models screen's job thread, beside the worker */

    char path[4096];
    if (opts->model_path && *opts->model_path) snprintf(path, sizeof path, "%s", opts->model_path);
    else snprintf(path, sizeof path, "%.3900s/models/%s", a->data_dir, DEFAULT_MODEL_FILE);
    if (access(path, R_OK) == 0) {
        pt_app_load_model(a, path);
        /* --lora: queued behind the load, applied once the model is open */
        for (int i = 0; i < opts->n_loras; i++) {
            pt_lora_cmd cmd = {.op = PT_LORA_ON, .scale = opts->lora_scales ? opts->lora_scales[i] : 1.0f,
                               .quiet = true};
            snprintf(cmd.target, sizeof cmd.target, "%s", opts->lora_paths[i]);
            pt_worker_lora(&a->worker, &cmd);
        }
    } else {
        snprintf(a->model_path, sizeof a->model_path, "%s", path);
        char shown[1024];
        note(a, true, "no model at %s\nFetch the default model (see the README's first command), "
                      "or press F2 to pick another.", pt_shown(path, shown, sizeof shown));
    }
    if (opts->demo) toggle_demo(a);
    if (bad_graphics) note(a, true, "%s: pictures as the probe found", gfx_why);

    a->dirty = true;
    bool hangup = false;
    while (!a->quit) {
        double now = pt_ui_now();
        if (a->dirty) {
            /* while text streams, ~30 frames a second are plenty */
            double since = now - a->frame_t;
            if (!a->generating || since >= 0.033) {
                pt_draw(a);
                a->frame_t = now;
                a->dirty = false;
            }
        }
        int timeout = a->generating || a->loading || a->demo || a->studio.running || a->ms.running ? 50 : 250;
        if (a->dirty) timeout = 10;
        struct pollfd fds[3] = {
            {.fd = STDIN_FILENO, .events = POLLIN},
            {.fd = pt_queue_fd(&a->events), .events = POLLIN},
            {.fd = pt_term_winch_fd(), .events = POLLIN},
        };
        int pr = poll(fds, 3, timeout);
        if (pr < 0 && errno != EINTR) break;
        if (fds[1].revents & POLLIN) pt_queue_drain_fd(&a->events);
        /* a resize (signalled, or found by the periodic check in tick):
         * lay out and repaint the whole screen at once */
        if ((fds[2].revents & POLLIN) && pt_term_check_size()) {
            a->dirty = true;
            pt_draw(a);
            a->frame_t = pt_ui_now();
            a->dirty = false;
        }
        pt_qnode *n;
        while ((n = pt_queue_pop(&a->events))) {
            on_event(a, (pt_ui_event *)n);
            pt_ui_event_free((pt_ui_event *)n);
        }
        bool had_dirty = a->dirty;
        a->dirty = false;
        read_keys(a);
        if (a->dirty) {
            /* keys redraw at once: typing must feel instant */
            pt_draw(a);
            a->frame_t = pt_ui_now();
            a->dirty = false;
        }
        a->dirty = had_dirty || a->dirty;
        if (fds[0].revents & (POLLHUP | POLLERR)) {
            /* the terminal went away: end as a SIGHUP would (128 + 1) */
            hangup = true;
            break;
        }
        tick(a, pt_ui_now());
    }

    /* the terminal first: the user gets the shell back at once (kitty
     * pictures are deleted: they would outlive the alternate screen) */
    pt_pic_clear(&a->pics, &a->caps);
    pt_term_stop();
    /* the file job first: a download stops at its next check, its .part kept */
    bool jobs_stopped = !a->ms.jobs_ok || pt_jobs_stop(&a->ms.jobs, 3.0);
    a->ms.jobs_ok = false;
    if (pt_worker_stop(&a->worker, 3.0) && jobs_stopped) {
        pt_queue_destroy(&a->events, free_event_node);
        app_free(a);
    }
    return hangup ? 128 + SIGHUP : 0;
}
