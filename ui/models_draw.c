/*
 * models_draw.c — painting the Models screen (models_screen.h).
 *
 * Rows, top to bottom:
 *   title | "Models" with the free RAM and the folder |
 *   the list: "On this device" heading, local files; "Catalog" heading,
 *     its entries (scrolls, the selection kept in view) |
 *   progress of the running job (1 row from 64 columns, else 2: the bar,
 *     then the numbers) | details of the selected row (2) |
 *   status rule | keys
 * Columns from 64 cells: mark, name, arch, quant, size, state, fit;
 * narrower: mark, name, size, fit (the state is the mark: * open,
 * + installed, ~ partial, v downloading; the details say it in words).
 * A form (quantize, convert, delete) is a box over the list.
 */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "text.h"

#define WIDE_COLS 64

static bool utf8(void) { return pt_text_utf8(); }

static void size_text(uint64_t bytes, bool approx, char *buf, size_t cap) {
    if (!bytes) { snprintf(buf, cap, "?"); return; }
    char b[24];
    pt_fmt_bytes(bytes, b, sizeof b);
    snprintf(buf, cap, "%s%.20s", approx ? "~" : "", b);
}

static bool is_open(const pt_app *a, const char *path) {
    return (a->loaded || a->loading) && !strcmp(path, a->model_path);
}

/* Is the running job this catalog row's download? */
static bool row_downloading(const pt_app *a, const pt_mrow *r) {
    return a->ms.running && a->ms.job_kind == PT_JOB_PULL && r->kind == PT_MROW_CATALOG &&
           r->catalog == a->ms.job_catalog;
}

static int job_percent(const pt_job_info *j) {
    if (!j->total) return -1;
    uint64_t d = j->done < j->total ? j->done : j->total;
    return (int)(100.0 * (double)d / (double)j->total);
}

/* ---- one row ---- */

typedef struct row_cells {
    char mark[8], name[300], arch[32], quant[24], size[24], state[24];
    pt_fit fit;
} row_cells;

static void cells_of(const pt_app *a, const pt_mrow *r, row_cells *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->mark, sizeof c->mark, " ");
    if (r->kind == PT_MROW_LOCAL) {
        const pt_model_entry *e = &a->models.items[r->index];
        bool open = is_open(a, e->path);
        pt_shown(e->name, c->name, sizeof c->name);
        if (e->bad) snprintf(c->arch, sizeof c->arch, "unreadable");
        else if (!e->probed) snprintf(c->arch, sizeof c->arch, "...");
        else {
            snprintf(c->arch, sizeof c->arch, "%s", e->card.arch);
            snprintf(c->quant, sizeof c->quant, "%s", e->card.ftype);
        }
        size_text(e->bytes, false, c->size, sizeof c->size);
        if (open) {
            snprintf(c->mark, sizeof c->mark, "*");
            snprintf(c->state, sizeof c->state, "%s", a->loading ? "opening" : "open");
        }
        c->fit = pt_fit_hint(e->bytes, pt_mscreen_avail_for(a, !open));
        return;
    }
    const pt_catalog_entry *e = pt_mscreen_entry(a, r);
    if (!e) return;
    pt_shown(e->id, c->name, sizeof c->name);
    pt_shown(e->arch ? e->arch : "-", c->arch, sizeof c->arch);
    pt_shown(e->quant ? e->quant : "-", c->quant, sizeof c->quant);
    bool approx;
    uint64_t bytes = pt_cat_bytes(e, &approx);
    size_text(bytes, approx, c->size, sizeof c->size);
    c->fit = pt_fit_hint(bytes, pt_mscreen_avail_for(a, e->kind == PT_MODEL_KIND_LLM));
    if (row_downloading(a, r)) {
        int p = job_percent(&a->ms.job);
        snprintf(c->mark, sizeof c->mark, "%s", utf8() ? "\u2193" : "v");
        if (a->ms.stop_requested) snprintf(c->state, sizeof c->state, "stopping");
        else if (p >= 0) snprintf(c->state, sizeof c->state, "%d%%", p);
        else snprintf(c->state, sizeof c->state, "starting");
        return;
    }
    switch (r->state) {
    case PT_CAT_INSTALLED:
        snprintf(c->mark, sizeof c->mark, "%s", utf8() ? "\u2713" : "+");
        snprintf(c->state, sizeof c->state, "installed");
        break;
    case PT_CAT_PARTIAL:
        snprintf(c->mark, sizeof c->mark, "~");
        if (bytes && !approx) snprintf(c->state, sizeof c->state, "part %d%%", (int)(100.0 * (double)r->part_bytes / (double)bytes));
        else snprintf(c->state, sizeof c->state, "partial");
        break;
    case PT_CAT_BUNDLED: snprintf(c->state, sizeof c->state, "bundled"); break;
    case PT_CAT_ABSENT: snprintf(c->state, sizeof c->state, "-"); break;
    }
}

