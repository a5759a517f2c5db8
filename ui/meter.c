/* meter.c — gauge table, rendering and formatting (see meter.h). */
#include "meter.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "text.h"

/* ---- formatting ---- */

void pt_fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
    static const char units[] = "BKMGT";
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) { v /= 1024.0; u++; }
    if (u == 0) snprintf(buf, cap, "%lluB", (unsigned long long)bytes);
    else if (v < 10) snprintf(buf, cap, "%.2f%c", v, units[u]);
    else if (v < 100) snprintf(buf, cap, "%.1f%c", v, units[u]);
    else snprintf(buf, cap, "%.0f%c", v, units[u]);
}

void pt_fmt_rate(double tps, char *buf, size_t cap) {
    if (tps < 0) snprintf(buf, cap, "-");
    else if (tps < 10) snprintf(buf, cap, "%.2f", tps);
    else if (tps < 100) snprintf(buf, cap, "%.1f", tps);
    else snprintf(buf, cap, "%.0f", tps);
}

void pt_fmt_secs(double s, char *buf, size_t cap) {
    if (s < 0) snprintf(buf, cap, "-");
    else if (s < 1) snprintf(buf, cap, "%.0fms", s * 1000);
    else if (s < 100) snprintf(buf, cap, "%.2fs", s);
    else snprintf(buf, cap, "%.0fs", s);
}

/* ---- stats helpers ---- */

void pt_spark_push(pt_ui_stats *st, float v) {
    if (st->n_spark == PT_SPARK_MAX) {
        memmove(st->spark, st->spark + 1, sizeof st->spark[0] * (PT_SPARK_MAX - 1));
        st->n_spark--;
    }
    st->spark[st->n_spark++] = v;
}

static void grow(double *scale, double v) {
    /* round the scale up to 1, 2 or 5 x 10^k so bars do not jitter */
    if (v <= *scale) return;
    double s = 1;
    while (s < v) {
        if (s * 2 >= v) { s *= 2; break; }
        if (s * 5 >= v) { s *= 5; break; }
        s *= 10;
    }
    *scale = s;
}

void pt_stats_scale(pt_ui_stats *st) {
    grow(&st->prefill_scale, st->live_prefill_tps);
    grow(&st->prefill_scale, st->last_prefill_tps);
    grow(&st->decode_scale, st->live_decode_tps);
    grow(&st->decode_scale, st->last_decode_tps);
}

/* ---- the meters ---- */

static void up_prefill(const pt_ui_stats *st, pt_meter_value *v) {
    double r = st->generating ? st->live_prefill_tps : (st->have_last ? st->last_prefill_tps : -1);
    char n[24];
    v->n_seg = 1;
    v->total = st->prefill_scale > 0 ? st->prefill_scale : 1;
    if (st->generating && st->prefilling) {
        v->v[0] = 0;
        snprintf(v->text, sizeof v->text, "prefilling...");
        snprintf(v->brief, sizeof v->brief, "...");
        return;
    }
    if (r < 0) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "- t/s");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    v->v[0] = r;
    pt_fmt_rate(r, n, sizeof n);
    snprintf(v->text, sizeof v->text, "%s t/s", n);
    snprintf(v->brief, sizeof v->brief, "%s", n);
}

static void up_decode(const pt_ui_stats *st, pt_meter_value *v) {
    char n[24];
    v->n_seg = 1;
    v->total = st->decode_scale > 0 ? st->decode_scale : 1;
    double r = st->generating ? st->live_decode_tps : (st->have_last ? st->last_decode_tps : -1);
    if (r < 0) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "%s", st->generating ? "waiting..." : "- t/s");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    v->v[0] = r;
    pt_fmt_rate(r, n, sizeof n);
    snprintf(v->text, sizeof v->text, "%s t/s %s", n, st->generating ? "live" : "last");
    snprintf(v->brief, sizeof v->brief, "%s", n);
}

