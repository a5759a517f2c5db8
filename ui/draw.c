/*
 * draw.c — painting one frame of the app.
 *
 * The whole frame is drawn into stdscr (ncurses' virtual screen, our frame
 * buffer) from the current state, then sent with a single
 * wnoutrefresh + doupdate: ncurses compares it with what the terminal
 * shows and writes only the difference, in one burst, so nothing flickers
 * however often we redraw. Overlays are painted last into the same buffer.
 *
 * Screen rows, top to bottom:
 *   title | gauges (0, 1, 5 or 7 rows) | transcript | status rule |
 *   input (1..5 rows) | footer
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "app.h"
#include "term.h"
#include "text.h"
#include "wrap.h"

#define CAPTION_CELLS 8

/* Draw s[0..len) at (y, x) in attr, at most max cells; returns the cells
 * used. Characters are converted as text.h says, so the cells counted
 * here are the cells ncurses fills. */
static int put_text(int y, int x, const char *s, size_t len, attr_t attr, int max) {
    wchar_t buf[512];
    int n = 0, cells = 0;
    size_t i = 0;
    if (max <= 0) return 0;
    attrset(attr);
    move(y, x);
    while (i < len) {
        uint32_t cp;
        int nb = pt_ui_utf8_decode(s + i, len - i, &cp);
        int w;
        uint32_t show;
        if (cp == '\t') { show = ' '; w = 1; }
        else show = pt_cp_display(cp, &w);
        int reps = cp == '\t' ? PT_TAB_CELLS : 1;
        if (cells + w * reps > max) break;
        /* a zero-width mark first on the line has nothing to attach to */
        if (w == 0 && n == 0) { i += (size_t)nb; continue; }
        for (int r = 0; r < reps; r++) {
            if (n == (int)(sizeof buf / sizeof buf[0]) - 1) { addnwstr(buf, n); n = 0; }
            buf[n++] = (wchar_t)show;
        }
        cells += w * reps;
        i += (size_t)nb;
    }
    if (n) addnwstr(buf, n);
    attrset(A_NORMAL);
    return cells;
}

static int put_str(int y, int x, const char *s, attr_t attr, int max) {
    return put_text(y, x, s, strlen(s), attr, max);
}

static void fill(int y, int x, int n, attr_t attr) {
    if (n <= 0) return;
    attrset(attr);
    mvhline(y, x, ' ', n);
    attrset(A_NORMAL);
}