static attr_t fit_attr(pt_fit f, bool sel) {
    if (sel) return pt_attr(S_SELECT);
    switch (f) {
    case PT_FIT_NO: return pt_attr(S_STATUS_ERR);
    case PT_FIT_TIGHT: return pt_attr(S_INFO_LABEL);
    case PT_FIT_YES: return pt_attr(S_BAR1);
    default: return pt_attr(S_DIM);
    }
}

/* Right-aligned columns from x_end leftwards are laid out by the caller;
 * this puts text left-aligned in a column of w cells. */
static void col(int y, int x, const char *s, attr_t at, int w) { pt_put_str(y, x, s, at, w); }

static void draw_row(pt_app *a, const pt_mrow *r, int y, int W, bool sel) {
    attr_t base = sel ? pt_attr(S_SELECT) : pt_attr(S_NORMAL);
    attr_t dim = sel ? base : pt_attr(S_DIM);
    if (r->kind == PT_MROW_HEADER) {
        char h[160];
        if (r->index == 0) snprintf(h, sizeof h, "On this device (%d)", a->models.n);
        else snprintf(h, sizeof h, "Catalog (%d)", a->opts.catalog ? pt_catalog_count(a->opts.catalog) : 0);
        int x = pt_put_str(y, 1, h, pt_attr(S_CAPTION) | A_BOLD, W - 1);
        if (W >= WIDE_COLS && r->index == 0) {
            /* column titles on the first heading */
            int xs = W - 43;
            if (xs > x + 1) {
                col(y, xs, "ARCH", pt_attr(S_DIM), 8);
                col(y, xs + 9, "QUANT", pt_attr(S_DIM), 7);
                col(y, xs + 17, "   SIZE", pt_attr(S_DIM), 7);
                col(y, xs + 25, "STATE", pt_attr(S_DIM), 9);
                col(y, xs + 35, "FIT", pt_attr(S_DIM), 7);
            }
        }
        return;
    }
    row_cells c;
    cells_of(a, r, &c);
    pt_fill(y, 0, W, base);
    pt_put_str(y, 0, c.mark, base | A_BOLD, 1);
    char size[40];
    if (W >= WIDE_COLS) {
        /* mark(1) sp name(W-45) sp arch(8) sp quant(7) sp size(7) sp state(9) sp fit(7) */
        int xs = W - 43;
        pt_put_str(y, 2, c.name, base | (c.mark[0] == '*' ? A_BOLD : 0), xs - 3);
        /* "unreadable" takes the quant's column too: a bad file has none */
        col(y, xs, c.arch, dim, c.quant[0] ? 8 : 16);
        col(y, xs + 9, c.quant, dim, 7);
        snprintf(size, sizeof size, "%7s", c.size);
        col(y, xs + 17, size, base, 7);
        col(y, xs + 25, c.state, dim, 9);
        col(y, xs + 35, pt_fit_name(c.fit), fit_attr(c.fit, sel), 7);
    } else {
        /* mark(1) sp name(W-17) sp size(6) sp fit(7) */
        int xs = W - 15;
        pt_put_str(y, 2, c.name, base | (c.mark[0] == '*' ? A_BOLD : 0), xs - 3);
        snprintf(size, sizeof size, "%6s", c.size);
        col(y, xs, size, base, 6);
        col(y, xs + 7, pt_fit_name(c.fit), fit_attr(c.fit, sel), 7);
    }
}

/* ---- details of the selected row ---- */