static void up_ttft(const pt_ui_stats *st, pt_meter_value *v) {
    char a[24], b[24];
    double t = st->generating ? st->live_ttft : (st->have_last ? st->last_ttft : -1);
    if (t < 0) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "%s", st->generating ? "waiting..." : "-");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    pt_fmt_secs(t, a, sizeof a);
    if (st->generating && st->have_last) {
        pt_fmt_secs(st->last_ttft, b, sizeof b);
        snprintf(v->text, sizeof v->text, "%s (last %s)", a, b);
    } else {
        snprintf(v->text, sizeof v->text, "%s", a);
    }
    snprintf(v->brief, sizeof v->brief, "%s", a);
}

static void up_last(const pt_ui_stats *st, pt_meter_value *v) {
    char p[12], d[12];
    if (!st->have_last) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "no reply yet");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    pt_fmt_rate(st->last_prefill_tps, p, sizeof p);
    pt_fmt_rate(st->last_decode_tps, d, sizeof d);
    snprintf(v->text, sizeof v->text, "%d+%d tok pf %.8s dc %.8s t/s",
             st->last_n_prompt, st->last_n_gen, p, d);
    snprintf(v->brief, sizeof v->brief, "%d tok", st->last_n_gen);
}

static void up_rss(const pt_ui_stats *st, pt_meter_value *v) {
    char a[24], b[24];
    if (!st->rss) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "-");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    v->n_seg = 1;
    v->v[0] = (double)st->rss;
    v->total = st->ram_total ? (double)st->ram_total : (double)st->rss_peak;
    pt_fmt_bytes(st->rss, a, sizeof a);
    pt_fmt_bytes(st->rss_peak, b, sizeof b);
    snprintf(v->text, sizeof v->text, "%s peak %s", a, b);
    snprintf(v->brief, sizeof v->brief, "%s", a);
}

static void up_model(const pt_ui_stats *st, pt_meter_value *v) {
    char a[12], b[12];
    if (!st->have_mem || !st->mem.model_mapped) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "no model");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    v->n_seg = 1;
    v->v[0] = (double)st->mem.model_resident;
    v->total = (double)st->mem.model_mapped;
    pt_fmt_bytes(st->mem.model_resident, a, sizeof a);
    pt_fmt_bytes(st->mem.model_mapped, b, sizeof b);
    snprintf(v->text, sizeof v->text, "%s/%s resident", a, b);
    snprintf(v->brief, sizeof v->brief, "%s/%s", a, b);
}

static void up_kv(const pt_ui_stats *st, pt_meter_value *v) {
    char a[12];
    if (!st->have_mem) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "-");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    /* Two segments: the pages in RAM, then those only in the spill file;
     * full scale is the RAM budget (--kv-ram) when one is set and the
     * cache fits it, else the whole cache. Pages read ahead from disk
     * move bytes from the second segment to the first. */
    const pt_kv_stats *kv = &st->kv;
    char d[12], b[12];
    v->n_seg = 2;
    v->v[0] = (double)kv->ram_bytes;
    v->v[1] = (double)kv->disk_bytes;
    const double all = v->v[0] + v->v[1];
    v->total = kv->budget_bytes && (double)kv->budget_bytes > all ? (double)kv->budget_bytes : all;
    pt_fmt_bytes(kv->ram_bytes, a, sizeof a);
    if (!kv->budget_bytes && !kv->disk_bytes) {
        snprintf(v->text, sizeof v->text, "%s ram", a);
        snprintf(v->brief, sizeof v->brief, "%s", a);
        return;
    }
    pt_fmt_bytes(kv->disk_bytes, d, sizeof d);
    pt_fmt_bytes(kv->budget_bytes, b, sizeof b);
    snprintf(v->text, sizeof v->text, "%s ram %s disk /%s", a, d, b);
    snprintf(v->brief, sizeof v->brief, "%s+%s", a, d);
}

static void up_ctx(const pt_ui_stats *st, pt_meter_value *v) {
    if (!st->have_mem || st->mem.kv_capacity <= 0) {
        v->dim = true;
        snprintf(v->text, sizeof v->text, "-");
        snprintf(v->brief, sizeof v->brief, "-");
        return;
    }
    v->n_seg = 1;
    v->v[0] = st->mem.kv_tokens;
    v->total = st->mem.kv_capacity;
    snprintf(v->text, sizeof v->text, "%d/%d tok", st->mem.kv_tokens, st->mem.kv_capacity);
    snprintf(v->brief, sizeof v->brief, "%d/%d", st->mem.kv_tokens, st->mem.kv_capacity);
}