static int putf(int y, int x, attr_t attr, int max, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int putf(int y, int x, attr_t attr, int max, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return put_str(y, x, buf, attr, max);
}

static const char *hbar(void) { return pt_text_utf8() ? "\u2500" : "-"; }

static void rule(int y, int x, int n, attr_t attr) {
    const char *h = hbar();
    for (int i = 0; i < n; i++) put_str(y, x + i, h, attr, 1);
}

int pt_put_text(int y, int x, const char *s, size_t len, attr_t attr, int max) {
    return put_text(y, x, s, len, attr, max);
}
int pt_put_str(int y, int x, const char *s, attr_t attr, int max) { return put_str(y, x, s, attr, max); }
void pt_fill(int y, int x, int n, attr_t attr) { fill(y, x, n, attr); }
void pt_rule(int y, int x, int n, attr_t attr) { rule(y, x, n, attr); }

/* Share of the model's weights prepared so far, in percent; -1 before
 * the first progress report or when there is nothing to prepare. */
static int load_percent(const pt_app *a) {
    if (a->load_total == 0) return -1;
    return (int)(100.0 * (double)a->load_done / (double)a->load_total);
}

static const char *spinner(void);
const char *pt_spinner(void) { return spinner(); }

static const char *spinner(void) {
    static const char *const braille[] = {"\u280b", "\u2819", "\u2839", "\u2838", "\u283c",
                                          "\u2834", "\u2826", "\u2827", "\u2807", "\u280f"};
    static const char *const ascii[] = {"|", "/", "-", "\\"};
    double t = pt_ui_now();
    if (pt_text_utf8()) return braille[(int)(t * 10) % 10];
    return ascii[(int)(t * 8) % 4];
}

static attr_t cell_attr(int cs) {
    switch (cs) {
    case PT_CS_CAPTION: return pt_attr(S_CAPTION);
    case PT_CS_BRACKET: return pt_attr(S_BRACKET);
    case PT_CS_BAR1: return pt_attr(S_BAR1);
    case PT_CS_BAR2: return pt_attr(S_BAR2);
    case PT_CS_TEXT: return pt_attr(S_METER_TEXT);
    case PT_CS_DIM: return pt_attr(S_DIM);
    case PT_CS_GRAPH: return pt_attr(S_GRAPH);
    case PT_CS_BIG: return pt_attr(S_BIG);
    default: return pt_attr(S_NORMAL);
    }
}

static void put_styled(int y, int x, const pt_styled *s, int max) {
    size_t i = 0;
    int cells = 0;
    while (i < s->len && cells < max) {
        size_t j = i;
        while (j < s->len && s->style[j] == s->style[i]) j++;
        cells += put_text(y, x + cells, s->text + i, j - i, cell_attr(s->style[i]), max - cells);
        i = j;
    }
}

/* ---- title ---- */

/* Where the model runs, for the title bar, in at most max cells: "CPU",
 * or "OpenCL: NAME" ("OpenCL 20/30: NAME" when some layers stay on the
 * CPU), the name cut with an ellipsis when at least 8 of its cells fit,
 * else just "OpenCL"; "" when not even that fits. (An OpenCL request that
 * fell back runs no layer there: "CPU", the chat's note says why.) */
static void device_label(const pt_model_card *c, int max, char *out, size_t cap) {
    char head[40];
    const bool cl = c->n_device_layers > 0;
    if (!cl) snprintf(head, sizeof head, "CPU");
    else if (c->n_device_layers < c->n_layer)
        snprintf(head, sizeof head, "OpenCL %d/%d", c->n_device_layers, c->n_layer);
    else snprintf(head, sizeof head, "OpenCL");
    out[0] = 0;
    const int hw = (int)strlen(head);
    if (hw > max) return;
    /* the name is escaped already (worker.h) */
    const size_t len = strlen(c->device);
    const int room = max - hw - 2;   /* after "HEAD: " */
    if (!cl || (pt_str_cells(c->device, len) > room && room < 8) || !c->device[0]) {
        snprintf(out, cap, "%s", head);
    } else if (pt_str_cells(c->device, len) <= room) {
        snprintf(out, cap, "%s: %s", head, c->device);
    } else {
        size_t n = pt_str_fit(c->device, len, room - 1, NULL);
        snprintf(out, cap, "%s: %.*s%s", head, (int)n, c->device, pt_text_utf8() ? "\u2026" : ".");
    }
}

/* The title's model line in info: "NAME · arch ftype params · ctx used/size
 * · lora ...", in room cells if it can: the architecture part goes first
 * (F2's list shows it too), then the context part, then the line is cut at
 * room (no number is cut in the middle while a shorter line fits). */
static void title_info(const pt_app *a, int room, char *info, size_t cap) {
    if (!a->loaded && !a->loading) {
        snprintf(info, cap, "no model loaded (F2 to pick one)");
        return;
    }
    const char *slash = strrchr(a->model_path, '/');
    char file[1024];
    pt_shown(slash ? slash + 1 : a->model_path, file, sizeof file);
    /* card strings are escaped already (worker.h) */
    const char *name = a->loaded && a->card.name[0] ? a->card.name : file;
    if (!a->loaded) {
        snprintf(info, cap, "%.200s", name);
        return;
    }
    char params[24] = "";
    if (a->card.n_params > 0) {
        double p = (double)a->card.n_params;
        if (p >= 1e9) snprintf(params, sizeof params, " %.1fB", p / 1e9);
        else snprintf(params, sizeof params, " %.0fM", p / 1e6);
    }
    char lora[256], desc[96], ctx[64];
    pt_app_lora_summary(a, lora, sizeof lora);
    snprintf(desc, sizeof desc, " \u00b7 %s %s%s", a->card.arch, a->card.ftype, params);
    /* context used / size: the tokens in the KV cache (the worker's last numbers) */
    snprintf(ctx, sizeof ctx, " \u00b7 ctx %d/%d", a->st.have_mem ? a->st.mem.kv_tokens : 0, a->card.n_ctx);
    for (int drop = 0; drop < 3; drop++) {
        snprintf(info, cap, "%.200s%s%s%s%s", name, drop < 1 ? desc : "", drop < 2 ? ctx : "",
                 lora[0] ? " \u00b7 lora " : "", lora);
        if (!pt_text_utf8()) for (char *p = info; (p = strstr(p, "\u00b7")); ) { p[0] = ' '; p[1] = '|'; }
        if (pt_str_cells(info, strlen(info)) <= room) break;
    }
}

void pt_draw_title(pt_app *a, int y, int W) {
    attr_t t = pt_attr(S_TITLE), d = pt_attr(S_TITLE_DIM);
    fill(y, 0, W, t);
    int x = put_str(y, 0, " petrel ", t, W);
    char info[1024], right[128];
    double now = pt_ui_now();
    if (a->loading && load_percent(a) >= 0)
        snprintf(right, sizeof right, "%s loading %d%% %.1fs ", spinner(), load_percent(a), now - a->load_t0);
    else if (a->loading) snprintf(right, sizeof right, "%s loading %.1fs ", spinner(), now - a->load_t0);
    else if (a->generating) snprintf(right, sizeof right, "%s %s ", spinner(), a->st.prefilling ? "prefill" : "decode");
    else if (a->demo) snprintf(right, sizeof right, "demo ");
    else snprintf(right, sizeof right, "idle ");
    /* a running download or quantization is seen from every screen */
    char badge[48];
    pt_mscreen_job_badge(a, badge, sizeof badge);
    if (badge[0]) {
        size_t bl = strlen(badge), rl = strlen(right);
        if (bl + 2 + rl < sizeof right) {
            memmove(right + bl + 2, right, rl + 1);
            memcpy(right, badge, bl);
            memcpy(right + bl, "  ", 2);
        }
    }
    int rw = pt_str_cells(right, strlen(right));
    /* the device, left of the state: up to a third of the row, shortened
     * rather than leaving the model's line fewer than 8 cells */
    char dev[256] = "";
    if (a->loaded) {
        int dmax = W / 3;
        if (dmax > W - x - rw - 1 - 2 - 8) dmax = W - x - rw - 1 - 2 - 8;
        device_label(&a->card, dmax, dev, sizeof dev);
    }
    int dw = dev[0] ? pt_str_cells(dev, strlen(dev)) + 2 : 0;   /* with 2 cells before the state */
    int room = W - x - rw - dw - 1;
    title_info(a, room, info, sizeof info);
    if (room > 4) put_str(y, x, info, d, room);
    if (dw) put_str(y, W - rw - dw, dev, t, dw - 2);
    if (W - rw > x) put_str(y, W - rw, right, t, rw);
}

/* ---- gauges ---- */

typedef struct slot {
    pt_meter_id id;
    int row, col;          /* col -1: full width */
    pt_meter_mode mode;
} slot;

/* the layouts, htop style: which meter goes where in which mode */
static const slot normal_slots[] = {
    {PT_METER_PREFILL, 0, 0, PT_MM_BAR}, {PT_METER_DECODE, 0, 1, PT_MM_BAR},
    {PT_METER_TTFT, 1, 0, PT_MM_TEXT},   {PT_METER_LAST, 1, 1, PT_MM_TEXT},
    {PT_METER_RSS, 2, 0, PT_MM_BAR},     {PT_METER_MODEL, 2, 1, PT_MM_BAR},
    {PT_METER_CTX, 3, 0, PT_MM_BAR},     {PT_METER_KV, 3, 1, PT_MM_BAR},
    {PT_METER_SPARK, 4, -1, PT_MM_GRAPH},
};
static const slot demo_slots[] = {
    {PT_METER_PREFILL, 0, 0, PT_MM_BIG}, {PT_METER_DECODE, 0, 1, PT_MM_BIG},
    {PT_METER_TTFT, 3, 0, PT_MM_TEXT},   {PT_METER_LAST, 3, 1, PT_MM_TEXT},
    {PT_METER_SPARK, 4, -1, PT_MM_GRAPH},
    {PT_METER_RSS, 5, 0, PT_MM_BAR},     {PT_METER_MODEL, 5, 1, PT_MM_BAR},
    {PT_METER_CTX, 6, 0, PT_MM_BAR},     {PT_METER_KV, 6, 1, PT_MM_BAR},
};

/* big: text rows of a BIG meter; rows of slots placed below the big
 * meters (row >= 3) move down by big - 3 */
static int draw_slots(pt_app *a, const slot *slots, int n, int y0, int W, int big) {
    int colw = (W - 1) / 2, rows = 0;
    pt_styled line;
    for (int i = 0; i < n; i++) {
        const slot *s = &slots[i];
        const pt_meter_class *m = &pt_meters[s->id];
        pt_meter_value v;
        memset(&v, 0, sizeof v);
        m->update(&a->st, &v);
        int x = s->col <= 0 ? 0 : colw + 1;
        int w = s->col < 0 ? W : (s->col == 0 ? colw : W - colw - 1);
        int nrows = s->mode == PT_MM_BIG ? big : 1;
        int row = s->row >= 3 ? s->row + big - 3 : s->row;
        for (int r = 0; r < nrows; r++) {
            pt_meter_render(m, &v, &a->st, s->mode, CAPTION_CELLS, w, r, &line);
            put_styled(y0 + row + r, x, &line, w);
        }
        if (row + nrows > rows) rows = row + nrows;
    }
    return rows;
}

/* Returns the rows used. */
static int draw_gauges(pt_app *a, int y, int W, int H) {
    if (a->demo && W >= 60 && H >= 22) {
        /* on a big screen (a projector) the digits double in size */
        pt_big_scale = W >= 100 && H >= 36 ? 2 : 1;
        return draw_slots(a, demo_slots, (int)(sizeof demo_slots / sizeof demo_slots[0]), y, W,
                          3 * pt_big_scale);
    }
    if (W >= 72 && H >= 20)
        return draw_slots(a, normal_slots, (int)(sizeof normal_slots / sizeof normal_slots[0]), y, W, 3);
    pt_styled line;
    pt_meter_compact(&a->st, W, &line);
    put_styled(y, 0, &line, W);
    return 1;
}

/* ---- transcript ---- */

static const char *role_label(const pt_msg *m) {
    switch (m->role) {
    case PT_ROLE_USER: return "You";
    case PT_ROLE_ASSISTANT: return "petrel";
    case PT_ROLE_INFO: return "note";
    case PT_ROLE_PICTURE: return "picture";
    default: return "error";
    }
}

static attr_t role_attr(const pt_msg *m, bool label) {
    switch (m->role) {
    case PT_ROLE_USER: return pt_attr(label ? S_USER_LABEL : S_USER);
    case PT_ROLE_ASSISTANT: return pt_attr(label ? S_BOT_LABEL : S_BOT);
    case PT_ROLE_INFO: case PT_ROLE_PICTURE: return pt_attr(label ? S_INFO_LABEL : S_INFO);
    default: return pt_attr(S_ERROR);
    }
}

static void draw_tline(pt_app *a, const pt_tline *l, int y, int W, bool last_of_reply) {
    const pt_msg *m = &a->convo.msgs[l->msg];
    int x;
    switch (l->kind) {
    case PT_TL_LABEL:
        x = put_str(y, 0, role_label(m), role_attr(m, true), W);
        if (m->stopped) put_str(y, x, " [stopped]", pt_attr(S_DIM), W - x);
        else if (a->generating && l->msg == a->reply_msg && a->st.prefilling)
            put_str(y, x, " thinking...", pt_attr(S_DIM), W - x);
        break;
    case PT_TL_TEXT:
        x = PT_TEXT_INDENT + put_text(y, PT_TEXT_INDENT, m->text + l->start, l->end - l->start,
                                      role_attr(m, false), W - PT_TEXT_INDENT);
        if (last_of_reply && x < W) put_str(y, x, pt_text_utf8() ? "\u258c" : "_", pt_attr(S_DIM), 1);
        break;
    case PT_TL_CODE:
        put_str(y, 2, pt_text_utf8() ? "\u2502" : "|", pt_attr(S_CODE_BAR), 1);
        fill(y, 3, W - 3, pt_attr(S_CODE));
        x = PT_CODE_INDENT + put_text(y, PT_CODE_INDENT, m->text + l->start, l->end - l->start,
                                      pt_attr(S_CODE), W - PT_CODE_INDENT);
        if (last_of_reply && x < W) put_str(y, x, pt_text_utf8() ? "\u258c" : "_", pt_attr(S_DIM), 1);
        break;
    case PT_TL_FENCE: {
        attr_t at = pt_attr(S_CODE_BAR);
        rule(y, 2, 2, at);
        x = 4;
        if (l->end > l->start) {
            x += put_str(y, x, " ", at, 1);
            x += put_text(y, x, m->text + l->start, l->end - l->start, at, W - x - 2);
            x += put_str(y, x, " ", at, 1);
        }
        rule(y, x, W - x - 1 > 30 - x ? 30 - x : W - x - 1, at);
        break;
    }
    case PT_TL_PICTURE:
        /* the cells stay blank for the picture slot (picture.c); without
         * pictures, or once the gallery dropped it, a placeholder */
        if (l->start == 0 && (a->caps.proto == PT_GFX_NONE || !pt_gallery_find(&a->gal, m->pic_id)))
            putf(y, PT_TEXT_INDENT, pt_attr(S_DIM), W - PT_TEXT_INDENT, "[picture %dx%d%s]", m->pic_w,
                 m->pic_h, pt_gallery_find(&a->gal, m->pic_id) ? "" : ", no longer kept");
        break;
    default:
        break;
    }
}

/* The picture blocks among the visible transcript lines become slots,
 * cropped to their visible rows (picture.c, rule 6). */
static void place_pictures(pt_app *a, int y0, int rows, int first, int W) {
    if (a->caps.proto == PT_GFX_NONE || a->ov != OV_NONE) return;
    int total = a->tr.total;
    for (int r = 0; r < rows && first + r < total;) {
        const pt_tline *l = pt_transcript_line(&a->tr, first + r);
        if (l->kind != PT_TL_PICTURE) { r++; continue; }
        int n = 1;
        while (r + n < rows && first + r + n < total) {
            const pt_tline *k = pt_transcript_line(&a->tr, first + r + n);
            if (k->kind != PT_TL_PICTURE || k->msg != l->msg) break;
            n++;
        }
        const pt_msg *m = &a->convo.msgs[l->msg];
        const pt_picture *p = pt_gallery_find(&a->gal, m->pic_id);
        if (p) {
            int block = (int)l->end, r0 = (int)l->start, r1 = r0 + n;
            int py0 = (int)((long)p->h * r0 / block), py1 = (int)((long)p->h * r1 / block);
            if (py1 > py0) {
                pt_pic_slot s = {.id = p->id,
                                 .rect = {y0 + r, PT_TEXT_INDENT, n, pt_picture_cols(W, p->w, p->h, block)},
                                 .rgb = p->rgb + (size_t)py0 * (size_t)p->w * 3,
                                 .w = p->w, .h = py1 - py0, .stride = p->w * 3, .gen = p->gen};
                /* a crop is other pixels than the whole: fold the crop into gen */
                s.gen = p->gen * 4096 + (uint64_t)(r0 * 64 + r1);
                pt_pic_place(&a->pics, &s);
            }
        }
        r += n;
    }
}

static void draw_transcript(pt_app *a, int y0, int rows, int W) {
    pt_transcript_layout(&a->tr, &a->convo, W);
    a->view_rows = rows;
    int total = a->tr.total;
    int max_scroll = total > rows ? total - rows : 0;
    if (a->scroll > max_scroll) a->scroll = max_scroll;
    if (a->scroll < 0) a->scroll = 0;
    int first = total - rows - a->scroll;
    if (first < 0) first = 0;
    /* the reply's last text line gets the streaming cursor */
    int cursor_line = -1;
    if (a->generating && a->reply_msg >= 0 && a->reply_msg < a->convo.n) {
        for (int i = total - 1; i >= 0; i--) {
            const pt_tline *l = pt_transcript_line(&a->tr, i);
            if (l->msg == a->reply_msg && (l->kind == PT_TL_TEXT || l->kind == PT_TL_CODE)) { cursor_line = i; break; }
            if (l->msg < a->reply_msg) break;
        }
    }
    if (total == 0) {
        const char *hello[] = {
            "Type a message and press Enter. Esc stops a reply.",
            "/help lists commands; F1 (or ^G) shows keys.",
        };
        for (int i = 0; i < 2 && i < rows; i++)
            put_str(y0 + rows / 2 - 1 + i, 2, hello[i], pt_attr(S_DIM), W - 2);
        return;
    }
    for (int r = 0; r < rows && first + r < total; r++) {
        const pt_tline *l = pt_transcript_line(&a->tr, first + r);
        draw_tline(a, l, y0 + r, W, first + r == cursor_line);
    }
    place_pictures(a, y0, rows, first, W);
}

/* ---- status rule, input, footer ---- */

static void draw_status(pt_app *a, int y, int W) {
    char msg[400], right[64] = "";
    bool err = false;
    double now = pt_ui_now();
    if (a->studio.running) {
        char p[160];
        pt_studio_progress_text(a, p, sizeof p);
        snprintf(msg, sizeof msg, "%s imagine: %s  Esc stops", spinner(), p);
        if (a->studio.stop_requested) snprintf(msg, sizeof msg, "%s stopping...", spinner());
    } else if (a->generating) {
        char r[24];
        if (a->st.prefilling)
            snprintf(msg, sizeof msg, "%s prefilling %d tokens (%d cached) %.1fs  Esc stops", spinner(),
                     a->live.n_prompt, a->live.n_cached, now - a->turn_t0);
        else {
            pt_fmt_rate(a->st.live_decode_tps, r, sizeof r);
            snprintf(msg, sizeof msg, "%s %d tokens  %s t/s  Esc stops", spinner(), a->live.n_chunks, r);
        }
        if (a->stop_requested) snprintf(msg, sizeof msg, "%s stopping...", spinner());
    } else if (a->loading) {
        if (load_percent(a) >= 0) {
            char done[24], total[24];
            pt_fmt_bytes(a->load_done, done, sizeof done);
            pt_fmt_bytes(a->load_total, total, sizeof total);
            snprintf(msg, sizeof msg, "%s loading model... %d%%, %s of %s weights ready, %.1fs", spinner(),
                     load_percent(a), done, total, now - a->load_t0);
        } else {
            snprintf(msg, sizeof msg, "%s loading model... %.1fs", spinner(), now - a->load_t0);
        }
    } else {
        snprintf(msg, sizeof msg, "%s", a->status);
        err = a->status_err;
    }
    if (a->scroll > 0) snprintf(right, sizeof right, " %d more below (End) ", a->scroll);
    int rw = pt_str_cells(right, strlen(right));
    attr_t ra = pt_attr(S_DIM);
    rule(y, 0, W, ra);
    /* the scroll indicator wins over a long message */
    int room = W - (rw ? rw + 2 : 0) - 1;
    int x = 2;
    if (msg[0] && room > x + 4) {
        x += put_str(y, x, " ", ra, room - x);
        x += put_str(y, x, msg, pt_attr(err ? S_STATUS_ERR : S_STATUS), room - x - 1);
        put_str(y, x, " ", ra, room - x);
    }
    if (rw && W - rw - 2 >= 0) put_str(y, W - rw - 2, right, pt_attr(S_INFO_LABEL), rw);
}

/* Lays out and draws the input; returns the cursor position. */
static void draw_input(pt_app *a, int y0, int rows, int W, int *cy, int *cx) {
    pt_editor *e = &a->ed;
    int iw = W - 3;
    if (iw < 1) iw = 1;
    a->input_width = iw;
    /* every line of the input, however long (a pasted megabyte has tens
     * of thousands): the cursor's row must be found to show it */
    pt_wrap_line few[256], *lines = few;
    int n = pt_wrap_chars(e->buf, e->len, iw, few, 256);
    if (n > 256) {
        pt_wrap_line *all = malloc(sizeof *all * (size_t)n);
        if (all) { pt_wrap_chars(e->buf, e->len, iw, all, n); lines = all; }
        else n = 256;
    }
    int row, col;
    pt_wrap_locate(lines, n, e->buf, e->cur, &row, &col);
    int first = row - rows + 1;
    if (first < 0) first = 0;
    for (int r = 0; r < rows; r++) {
        int li = first + r;
        if (li == 0) put_str(y0 + r, 0, ">", pt_attr(S_PROMPT), 1);
        else if (li < n) put_str(y0 + r, 0, pt_text_utf8() ? "\u2026" : ".", pt_attr(S_DIM), 1);
        if (li < n) put_text(y0 + r, 2, e->buf + lines[li].start, lines[li].end - lines[li].start,
                             pt_attr(S_NORMAL), iw);
    }
    if (e->len == 0) {
        const char *hint = a->generating ? "replying... Esc stops"
                         : a->loading ? "loading the model..."
                         : a->demo ? "demo mode: Esc or F5 leaves it"
                         : "message, or /help";
        put_str(y0, 2, hint, pt_attr(S_DIM), iw);
    }
    *cy = y0 + row - first;
    *cx = 2 + col;
    if (lines != few) free(lines);
}

typedef struct key_hint { const char *fkey, *ctrl, *label; bool narrow; } key_hint;
static const key_hint hints[] = {
    {"F1", "^G", "Help", true}, {"F2", "^O", "Models", true}, {"F3", "^S", "Save", false},
    {"F4", "^R", "Reset", false}, {"F5", "^T", "Demo", false}, {"F6", "^X", "Studio", true},
    {"F10", "^Q", "Quit", true},
    {"Esc", "Esc", "Stop", true},
};
#define N_HINTS ((int)(sizeof hints / sizeof hints[0]))

/* variant 0: "F1/^G Help", 1: "F1 Help", 2: "^G Help", 3: "^G Help" for
 * the most used keys only; 4 (tried after 0, fits 80 columns): the most
 * used keys as "F1/^G Help", the others as "F3 Save", without "Esc Stop"
 * (the input line and the status say it while something runs) */
static bool hint_shown(const key_hint *h, int variant) {
    if (variant == 3 && !h->narrow) return false;
    if (variant == 4 && !strcmp(h->fkey, "Esc")) return false;
    return true;
}

static void hint_key(const key_hint *h, int variant, char *buf, size_t cap) {
    bool both = variant == 0 || (variant == 4 && h->narrow);
    if (both && strcmp(h->fkey, h->ctrl)) snprintf(buf, cap, "%s/%s", h->fkey, h->ctrl);
    else snprintf(buf, cap, "%s", variant == 1 || variant == 4 ? h->fkey : h->ctrl);
}

static int hints_width(int variant) {
    int w = 0;
    char key[16];
    for (int i = 0; i < N_HINTS; i++) {
        if (!hint_shown(&hints[i], variant)) continue;
        hint_key(&hints[i], variant, key, sizeof key);
        w += (int)(strlen(key) + 1 + strlen(hints[i].label) + 1);
    }
    return w;
}

static void draw_footer(pt_app *a, int y, int W) {
    (void)a;
    static const int order[] = {0, 4, 1, 2};
    int variant = 3;
    for (int i = 0; i < 4; i++) if (hints_width(order[i]) <= W - 1) { variant = order[i]; break; }
    int x = 0;
    fill(y, 0, W - 1, pt_attr(S_KEY_LABEL));
    for (int i = 0; i < N_HINTS && x < W - 1; i++) {
        const key_hint *h = &hints[i];
        if (!hint_shown(h, variant)) continue;
        char key[16];
        hint_key(h, variant, key, sizeof key);
        x += put_str(y, x, key, pt_attr(S_KEY), W - 1 - x);
        x += put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
        x += put_str(y, x, h->label, pt_attr(S_KEY_LABEL), W - 1 - x);
        x += put_str(y, x, " ", pt_attr(S_KEY_LABEL), W - 1 - x);
    }
}

/* ---- overlays ---- */

void pt_draw_box(int y, int x, int h, int w, const char *title) {
    attr_t b = pt_attr(S_BOX);
    for (int r = 0; r < h; r++) fill(y + r, x, w, pt_attr(S_NORMAL));
    attrset(b);
    mvaddch(y, x, ACS_ULCORNER);
    mvhline(y, x + 1, ACS_HLINE, w - 2);
    mvaddch(y, x + w - 1, ACS_URCORNER);
    mvvline(y + 1, x, ACS_VLINE, h - 2);
    mvvline(y + 1, x + w - 1, ACS_VLINE, h - 2);
    mvaddch(y + h - 1, x, ACS_LLCORNER);
    mvhline(y + h - 1, x + 1, ACS_HLINE, w - 2);
    mvaddch(y + h - 1, x + w - 1, ACS_LRCORNER);
    attrset(A_NORMAL);
    if (title) {
        char t[128];
        snprintf(t, sizeof t, " %s ", title);
        put_str(y, x + 2, t, b | A_BOLD, w - 4);
    }
}

static const char *const help_keys[] = {
    "Keys",
    "  Enter          send the message",
    "  ^J, Alt-Enter  new line in the message (or end a line with \\)",
    "  Esc, ^C        stop the reply being written",
    "  Up/Down        move in the message, then through history",
    "  PgUp/PgDn      scroll the conversation (mouse wheel too)",
    "  Home/End       line start/end; with an empty input: top/bottom",
    "  ^A ^E ^U ^K ^W start, end, kill to start/end, kill word",
    "  Tab            complete a /command",
    "  F1  or ^G      this help",
    "  F2  or ^O      models: switch, download, quantize, delete",
    "  F3  or ^S      save the conversation",
    "  F4  or ^R      new conversation",
    "  F5  or ^T      demo mode",
    "  F6  or ^X      image studio (and back to the chat)",
    "  F7             LoRA adapters: Space on/off, +/- scale (/lora)",
    "  F8  /  F9      regenerate the last reply / edit the last message",
    "  F10 or ^Q      quit;  ^L  redraw;  ^Z  suspend",
    "",
    "Image studio (F6 or ^X)",
    "  Tab, Up/Down   next / previous field",
    "  Left/Right,+/- change steps, CFG, seed, size, sampler",
    "  Enter          draw the picture (from any field)",
    "  Esc, ^C        stop the picture being drawn (else back to chat)",
    "  PgUp/PgDn      earlier / later pictures in the gallery",
    "  on the gallery: Left/Right pick, v view large, s save PNG,",
    "                 r re-roll (new seed), c copy its settings to the form",
    "",
    "Models (F2, ^O or /models)",
    "  Enter          switch the chat to the model; download one not here",
    "  d  x           download (resumes a partial one)  /  cancel",
    "  q  c           quantize (a form)  /  convert (a form)",
    "  D or Del       delete the model (asks first)",
    "  r  Esc         rescan the folder  /  back",
    "",
    "Commands",
};

static void draw_help(pt_app *a, int W, int H) {
    int bw = W - 4 < 78 ? W - 4 : 78, bh = H - 2;
    if (bw < 20 || bh < 5) return;
    int bx = (W - bw) / 2, by = 1;
    pt_draw_box(by, bx, bh, bw, "Help (Esc closes)");
    char cmds[4096];
    pt_slash_help(true, cmds, sizeof cmds);
    /* lines: the key table, then the command list */
    const char *lines[128];
    int lens[128], n = 0;
    for (size_t i = 0; i < sizeof help_keys / sizeof help_keys[0]; i++) {
        lines[n] = help_keys[i];
        lens[n++] = (int)strlen(help_keys[i]);
    }
    for (char *p = cmds; *p && n < 128;) {
        char *e = strchr(p, '\n');
        int l = e ? (int)(e - p) : (int)strlen(p);
        lines[n] = p;
        lens[n++] = l;
        p += l + (e ? 1 : 0);
    }
    int rows = bh - 2;
    int max_scroll = n > rows ? n - rows : 0;
    if (a->help_scroll > max_scroll) a->help_scroll = max_scroll;
    if (a->help_scroll < 0) a->help_scroll = 0;
    for (int r = 0; r < rows && a->help_scroll + r < n; r++) {
        int i = a->help_scroll + r;
        bool head = lines[i][0] && lines[i][0] != ' ';
        put_text(by + 1 + r, bx + 2, lines[i], (size_t)lens[i],
                 head ? pt_attr(S_CAPTION) | A_BOLD : pt_attr(S_NORMAL), bw - 4);
    }
}

/* Frame bookkeeping of the picture slots: a resize, a screen switch or
 * an overlay's coming or going makes every picture stale (picture.c,
 * rule 4). */
static void pictures_begin(pt_app *a, int W, int H) {
    pt_pic_begin(&a->pics);
    if (W != a->last_W || H != a->last_H || a->screen != a->last_screen || a->ov != a->last_ov)
        pt_pic_invalidate(&a->pics);
    a->last_W = W;
    a->last_H = H;
    a->last_screen = a->screen;
    a->last_ov = a->ov;
}

/* doupdate, with the pictures' wiping before and sending after it. */
static void update(pt_app *a) {
    pt_pic_plan plan;
    pt_pic_before_update(&a->pics, &a->caps, &plan);
    wnoutrefresh(stdscr);
    doupdate();
    pt_pic_after_update(&a->pics, &a->caps, &plan);
    a->frames++;
}

void pt_draw(pt_app *a) {
    int W = COLS, H = LINES;
    erase();
    pictures_begin(a, W, H);
    /* a picture block takes 10 rows from 24 lines up, a third of the
     * screen below (so a whole picture message fits in a 40x15
     * transcript); 1 row (a placeholder) without pictures */
    a->tr.pic_max_rows = a->caps.proto == PT_GFX_NONE ? 1 : H >= 24 ? 10 : H / 3 > 3 ? H / 3 : 3;
    if (W < 20 || H < 6) {
        put_str(0, 0, "petrel: enlarge", pt_attr(S_NORMAL), W);
        putf(1 < H ? 1 : 0, 0, pt_attr(S_DIM), W, "%dx%d", W, H);
        curs_set(0);
        update(a);
        return;
    }
    int cy = 0, cx = 0;
    bool cursor = true;
    if (a->screen == SCREEN_STUDIO) {
        pt_studio_draw(a, W, H, &cy, &cx, &cursor);
    } else if (a->screen == SCREEN_MODELS) {
        pt_mscreen_draw(a, W, H, &cy, &cx, &cursor);
    } else {
        int y = 0;
        pt_draw_title(a, y++, W);
        y += draw_gauges(a, y, W, H);
        /* input rows: what the text needs, at most 5 and a third of the rest */
        int iw = W - 3;
        pt_wrap_line tmp[8];
        int need = pt_wrap_chars(a->ed.buf, a->ed.len, iw, tmp, 8);
        int space = H - y - 2;               /* minus status rule and footer */
        int in_rows = need < 5 ? need : 5;
        if (in_rows > space / 3) in_rows = space / 3;
        if (in_rows < 1) in_rows = 1;
        int footer_y = H - 1, input_y = footer_y - in_rows, status_y = input_y - 1;
        int tr_rows = status_y - y;
        if (tr_rows > 0) draw_transcript(a, y, tr_rows, W);
        else a->view_rows = 1;
        draw_status(a, status_y, W);
        draw_input(a, input_y, in_rows, W, &cy, &cx);
        draw_footer(a, footer_y, W);
    }
    if (a->ov == OV_HELP) draw_help(a, W, H);
    if (a->ov == OV_LORA) pt_lora_picker_draw(a, W, H);
    if (a->ov == OV_NONE && cursor) {
        curs_set(1);
        move(cy, cx < W ? cx : W - 1);
    } else {
        curs_set(0);
    }
    update(a);
}