static void source_text(const pt_catalog_entry *e, char *buf, size_t cap) {
    char raw[1200];
    const char *src = e->source ? e->source : "?";
    if (!strcmp(src, "url")) snprintf(raw, sizeof raw, "%s", e->url ? e->url : "?");
    else if (!strcmp(src, "pypi")) snprintf(raw, sizeof raw, "PyPI %s", e->package ? e->package : "?");
    else if (!strcmp(src, "bundled")) snprintf(raw, sizeof raw, "bundled: %s", e->path ? e->path : "?");
    else snprintf(raw, sizeof raw, "%s://%s/%s", src, e->repo ? e->repo : "?", e->file ? e->file : "?");
    pt_shown(raw, buf, cap);
}

static void draw_details(pt_app *a, int y, int W) {
    const pt_mrow *r = pt_mscreen_selected(a);
    char l1[1000] = "", l2[1000] = "";
    if (!r) {
        snprintf(l1, sizeof l1, "%s", a->opts.catalog ? "no models" : "no catalog");
        if (!a->opts.catalog && a->opts.catalog_why) pt_shown(a->opts.catalog_why, l2, sizeof l2);
    } else if (r->kind == PT_MROW_LOCAL) {
        const pt_model_entry *e = &a->models.items[r->index];
        char name[300], dir[600];
        const char *slash = strrchr(e->path, '/');
        pt_shown(e->name, name, sizeof name);
        if (slash) {
            char raw[4096];
            snprintf(raw, sizeof raw, "%.*s", (int)(slash - e->path), e->path);
            pt_shown(raw, dir, sizeof dir);
        } else {
            snprintf(dir, sizeof dir, ".");
        }
        snprintf(l1, sizeof l1, "%s  in %s", name, dir);
        const pt_catalog_entry *ce = pt_mscreen_entry(a, r);
        char id[120] = "";
        if (ce) pt_shown(ce->id, id, sizeof id);
        if (e->bad) snprintf(l2, sizeof l2, "unreadable: %s", e->error);
        else if (!e->probed) snprintf(l2, sizeof l2, "reading its header...");
        else {
            double p = (double)e->card.n_params;
            char params[24];
            if (p >= 1e9) snprintf(params, sizeof params, "%.1fB", p / 1e9);
            else snprintf(params, sizeof params, "%.0fM", p / 1e6);
            snprintf(l2, sizeof l2, "%s %s, %s params, %d layers, ctx %d%s%s", e->card.arch, e->card.ftype, params,
                     e->card.n_layer, e->card.n_ctx_train, id[0] ? ", catalog " : "", id);
        }
    } else {
        const pt_catalog_entry *e = pt_mscreen_entry(a, r);
        if (e) {
            char title[300], lic[200], src[800], local[300];
            pt_shown(e->title ? e->title : e->id, title, sizeof title);
            pt_shown(e->license ? e->license : "license not given", lic, sizeof lic);
            pt_shown(e->local_name, local, sizeof local);
            source_text(e, src, sizeof src);
            snprintf(l1, sizeof l1, "%s%s (%s)", title, e->kind == PT_MODEL_KIND_IMAGE ? ", image model" : "", lic);
            char part[24];
            pt_fmt_bytes(r->part_bytes, part, sizeof part);
            if (row_downloading(a, r)) snprintf(l2, sizeof l2, "from %s; x cancels", src);
            else switch (r->state) {
            case PT_CAT_INSTALLED: snprintf(l2, sizeof l2, "here as %s: Enter %s", local,
                                            e->kind == PT_MODEL_KIND_IMAGE ? "makes it the studio's" : "switches to it"); break;
            case PT_CAT_PARTIAL: snprintf(l2, sizeof l2, "%s of it here: Enter resumes, D discards", part); break;
            case PT_CAT_BUNDLED: snprintf(l2, sizeof l2, "ships with petrel"); break;
            case PT_CAT_ABSENT: snprintf(l2, sizeof l2, "from %s: Enter downloads", src); break;
            }
        }
    }
    pt_put_str(y, 1, l1, pt_attr(S_NORMAL), W - 2);
    pt_put_str(y + 1, 1, l2, pt_attr(S_DIM), W - 2);
}

/* ---- the running job ---- */