static void up_spark(const pt_ui_stats *st, pt_meter_value *v) {
    float peak = 0;
    for (int i = 0; i < st->n_spark; i++) if (st->spark[i] > peak) peak = st->spark[i];
    char n[24];
    pt_fmt_rate(peak, n, sizeof n);
    v->total = peak;
    if (st->n_spark == 0) v->dim = true;
    snprintf(v->text, sizeof v->text, "max %s", n);
    snprintf(v->brief, sizeof v->brief, "%s", n);
}

const pt_meter_class pt_meters[PT_METER_COUNT] = {
    [PT_METER_PREFILL] = {"Prefill", "pf", up_prefill, PT_MM_BAR | PT_MM_TEXT | PT_MM_BIG},
    [PT_METER_DECODE] = {"Decode", "dc", up_decode, PT_MM_BAR | PT_MM_TEXT | PT_MM_BIG},
    [PT_METER_TTFT] = {"TTFT", "ttft", up_ttft, PT_MM_TEXT | PT_MM_BIG},
    [PT_METER_LAST] = {"Last", "last", up_last, PT_MM_TEXT},
    [PT_METER_RSS] = {"RSS", "rss", up_rss, PT_MM_BAR | PT_MM_TEXT},
    [PT_METER_MODEL] = {"Model", "mdl", up_model, PT_MM_BAR | PT_MM_TEXT},
    [PT_METER_KV] = {"KV", "kv", up_kv, PT_MM_BAR | PT_MM_TEXT},
    [PT_METER_CTX] = {"Context", "ctx", up_ctx, PT_MM_BAR | PT_MM_TEXT},
    [PT_METER_SPARK] = {"Rate", "rate", up_spark, PT_MM_GRAPH | PT_MM_TEXT},
};

/* ---- styled lines ---- */

void pt_styled_clear(pt_styled *s) { s->len = 0; s->cells = 0; s->text[0] = 0; }

int pt_styled_add(pt_styled *s, const char *text, int style, int max_cells) {
    int added = 0;
    size_t i = 0, n = strlen(text);
    while (i < n) {
        uint32_t cp;
        int nb = pt_ui_utf8_decode(text + i, n - i, &cp);
        int w = pt_cp_width(cp);
        if (added + w > max_cells || s->len + (size_t)nb >= PT_STYLED_CAP) break;
        memcpy(s->text + s->len, text + i, (size_t)nb);
        memset(s->style + s->len, style, (size_t)nb);
        s->len += (size_t)nb;
        added += w;
        i += (size_t)nb;
    }
    s->text[s->len] = 0;
    s->cells += added;
    return added;
}

void pt_styled_pad(pt_styled *s, int width) {
    while (s->cells < width && s->len + 1 < PT_STYLED_CAP) {
        s->text[s->len] = ' ';
        s->style[s->len] = PT_CS_BLANK;
        s->len++;
        s->cells++;
    }
    s->text[s->len] = 0;
}

static void render_caption(const pt_meter_class *m, int caption_cells, pt_styled *out) {
    if (caption_cells <= 0) return;
    int n = pt_styled_add(out, m->caption, PT_CS_CAPTION, caption_cells);
    while (n++ < caption_cells) pt_styled_add(out, " ", PT_CS_BLANK, 1);
}

/* htop's bar: [|||||||||      text] with the text right-aligned over the
 * bar; cells under the text take the text style. */