static void job_numbers(const pt_app *a, char *buf, size_t cap) {
    const pt_mscreen *m = &a->ms;
    const pt_job_info *j = &m->job;
    char done[24], total[24], rate[24] = "", eta[24];
    pt_fmt_bytes(j->done, done, sizeof done);
    pt_fmt_bytes(j->total, total, sizeof total);
    pt_fmt_eta(j->eta_s, eta, sizeof eta);
    if (j->bytes_per_s >= 1) { pt_fmt_bytes((uint64_t)j->bytes_per_s, rate, sizeof rate); strcat(rate, "/s"); }
    int p = job_percent(j);
    char pct[16] = "";
    if (p >= 0) snprintf(pct, sizeof pct, "%d%%  ", p);
    if (m->stop_requested) { snprintf(buf, cap, "stopping..."); return; }
    if (m->job_kind == PT_JOB_QUANTIZE)
        snprintf(buf, cap, "%stensor %d/%d  %s/%s  ETA %s", pct, j->tensor + 1, j->n_tensors, done, total, eta);
    else if (!j->done && !j->total)
        snprintf(buf, cap, "connecting...");
    else
        snprintf(buf, cap, "%s%s / %s  %s  ETA %s%s", pct, done, j->total ? total : "?", rate[0] ? rate : "-", eta,
                 j->attempt > 1 ? "  (retrying)" : "");
}

static void draw_bar(int y, int x, int w, int pct) {
    if (w < 3) return;
    int inner = w - 2, full = pct < 0 ? 0 : inner * pct / 100;
    pt_put_str(y, x, "[", pt_attr(S_BRACKET), 1);
    for (int i = 0; i < inner; i++)
        pt_put_str(y, x + 1 + i, i < full ? (utf8() ? "\u2588" : "#") : (utf8() ? "\u2591" : "."),
                   i < full ? pt_attr(S_BAR1) : pt_attr(S_DIM), 1);
    pt_put_str(y, x + w - 1, "]", pt_attr(S_BRACKET), 1);
}

/* Returns the rows used (0 when nothing runs). The name gets what the
 * bar and the numbers leave (the status line says what the job is). */
static int draw_job(pt_app *a, int y, int W, bool two_rows) {
    const pt_mscreen *m = &a->ms;
    if (!m->running) return 0;
    char head[400], nums[200];
    snprintf(head, sizeof head, "%s %s %s", pt_spinner(),
             m->job_kind == PT_JOB_PULL ? (utf8() ? "\u2193" : "v") : m->job_kind == PT_JOB_QUANTIZE ? "q" : "c",
             m->job_name);
    job_numbers(a, nums, sizeof nums);
    int p = job_percent(&m->job);
    if (two_rows) {
        int x = pt_put_str(y, 1, head, pt_attr(S_CAPTION), W / 2);
        draw_bar(y, x + 2, W - x - 3, p);
        pt_put_str(y + 1, 2, nums, pt_attr(S_NORMAL), W - 3);
        return 2;
    }
    int nw = pt_str_cells(nums, strlen(nums));
    int room = W - 1 - 20 - nw - 1;
    if (room < W / 4) room = W / 4;
    int x = 1 + pt_put_str(y, 1, head, pt_attr(S_CAPTION), room);
    draw_bar(y, x + 1, 18, p);
    pt_put_str(y, x + 20, nums, pt_attr(S_NORMAL), W - x - 21);
    return 1;
}

void pt_mscreen_job_badge(const pt_app *a, char *buf, size_t cap) {
    buf[0] = 0;
    const pt_mscreen *m = &a->ms;
    if (!m->running) return;
    const char *sym = m->job_kind == PT_JOB_PULL ? (utf8() ? "\u2193" : "dl") : m->job_kind == PT_JOB_QUANTIZE ? "quant" : "conv";
    int p = job_percent(&m->job);
    if (p >= 0) snprintf(buf, cap, "%s %d%%", sym, p);
    else snprintf(buf, cap, "%s ...", sym);
}

/* ---- status rule and keys ---- */

static void draw_status(pt_app *a, int y, int W) {
    pt_rule(y, 0, W, pt_attr(S_DIM));
    if (!a->status[0] || W < 10) return;
    int x = 2;
    x += pt_put_str(y, x, " ", pt_attr(S_DIM), W - x);
    x += pt_put_str(y, x, a->status, pt_attr(a->status_err ? S_STATUS_ERR : S_STATUS), W - x - 2);
    pt_put_str(y, x, " ", pt_attr(S_DIM), W - x);
}