static void render_bar(const pt_meter_value *v, int inner, pt_styled *out) {
    const char *text = v->text;
    int tcells = pt_str_cells(text, strlen(text));
    if (tcells > inner) { text = v->brief; tcells = pt_str_cells(text, strlen(text)); }
    if (tcells > inner) { text = ""; tcells = 0; }
    int fill1 = 0, fill2 = 0;
    if (v->total > 0 && !v->dim) {
        double a = v->v[0] / v->total, b = (v->v[0] + (v->n_seg > 1 ? v->v[1] : 0)) / v->total;
        if (a > 1) a = 1;
        if (b > 1) b = 1;
        fill1 = (int)(a * inner + 0.5);
        fill2 = (int)(b * inner + 0.5) - fill1;
        /* a non-zero value always shows at least one bar cell */
        if (fill1 == 0 && v->v[0] > 0) { fill1 = 1; if (fill2 > 0) fill2--; }
        if (fill1 + fill2 > inner) fill2 = inner - fill1;
    }
    pt_styled_add(out, "[", PT_CS_BRACKET, 1);
    int tstart = inner - tcells;
    for (int c = 0; c < tstart; c++) {
        if (c < fill1) pt_styled_add(out, "|", PT_CS_BAR1, 1);
        else if (c < fill1 + fill2) pt_styled_add(out, "|", PT_CS_BAR2, 1);
        else pt_styled_add(out, " ", PT_CS_BLANK, 1);
    }
    if (tcells) pt_styled_add(out, text, v->dim ? PT_CS_DIM : PT_CS_TEXT, tcells);
    pt_styled_add(out, "]", PT_CS_BRACKET, 1);
}

static void render_graph(const pt_ui_stats *st, int cells, pt_styled *out) {
    static const char *const blocks[9] = {" ", "\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[] = " ._-=+*#@";
    bool utf8 = pt_text_utf8();
    int n = st->n_spark < cells ? st->n_spark : cells;
    float peak = 0;
    for (int i = st->n_spark - n; i < st->n_spark; i++)
        if (st->spark[i] > peak) peak = st->spark[i];
    for (int c = 0; c < cells - n; c++) pt_styled_add(out, " ", PT_CS_BLANK, 1);
    for (int i = st->n_spark - n; i < st->n_spark; i++) {
        int lvl = peak > 0 ? (int)(st->spark[i] / peak * 8 + 0.5f) : 0;
        if (lvl < 0) lvl = 0;
        if (lvl > 8) lvl = 8;
        if (lvl == 0 && st->spark[i] > 0) lvl = 1;
        char a[2] = {ascii[lvl], 0};
        pt_styled_add(out, utf8 ? blocks[lvl] : a, PT_CS_GRAPH, 1);
    }
}

void pt_meter_render(const pt_meter_class *m, const pt_meter_value *v, const pt_ui_stats *st,
                     pt_meter_mode mode, int caption_cells, int width, int row, pt_styled *out) {
    pt_styled_clear(out);
    if (width <= 0) return;
    if (!(m->modes & (unsigned)mode)) mode = PT_MM_TEXT;
    if (mode == PT_MM_BIG) {
        char buf[PT_STYLED_CAP / 2];
        if (row == 0) render_caption(m, caption_cells, out);
        else for (int i = 0; i < caption_cells; i++) pt_styled_add(out, " ", PT_CS_BLANK, 1);
        pt_big_text(v->text, row, pt_big_scale, pt_text_utf8(), buf, sizeof buf);
        pt_styled_add(out, buf, v->dim ? PT_CS_DIM : PT_CS_BIG, width - out->cells);
        pt_styled_pad(out, width);
        return;
    }
    if (caption_cells > width - 3) caption_cells = 0;
    render_caption(m, caption_cells, out);
    int rest = width - out->cells;
    switch (mode) {
    case PT_MM_BAR:
        if (rest >= 3) render_bar(v, rest - 2, out);
        break;
    case PT_MM_GRAPH: {
        /* the sparkline, then the peak rate */
        int tcells = pt_str_cells(v->text, strlen(v->text));
        int g = rest - tcells - 1;
        if (g >= 4) {
            render_graph(st, g, out);
            pt_styled_add(out, " ", PT_CS_BLANK, 1);
            pt_styled_add(out, v->text, v->dim ? PT_CS_DIM : PT_CS_TEXT, tcells);
        } else {
            render_graph(st, rest, out);
        }
        break;
    }
    default: {
        const char *t = v->text;
        if (pt_str_cells(t, strlen(t)) > rest) t = v->brief;
        pt_styled_add(out, t, v->dim ? PT_CS_DIM : PT_CS_TEXT, rest);
        break;
    }
    }
    pt_styled_pad(out, width);
}

void pt_meter_compact(const pt_ui_stats *st, int width, pt_styled *out) {
    static const pt_meter_id order[] = {PT_METER_DECODE, PT_METER_PREFILL, PT_METER_TTFT,
                                        PT_METER_RSS, PT_METER_CTX, PT_METER_KV, PT_METER_MODEL};
    pt_styled_clear(out);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const pt_meter_class *m = &pt_meters[order[i]];
        pt_meter_value v;
        memset(&v, 0, sizeof v);
        m->update(st, &v);
        int need = (out->cells ? 1 : 0) + pt_str_cells(m->brief, strlen(m->brief)) + 1 +
                   pt_str_cells(v.brief, strlen(v.brief));
        if (out->cells + need > width) break;
        if (out->cells) pt_styled_add(out, " ", PT_CS_BLANK, 1);
        pt_styled_add(out, m->brief, PT_CS_CAPTION, width);
        pt_styled_add(out, " ", PT_CS_BLANK, 1);
        pt_styled_add(out, v.brief, v.dim ? PT_CS_DIM : PT_CS_TEXT, width);
    }
    pt_styled_pad(out, width);
}