typedef struct mkey { const char *key, *label; int prio; } mkey;
static const mkey mkeys[] = {
    {"Enter", "use/get", 0}, {"d", "get", 3}, {"x", "cancel", 2}, {"q", "quantize", 4},
    {"c", "convert", 6},     {"D", "delete", 5}, {"r", "rescan", 7}, {"Esc", "back", 1},
};
#define N_MKEYS ((int)(sizeof mkeys / sizeof mkeys[0]))

static void draw_keys(int y, int W) {
    /* the most useful keys that fit, shown in the table's order */
    bool shown[N_MKEYS] = {false};
    int used = 0;
    for (int prio = 0; prio < N_MKEYS; prio++)
        for (int i = 0; i < N_MKEYS; i++) {
            if (mkeys[i].prio != prio) continue;
            int w = (int)(strlen(mkeys[i].key) + strlen(mkeys[i].label) + 2);
            if (used + w <= W - 1) { shown[i] = true; used += w; }
        }
    pt_fill(y, 0, W - 1, pt_attr(S_KEY_LABEL));
    int x = 0;
    for (int i = 0; i < N_MKEYS; i++) {
        if (!shown[i]) continue;
        x += pt_put_str(y, x, mkeys[i].key, pt_attr(S_KEY), W - 1 - x);
        x += pt_put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
        x += pt_put_str(y, x, mkeys[i].label, pt_attr(S_KEY_LABEL), W - 1 - x);
        x += pt_put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
    }
}

/* ---- forms ---- */

/* A one-row text field w cells wide: the whole text when it fits, else
 * the part that ends at the cursor (focused) or the start (not). */
static void draw_field(const pt_editor *e, int y, int x, int w, const char *hint, bool focus, int *cy, int *cx) {
    if (w < 2) return;
    if (!e->len) {
        if (hint) pt_put_str(y, x, hint, pt_attr(S_DIM), w);
        if (focus) { *cy = y; *cx = x; }
        return;
    }
    size_t start = 0;
    if (focus) {
        /* back from the cursor while the cells up to it leave one for it */
        while (start < e->cur && pt_str_cells(e->buf + start, e->cur - start) > w - 1) {
            uint32_t cp;
            start += (size_t)pt_ui_utf8_decode(e->buf + start, e->len - start, &cp);
        }
    }
    pt_put_text(y, x, e->buf + start, e->len - start, pt_attr(S_NORMAL), w);
    if (focus) {
        *cy = y;
        *cx = x + pt_str_cells(e->buf + start, e->cur - start);
    }
}

static void draw_form(pt_app *a, int W, int H, int *cy, int *cx, bool *cursor) {
    pt_mscreen *m = &a->ms;
    int bw = W - 2 < 70 ? W - 2 : 70;
    int bh = m->form == PT_MFORM_DELETE ? 5 : 7;
    if (bw < 20 || bh > H - 2) return;
    int bx = (W - bw) / 2, by = (H - bh) / 2;
    int lw = bw >= 50 ? 12 : 8;   /* label column */
    int x = bx + 2, fw = bw - 4 - lw;
    char title[320];
    if (m->form == PT_MFORM_DELETE) {
        pt_draw_box(by, bx, bh, bw, m->form_part ? "Discard the partial download" : "Delete");
        snprintf(title, sizeof title, "%s %s?", m->form_part ? "Discard" : "Delete", m->form_what);
        pt_put_str(by + 1, x, title, pt_attr(S_NORMAL) | A_BOLD, bw - 4);
        pt_put_str(by + 2, x, "y deletes it, any other key keeps it", pt_attr(S_DIM), bw - 4);
        *cursor = false;
        return;
    }
    snprintf(title, sizeof title, "%s %s", m->form == PT_MFORM_QUANTIZE ? "Quantize" : "Convert", m->form_what);
    pt_draw_box(by, bx, bh, bw, title);
    *cursor = false;
    int y = by + 1;
    const bool q = m->form == PT_MFORM_QUANTIZE;
    for (int f = 0; f < 3; f++) {
        pt_mfield id = q ? (pt_mfield[]){MF_TYPE, MF_NAME, MF_REQUANT}[f] : (pt_mfield[]){MF_SRC, MF_NAME, MF_NAME}[f];
        if (!q && f == 2) break;
        bool focus = m->field == id;
        const char *label = id == MF_TYPE ? "Type" : id == MF_NAME ? "Output" : id == MF_SRC ? "Source"
                          : lw >= 12 ? "Requantize" : "Requant";
        if (focus) pt_put_str(y, x - 1, utf8() ? "\u25b8" : ">", pt_attr(S_CAPTION), 1);
        pt_put_str(y, x, label, focus ? pt_attr(S_SELECT) : pt_attr(S_CAPTION), lw - 1);
        if (id == MF_TYPE) {
            char v[64];
            snprintf(v, sizeof v, "%s %s %s", utf8() ? "\u25c2" : "<", pt_quant_types[m->type_idx], utf8() ? "\u25b8" : ">");
            pt_put_str(y, x + lw, v, pt_attr(S_NORMAL) | (focus ? A_BOLD : 0), fw);
        } else if (id == MF_REQUANT) {
            const pt_model_entry *me = pt_models_find(&a->models, m->form_path);
            char v[160];
            snprintf(v, sizeof v, "%s%s%s%s", m->requant ? "yes" : "no",
                     me && me->probed && !me->bad ? " (the source is " : "",
                     me && me->probed && !me->bad ? me->card.ftype : "", me && me->probed && !me->bad ? ")" : "");
            pt_put_str(y, x + lw, v, pt_attr(S_NORMAL) | (focus ? A_BOLD : 0), fw);
        } else {
            pt_editor *e = id == MF_NAME ? &m->name : &m->src;
            draw_field(e, y, x + lw, fw, id == MF_SRC ? "a folder or .safetensors file" : "NAME.gguf", focus, cy, cx);
            if (focus) *cursor = true;
        }
        y++;
    }
    if (m->form_err[0]) pt_put_str(by + 4, x, m->form_err, pt_attr(S_STATUS_ERR), bw - 4);
    else pt_put_str(by + 4, x, q ? "Left/Right change, Tab next field" : "Tab next field", pt_attr(S_DIM), bw - 4);
    pt_put_str(by + 5, x, "Enter starts, Esc cancels", pt_attr(S_DIM), bw - 4);
}

/* ---- the screen ---- */

void pt_mscreen_draw(pt_app *a, int W, int H, int *cy, int *cx, bool *show_cursor) {
    pt_mscreen *m = &a->ms;
    *show_cursor = false;
    pt_draw_title(a, 0, W);
    char avail[24] = "?", dir[600], info[800];
    if (m->mem_avail) pt_fmt_bytes(m->mem_avail, avail, sizeof avail);
    pt_shown(a->data_dir, dir, sizeof dir);
    int x = pt_put_str(1, 1, "Models", pt_attr(S_CAPTION) | A_BOLD, W - 1);
    snprintf(info, sizeof info, "  free RAM %s  %s/models", avail, dir);
    pt_put_str(1, 1 + x, info, pt_attr(S_DIM), W - 2 - x);

    const bool two = W < WIDE_COLS;
    int job_rows = m->running ? (two ? 2 : 1) : 0;
    int footer = H - 1, status = H - 2, details = status - 2, job_y = details - job_rows;
    int list_y = 2, rows = job_y - list_y;
    if (rows < 1) {
        /* too short for everything: the list and the status only */
        details = -1;
        job_rows = 0;
        rows = status - list_y;
    }
    /* keep the selection in view (and its heading, when it is the first
     * row of its section) */
    if (m->sel >= 0) {
        int want_top = m->sel > 0 && m->rows.items[m->sel - 1].kind == PT_MROW_HEADER ? m->sel - 1 : m->sel;
        if (want_top < m->top) m->top = want_top;
        if (m->sel >= m->top + rows) m->top = m->sel - rows + 1;
    }
    if (m->top > m->rows.n - rows) m->top = m->rows.n - rows;
    if (m->top < 0) m->top = 0;
    for (int i = 0; i < rows && m->top + i < m->rows.n; i++)
        draw_row(a, &m->rows.items[m->top + i], list_y + i, W, m->top + i == m->sel);
    if (job_rows) draw_job(a, job_y, W, two);
    if (details > 0) draw_details(a, details, W);
    draw_status(a, status, W);
    draw_keys(footer, W);
    if (m->form != PT_MFORM_NONE) draw_form(a, W, H, cy, cx, show_cursor);
}