/* ---- large digits ---- */

/* Each glyph is 3 text rows x 3 columns of half blocks: 'F' full block,
 * 'T' upper half, 'B' lower half, ' ' empty. Read as a bitmap it is 6
 * pixel rows x 3 pixel columns (a text row holds two pixel rows), which
 * scale 2 doubles both ways and draws again with half blocks. */
static const char *big_glyph(char c, int row) {
    static const char *const digits[10][3] = {
        {"FTF", "F F", "TTT"}, {"TF ", " F ", "TTT"}, {"TTF", "FTT", "TTT"},
        {"TTF", " TF", "TTT"}, {"F F", "TTF", "  T"}, {"FTT", "TTF", "TTT"},
        {"FTT", "FTF", "TTT"}, {"TTF", "  F", "  T"}, {"FTF", "FTF", "TTT"},
        {"FTF", "TTF", "TTT"},
    };
    if (c >= '0' && c <= '9') return digits[c - '0'][row];
    if (c == '.') return row == 2 ? "T" : " ";
    if (c == '-') return row == 1 ? "TT" : "  ";
    return NULL;
}

int pt_big_scale = 1;

/* pixel (py, px) of glyph c, py in 0..5 */
static int big_pixel(char c, int py, int px) {
    const char *g = big_glyph(c, py / 2);
    char k = g[px];
    if (k == 'F') return 1;
    if (k == 'T') return py % 2 == 0;
    if (k == 'B') return py % 2 == 1;
    return 0;
}

int pt_big_text(const char *s, int row, int scale, bool utf8, char *out, size_t cap) {
    size_t at = 0;
    int cells = 0;
    if (cap == 0) return 0;
    if (scale < 1) scale = 1;
    int last = 3 * scale - 1;
    for (const char *p = s; *p; p++) {
        const char *g0 = big_glyph(*p, 0);
        if (!g0) {
            /* other characters (units) are drawn small on the bottom row */
            if (at + 2 >= cap) break;
            out[at++] = row == last ? *p : ' ';
            cells++;
            continue;
        }
        int w = (int)strlen(g0) * scale;
        for (int x = 0; x < w; x++) {
            /* the two pixel rows this text row shows, in scaled pixels */
            int top = big_pixel(*p, (2 * row) / scale, x / scale);
            int bot = big_pixel(*p, (2 * row + 1) / scale, x / scale);
            const char *piece = top && bot ? (utf8 ? "\u2588" : "#")
                              : top ? (utf8 ? "\u2580" : "\"")
                              : bot ? (utf8 ? "\u2584" : "_") : " ";
            size_t n = strlen(piece);
            if (at + n + 2 >= cap) goto done;
            memcpy(out + at, piece, n);
            at += n;
            cells++;
        }
        if (p[1] && big_glyph(p[1], 0)) { out[at++] = ' '; cells++; }
    }
done:
    out[at] = 0;
    return cells;
}

/* ---- process memory ---- */

bool pt_proc_mem(uint64_t *rss, uint64_t *peak) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return false;
    char line[256];
    unsigned long long kb;
    int found = 0;
    *rss = *peak = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) { *rss = kb * 1024; found++; }
        else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) { *peak = kb * 1024; found++; }
    }
    fclose(f);
    return found == 2;
}

uint64_t pt_ram_total(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}
